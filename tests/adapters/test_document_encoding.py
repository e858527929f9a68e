"""The ``encoding`` option of files: DeepL's ``/v2/document`` and LibreTranslate's ``/translate_file`` form field
``encoding`` (this server's extension), and an uploaded object's metadata ``encoding`` (the event path and DeepL's
documents kept in a bucket). A two-character Big5 file cannot be told from GB18030 by its bytes: without the option
it is refused naming the option, with it it is translated as told."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from handler.coldstart import Startup
from handler.config import RuntimeConfig
from handler.errors import InvalidRequestError
from handler.storage.files import META_ENCODING, read_upload
from handler.storage.folder_store import FolderStore
from handler.storage.object_store import ObjectRef
from tests.adapters.test_documents import local_server

pytestmark = pytest.mark.slow

THANKS = "謝謝\n".encode("big5")  # as well GB18030 as Big5 by its bytes


@pytest.fixture(scope="module")
def local_url(startup: Startup, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with local_server(startup, tmp_path_factory.mktemp("state")) as url:
        yield url


def test_translate_file_takes_the_encoding_field(local_url: str) -> None:
    def upload(content: bytes = THANKS, **data: str) -> requests.Response:
        files = {"file": ("thanks.txt", content)}
        return requests.post(local_url + "translate_file", files=files, data={"source": "zh", "target": "en", **data})

    def download(reply: requests.Response) -> bytes:
        return requests.get(reply.json()["translatedFileUrl"], timeout=30).content

    refused = upload()
    assert refused.status_code == 400 and "encoding" in refused.json()["error"]
    told = upload(encoding="big5")
    assert told.status_code == 200, told.text
    assert download(told) == download(upload("謝謝\n".encode()))  # as the same text in UTF-8
    unknown = upload(encoding="klingon")
    assert unknown.status_code == 400 and "unknown encoding 'klingon'" in unknown.json()["error"]


def _document(local_url: str, content: bytes = THANKS, **data: str) -> dict[str, str]:
    reply = requests.post(
        local_url + "v2/document", files={"file": ("thanks.txt", content)}, data={"target_lang": "EN-US", **data}
    )
    assert reply.status_code == 200, reply.text
    document: dict[str, str] = reply.json()
    return document


def _finished(local_url: str, document: dict[str, str]) -> dict[str, str]:
    for _ in range(300):
        status = requests.post(
            f"{local_url}v2/document/{document['document_id']}", data={"document_key": document["document_key"]}
        ).json()
        if status["status"] in ("done", "error"):
            return dict(status)
        time.sleep(0.1)
    raise AssertionError("the document did not finish")


def _result(local_url: str, document: dict[str, str]) -> bytes:
    assert _finished(local_url, document)["status"] == "done"
    result = requests.post(
        f"{local_url}v2/document/{document['document_id']}/result", data={"document_key": document["document_key"]}
    )
    assert result.status_code == 200
    return result.content


def test_v2_document_takes_the_encoding_field(local_url: str) -> None:
    told = _result(local_url, _document(local_url, encoding="big5"))
    assert told == _result(local_url, _document(local_url, "謝謝\n".encode()))  # as the same text in UTF-8
    untold = _finished(local_url, _document(local_url))
    assert untold["status"] == "error" and "encoding" in untold.get("error_message", "")
    unknown = requests.post(
        local_url + "v2/document", files={"file": ("t.txt", THANKS)}, data={"target_lang": "EN-US", "encoding": "x?"}
    )
    assert unknown.status_code == 400 and "unknown encoding" in unknown.text
    # a name holding a NUL character (schemathesis sent "Ë¿\x00J..." and got a 500: codecs.lookup's ValueError)
    nul = requests.post(
        local_url + "v2/document",
        files={"file": ("t.txt", THANKS)},
        data={"target_lang": "EN-US", "encoding": "a\x00b"},
    )
    assert nul.status_code == 400 and "unknown encoding 'a\\x00b'" in nul.json()["message"], nul.text


def test_an_uploaded_objects_metadata_names_its_encoding(tmp_path: Path) -> None:
    store = FolderStore(tmp_path)
    told, untold = ObjectRef("file", "in", "told.txt"), ObjectRef("file", "in", "untold.txt")
    store.write(told, THANKS, {META_ENCODING: "big5"}, "text/plain")
    store.write(untold, THANKS, {}, "text/plain")
    config = RuntimeConfig(output_bucket="out")
    upload = read_upload(store, told, config)
    assert (upload.file.text, upload.file.encoding) == ("謝謝\n", "Big5")
    with pytest.raises(InvalidRequestError, match="encoding option"):
        read_upload(store, untold, config)
