"""Documents belong to their API key, and a document that fails keeps no source.

* With keys configured (``TRANSLATE_API_KEYS``), another key is answered 404 for a document's status and its
  download, in the words of an unknown document, whatever ``document_key`` it sends: through the unmodified
  ``deepl`` client and with raw HTTP (``requests``) against the local server on loopback. The uploading key still
  works, and the record keeps the key's owner digest, never the key. Without keys any caller with the
  ``document_key`` reads the document, as before.
* A document whose translation fails has its source deleted when the error is recorded: in the local state folder
  (the local server's worker) and in the buckets (the upload event's path, a ``FolderStore`` as both buckets, and
  moto's S3 through the Lambda function: ``test_documents.test_a_corrupt_document_on_lambda_...``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deepl
import pytest
import requests

from handler.coldstart import Startup
from handler.storage.owners import owner_of
from tests.adapters.test_documents import CORRUPT_SRT, TEXT, expected, local_server, translator

pytestmark = pytest.mark.slow

KEY_A = "document-owner-key-a"
KEY_B = "document-owner-key-b"
UNKNOWN_ID = "0" * 32


@pytest.fixture(scope="module")
def keyed(startup: Startup, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    state = tmp_path_factory.mktemp("owners-state")
    with local_server(startup, state, api_keys=(KEY_A, KEY_B)) as url:
        yield url, state


def _raw(url: str, document_id: str, document_key: str, api_key: str, *, result: bool = False) -> requests.Response:
    return requests.post(
        f"{url}v2/document/{document_id}{'/result' if result else ''}",
        data={"document_key": document_key},
        headers={"Authorization": f"DeepL-Auth-Key {api_key}"},
        timeout=30,
    )


def _not_found(raised: pytest.ExceptionInfo[deepl.DeepLException], document_id: str) -> str:
    """The 404's message, the document id replaced, so that two 404s can be compared."""
    assert raised.value.http_status_code == 404, raised.value
    assert not isinstance(raised.value, deepl.AuthorizationException)
    return str(raised.value).replace(document_id, "<id>")


def test_another_keys_document_is_not_found_by_the_deepl_client(keyed: tuple[str, Path], startup: Startup) -> None:
    url, state = keyed
    # GIVEN key A's document, uploaded by the unmodified deepl client
    owner, other = translator(url, KEY_A), translator(url, KEY_B)
    handle = owner.translate_document_upload(TEXT.encode("utf-8"), target_lang="EN-US", filename="notes.txt")
    unknown = deepl.DocumentHandle(UNKNOWN_ID, handle.document_key)
    with pytest.raises(deepl.DeepLException) as never_uploaded:
        other.translate_document_get_status(unknown)
    # WHEN key B asks for its status with A's document_key THEN 404, in the words of a document never uploaded
    with pytest.raises(deepl.DeepLException) as status:
        other.translate_document_get_status(handle)
    assert _not_found(status, handle.document_id) == _not_found(never_uploaded, UNKNOWN_ID)
    assert "belongs to the API key that uploaded it" in str(status.value)
    # AND key A still follows it to the end; B's download of the finished document is 404 and takes nothing
    assert owner.translate_document_wait_until_done(handle).done
    # (the client's download streams the answer and reports a 404 without its message: the raw test reads it)
    with pytest.raises(deepl.DeepLException) as download:
        other.translate_document_download(handle)
    _not_found(download, handle.document_id)
    with pytest.raises(deepl.DeepLException) as wrong_document_key:  # not 403: B is not told the document exists
        other.translate_document_get_status(deepl.DocumentHandle(handle.document_id, "not-" + handle.document_key))
    assert _not_found(wrong_document_key, handle.document_id) == _not_found(never_uploaded, UNKNOWN_ID)
    record = (state / "state" / "_state" / "documents" / f"{handle.document_id}.json").read_text(encoding="utf-8")
    result = owner.translate_document_download(handle)
    assert result is not None and result.content == expected(startup, "notes.txt", TEXT.encode("utf-8"))
    # the record names its owner by the key's digest, never by the key
    assert json.loads(record)["owner"] == owner_of(KEY_A, keys_required=True) != owner_of(KEY_B, keys_required=True)
    assert KEY_A not in record and KEY_A not in json.dumps(json.loads(record), ensure_ascii=True)


def test_another_keys_document_is_not_found_over_raw_http(keyed: tuple[str, Path]) -> None:
    url, _ = keyed
    # GIVEN a document uploaded with key A by a plain multipart POST
    upload = requests.post(
        f"{url}v2/document",
        files={"file": ("notes.txt", TEXT.encode("utf-8"))},
        data={"target_lang": "EN-US"},
        headers={"Authorization": f"DeepL-Auth-Key {KEY_A}"},
        timeout=30,
    )
    assert upload.status_code == 200, upload.text
    document_id, document_key = upload.json()["document_id"], upload.json()["document_key"]
    unknown = _raw(url, UNKNOWN_ID, document_key, KEY_B).json()["message"].replace(UNKNOWN_ID, "<id>")
    # WHEN key B (header, or the legacy auth_key field) asks for it THEN 404 with the unknown document's message
    deadline = time.monotonic() + 60
    while (status := _raw(url, document_id, document_key, KEY_A)).json()["status"] != "done":
        assert status.status_code == 200 and time.monotonic() < deadline, status.text
        time.sleep(0.05)
    for result in (False, True):
        refused = _raw(url, document_id, document_key, KEY_B, result=result)
        assert refused.status_code == 404 and refused.json()["message"].replace(document_id, "<id>") == unknown
        legacy = requests.post(
            f"{url}v2/document/{document_id}{'/result' if result else ''}",
            data={"document_key": document_key, "auth_key": KEY_B},
            timeout=30,
        )
        assert legacy.status_code == 404 and legacy.json()["message"].replace(document_id, "<id>") == unknown
    # AND for key A a wrong document_key is still 403, and its own key downloads the translation, once
    assert _raw(url, document_id, "not-" + document_key, KEY_A, result=True).status_code == 403
    download = _raw(url, document_id, document_key, KEY_A, result=True)
    assert download.status_code == 200 and download.content
    assert _raw(url, document_id, document_key, KEY_A, result=True).status_code == 404


def test_without_keys_any_caller_with_the_document_key_reads_it(startup: Startup, tmp_path: Path) -> None:
    with local_server(startup, tmp_path) as url:
        handle = translator(url, "first-caller").translate_document_upload(
            TEXT.encode("utf-8"), target_lang="EN-US", filename="notes.txt"
        )
        other = translator(url, "another-caller")
        assert other.translate_document_wait_until_done(handle).done
        result = other.translate_document_download(handle)
        assert result is not None and result.content == expected(startup, "notes.txt", TEXT.encode("utf-8"))
    records = list((tmp_path / "state" / "_state" / "documents").glob("*.json"))
    assert [json.loads(path.read_text(encoding="utf-8"))["owner"] for path in records] == ["shared"]


# --- a failed document keeps no source ---------------------------------------------------------------------------
def test_a_failed_documents_source_leaves_the_local_state_folder(startup: Startup, tmp_path: Path) -> None:
    from handler.storage.documents import DocumentUpload, LocalDocuments
    from handler.storage.state import local_state

    config = startup.config.with_overrides(state_dir=tmp_path)
    release = threading.Event()

    def held_service() -> Any:  # the worker waits for the test; the upload's own check does not
        if threading.current_thread().name == "document-worker":
            release.wait(60)
        return startup.require_service()

    # GIVEN a corrupt subtitle uploaded to the local worker: its source is in the state folder
    documents = LocalDocuments(config, held_service, lambda: local_state(config))
    handle = documents.create(DocumentUpload("broken.srt", CORRUPT_SRT))
    source = tmp_path / "state" / "_state" / "documents" / handle.document_id / "source.srt"
    assert source.read_bytes() == CORRUPT_SRT
    # WHEN the worker finds the subtitle corrupt THEN the status is error and the source is gone from the folder
    release.set()
    deadline = time.monotonic() + 60
    while (status := documents.status(handle.document_id, handle.document_key)).status != "error":
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    assert "timing line" in str(status.error_message)
    assert not source.exists()
    stored = [path for path in tmp_path.rglob("*") if path.is_file() and ".meta" not in path.parts]
    assert all(CORRUPT_SRT not in path.read_bytes() for path in stored)


def test_a_failed_documents_source_leaves_the_document_bucket(startup: Startup, tmp_path: Path) -> None:
    from handler.storage.dispatch import handle_object_event
    from handler.storage.documents import BucketDocuments, DocumentUpload
    from handler.storage.folder_store import FolderStore
    from handler.storage.object_store import ObjectRef

    config = startup.config.with_overrides(output_bucket="out", document_bucket="in")
    store = FolderStore(tmp_path)
    documents = BucketDocuments(config, startup.require_service, lambda: store)
    handle = documents.create(DocumentUpload("broken.srt", CORRUPT_SRT))
    source = ObjectRef("file", "in", f"_documents/{handle.document_id}/document.srt")
    assert store.read(source) == CORRUPT_SRT
    # WHEN its upload event finds it corrupt THEN the error is recorded and the source deleted
    outcome = handle_object_event(store, source, startup.require_service(), config)
    assert outcome["status"] == "failed", outcome
    status = documents.status(handle.document_id, handle.document_key)
    assert status.status == "error" and "timing line" in str(status.error_message)
    assert store.list_keys("in", "_documents/") == [] and store.list_keys("out", "translated/") == []
    # AND a second delivery of the same event is ignored (the record says error), with nothing to read
    assert handle_object_event(store, source, startup.require_service(), config)["status"] == "ignored"


def test_a_refused_documents_source_is_deleted_with_its_error(startup: Startup, tmp_path: Path) -> None:
    from handler.storage.documents import BucketDocuments, DocumentUpload, translate_document_upload
    from handler.storage.folder_store import FolderStore
    from handler.storage.object_store import ObjectRef

    config = startup.config.with_overrides(output_bucket="out", document_bucket="in")
    store = FolderStore(tmp_path)
    documents = BucketDocuments(config, startup.require_service, lambda: store)
    handle = documents.create(DocumentUpload("notes.txt", TEXT.encode("utf-8")))
    source = ObjectRef("file", "in", f"_documents/{handle.document_id}/document.txt")

    def refused(**_: Any) -> dict[str, Any]:  # what handle_upload answers for a source it must not translate
        return {"source": str(source), "status": "refused", "reason": "the upload is refused"}

    translate_document_upload(store, source, handle.document_id, config, refused)
    status = documents.status(handle.document_id, handle.document_key)
    assert status.status == "error" and status.error_message == "the upload is refused"
    assert store.list_keys("in", "_documents/") == []
