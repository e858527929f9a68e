"""DeepL's glossary API (``/v2/glossaries``, ``glossary_id`` on ``/v2/translate``), driven by the official ``deepl``
client unmodified from PyPI against the local server on loopback, and its storage (``handler.storage.glossaries``)
in a local folder, in S3 (the moto server) and in Cloud Storage (the emulator), through the Lambda and Cloud
Functions adapters with an output bucket, and across a fresh server process (a cold start).

The model is the tiny random bundle (gibberish English): a glossary's effect shows as its English terms in the
output, where the protected-span machinery puts them whatever the model makes of the rest.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deepl
import pytest
from deepl.api_data import MultilingualGlossaryDictionaryEntries as Dictionary

from handler.adapters.local_server import make_server
from handler.api.router import HttpApi
from handler.coldstart import Startup
from handler.errors import GlossaryNotFoundError, InvalidRequestError, RequestTooLargeError
from handler.service import TranslationService
from handler.storage import glossaries as glossary_store
from handler.storage.folder_store import FolderStore
from handler.storage.glossaries import MAX_ENTRIES, MAX_ENTRIES_BYTES, GlossaryStore, parse_entries
from handler.storage.object_store import GcsStore, S3Store
from handler.storage.state import LOCAL_BUCKET, StateLocation
from handler.text.glossary import Glossary
from tests.adapters.conftest import http_event, reply_from_proxy_response, start_functions_framework
from tests.events import FUNCTION_URL

KEY_A = "glossary-key-a"
KEY_B = "glossary-key-b"
ENTRIES = {"人工智能": "artificial-intelligence-term", "机器学习": "machine-learning-term"}
TEXT = "人工智能和机器学习改变了世界。"


# --- servers ------------------------------------------------------------------------------------------------------
def serve(api: HttpApi) -> Iterator[str]:
    server = make_server(api, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def with_state(startup: Startup, state_dir: Path, **overrides: Any) -> Startup:
    """The same warm service under a configuration with its own state folder (and other overrides)."""
    return Startup(startup.config.with_overrides(state_dir=state_dir, **overrides), startup.service, None, 0.0)


@pytest.fixture
def base_url(startup: Startup, tmp_path: Path) -> Iterator[str]:
    """The local server (``python -m handler serve``'s) over a state folder of its own."""
    yield from serve(HttpApi(with_state(startup, tmp_path)))


@pytest.fixture
def keyed_url(startup: Startup, tmp_path: Path) -> Iterator[str]:
    """A local server whose configuration has two keys (TRANSLATE_API_KEYS)."""
    yield from serve(HttpApi(with_state(startup, tmp_path, api_keys=(KEY_A, KEY_B))))


def client(url: str, key: str = "any-key") -> deepl.Translator:
    return deepl.Translator(key, server_url=url, send_platform_info=False)


def raw(url: str, method: str, path: str, payload: dict[str, Any] | None = None, **headers: str) -> tuple[int, Any]:
    body = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url + path, body, {"Content-Type": "application/json", **headers}, method=method)
    try:
        with urllib.request.urlopen(request) as response:  # noqa: S310 - loopback
            return response.status, (response.headers, response.read())
    except urllib.error.HTTPError as error:
        return error.code, (error.headers, error.read())


# --- the deepl client's glossary methods --------------------------------------------------------------------------
def test_the_deepl_client_creates_reads_lists_and_deletes_glossaries(base_url: str) -> None:
    translator = client(base_url)
    pairs = translator.get_glossary_languages()
    assert [(pair.source_lang, pair.target_lang) for pair in pairs] == [("zh", "en")]
    # create (TSV, the client's create_glossary) and from CSV with quoting and DeepL's four-column export
    created = translator.create_glossary("Tech terms", source_lang="ZH", target_lang="EN-US", entries=ENTRIES)
    assert created.name == "Tech terms" and created.ready and created.entry_count == 2
    assert (created.source_lang, created.target_lang) == ("ZH", "EN")  # the client upper-cases DeepL's "zh", "en"
    uuid.UUID(created.glossary_id)
    csv_data = '"人工,智能","AI, quoted"\n机器,machine,zh,en\n\n"说""好""",said "ok"\n'
    from_csv = translator.create_glossary_from_csv("From CSV", source_lang="ZH", target_lang="EN", csv_data=csv_data)
    assert translator.get_glossary_entries(from_csv) == {
        "人工,智能": "AI, quoted",
        "机器": "machine",
        '说"好"': 'said "ok"',
    }
    # read back: one, its entries, the list (oldest first)
    fetched = translator.get_glossary(created.glossary_id)
    assert (fetched.glossary_id, fetched.name, fetched.entry_count) == (created.glossary_id, "Tech terms", 2)
    assert fetched.creation_time == created.creation_time and fetched.creation_time.tzinfo is not None
    assert translator.get_glossary_entries(created.glossary_id) == ENTRIES
    assert [g.glossary_id for g in translator.list_glossaries()] == [created.glossary_id, from_csv.glossary_id]
    # delete: gone from the list, a second delete and a read are DeepL's glossary-not-found
    translator.delete_glossary(created)
    assert [g.glossary_id for g in translator.list_glossaries()] == [from_csv.glossary_id]
    with pytest.raises(deepl.GlossaryNotFoundException) as raised:
        translator.get_glossary(created.glossary_id)
    assert raised.value.http_status_code == 404
    with pytest.raises(deepl.GlossaryNotFoundException):
        translator.delete_glossary(created.glossary_id)
    with pytest.raises(deepl.GlossaryNotFoundException):
        translator.get_glossary_entries(created.glossary_id)


def test_translate_text_applies_the_glossary(base_url: str) -> None:
    translator = client(base_url)
    created = translator.create_glossary("Tech", "ZH", "EN-GB", ENTRIES)
    plain = translator.translate_text(TEXT, source_lang="ZH", target_lang="EN-US").text
    assert "artificial-intelligence-term" not in plain
    for glossary in (created, created.glossary_id):
        english = translator.translate_text(TEXT, source_lang="ZH", target_lang="EN-US", glossary=glossary).text.lower()
        assert "artificial-intelligence-term" in english and "machine-learning-term" in english
        assert "人工智能" not in english
    with_glossary = translator.translate_text_with_glossary([TEXT, "人工智能"], created)
    assert all("artificial-intelligence-term" in result.text.lower() for result in with_glossary)


def test_the_stored_glossary_wins_over_the_deployments(startup: Startup, tmp_path: Path) -> None:
    # GIVEN a deployment glossary (TRANSLATE_GLOSSARY_FILE's terms) with a term the stored glossary also has
    assert startup.service is not None
    config = startup.config.with_overrides(state_dir=tmp_path)
    deployment = Glossary((("人工智能", "deployment-ai"), ("世界", "deployment-world")))
    service = TranslationService(startup.service.model, config, glossary=deployment)
    for url in serve(HttpApi(Startup(config, service, None, 0.0))):
        translator = client(url)
        created = translator.create_glossary("Tech", "ZH", "EN", ENTRIES)
        # THEN with the glossary its term wins and the deployment's other terms still apply; without, the deployment's
        english = translator.translate_text(TEXT, source_lang="ZH", target_lang="EN-US", glossary=created).text.lower()
        assert "artificial-intelligence-term" in english and "deployment-world" in english
        assert "deployment-ai" not in english
        plain = translator.translate_text(TEXT, source_lang="ZH", target_lang="EN-US").text.lower()
        assert "deployment-ai" in plain and "artificial-intelligence-term" not in plain


def test_an_unknown_glossary_is_404_and_a_glossary_needs_source_lang(base_url: str) -> None:
    translator = client(base_url)
    unknown = str(uuid.uuid4())
    with pytest.raises(deepl.DeepLException, match="Glossary not found") as raised:
        translator.translate_text(TEXT, source_lang="ZH", target_lang="EN-US", glossary=unknown)
    assert raised.value.http_status_code == 404
    with pytest.raises(deepl.GlossaryNotFoundException):
        translator.get_glossary(unknown)
    status, (_, body) = raw(base_url, "POST", "/v2/translate", {"text": ["你好"], "target_lang": "EN-US",
                                                                 "glossary_id": unknown})  # fmt: skip
    assert status == 400 and "requires the source_lang" in json.loads(body)["message"]
    status, (_, body) = raw(base_url, "GET", "/v2/glossaries/not-an-id")
    assert status == 404 and "names no glossary" in json.loads(body)["message"]
    with pytest.raises(deepl.GlossaryNotFoundException):
        translator.delete_glossary("not-an-id")
    bad_id = {"text": ["你好"], "source_lang": "ZH", "target_lang": "EN-US", "glossary_id": "x"}
    status, (_, body) = raw(base_url, "POST", "/v2/translate", bad_id)
    assert status == 400 and "not a glossary ID" in json.loads(body)["message"]


def test_glossaries_belong_to_the_key_that_created_them(keyed_url: str) -> None:
    owner, other = client(keyed_url, KEY_A), client(keyed_url, KEY_B)
    created = owner.create_glossary("Mine", "ZH", "EN-US", ENTRIES)
    assert [g.glossary_id for g in owner.list_glossaries()] == [created.glossary_id]
    assert other.list_glossaries() == []
    with pytest.raises(deepl.GlossaryNotFoundException):
        other.get_glossary(created.glossary_id)
    with pytest.raises(deepl.GlossaryNotFoundException):
        other.get_glossary_entries(created.glossary_id)
    with pytest.raises(deepl.GlossaryNotFoundException):
        other.delete_glossary(created.glossary_id)
    with pytest.raises(deepl.DeepLException, match="Glossary not found") as raised:
        other.translate_text(TEXT, source_lang="ZH", target_lang="EN-US", glossary=created.glossary_id)
    assert raised.value.http_status_code == 404
    with pytest.raises(deepl.AuthorizationException):
        client(keyed_url, "wrong-key").list_glossaries()
    assert owner.get_glossary_entries(created) == ENTRIES  # untouched by the other key's attempts


# --- the deepl client's multilingual glossary methods (v3) ---------------------------------------------------------
# deepl-python 1.32, deepl/deepl_client.py: create_multilingual_glossary POSTs v3/glossaries with JSON {name,
# dictionaries: [{source_lang, target_lang, entries (TSV), entries_format}]}; get_/list_/delete_multilingual_glossary
# read v3/glossaries[/{id}]; get_multilingual_glossary_entries GETs v3/glossaries/{id}/entries?source_lang=&target_lang=
# and reads {"dictionaries": [{..., "entries": TSV}]} (deepl/api_data.py: MultilingualGlossaryInfo.from_json and
# MultilingualGlossaryDictionaryEntriesResponse.from_json).
def deepl_client(url: str, key: str = "any-key") -> deepl.DeepLClient:
    return deepl.DeepLClient(key, server_url=url, send_platform_info=False)


def test_the_deepl_client_creates_reads_lists_and_deletes_multilingual_glossaries(base_url: str) -> None:
    translator = deepl_client(base_url)
    dictionary = Dictionary("ZH", "EN-US", ENTRIES)
    created = translator.create_multilingual_glossary("Tech v3", [dictionary])
    uuid.UUID(created.glossary_id)
    assert created.name == "Tech v3" and created.creation_time.tzinfo is not None
    assert [(d.source_lang, d.target_lang, d.entry_count) for d in created.dictionaries] == [("ZH", "EN", 2)]
    fetched = translator.get_multilingual_glossary(created.glossary_id)
    assert (fetched.glossary_id, fetched.name, fetched.creation_time) == (
        created.glossary_id, created.name, created.creation_time,
    )  # fmt: skip
    answer = translator.get_multilingual_glossary_entries(created, "ZH", "EN-GB")
    assert [(d.source_lang, d.target_lang) for d in answer.dictionaries] == [("zh", "en")]
    assert deepl.util.convert_tsv_to_dict(answer.dictionaries[0].entries) == ENTRIES
    # one store under both versions: a v2 glossary is listed by v3 and a v3 glossary by v2, oldest first
    from_csv = translator.create_multilingual_glossary_from_csv("From CSV", "ZH", "EN", "机器,machine\n")
    v2 = translator.create_glossary("Made by v2", "ZH", "EN", {"世界": "world-term"})
    listed = translator.list_multilingual_glossaries()
    assert [g.glossary_id for g in listed] == [created.glossary_id, from_csv.glossary_id, v2.glossary_id]
    assert translator.get_glossary(created.glossary_id).entry_count == 2
    # translating with a v3 glossary (its info or its ID), as with a v2 one
    for glossary in (created, created.glossary_id):
        english = translator.translate_text(TEXT, source_lang="ZH", target_lang="EN-US", glossary=glossary).text
        assert "artificial-intelligence-term" in english.lower() and "machine-learning-term" in english.lower()
    # delete: gone; a second delete, a read and the entries are DeepL's glossary-not-found (404)
    translator.delete_multilingual_glossary(created)
    assert [g.glossary_id for g in translator.list_multilingual_glossaries()] == [from_csv.glossary_id, v2.glossary_id]
    with pytest.raises(deepl.GlossaryNotFoundException) as raised:
        translator.get_multilingual_glossary(created.glossary_id)
    assert raised.value.http_status_code == 404
    with pytest.raises(deepl.GlossaryNotFoundException):
        translator.delete_multilingual_glossary(created.glossary_id)
    with pytest.raises(deepl.GlossaryNotFoundException):
        translator.get_multilingual_glossary_entries(created.glossary_id, "ZH", "EN")


def test_a_multilingual_glossary_holds_one_zh_to_en_dictionary_here(base_url: str) -> None:
    translator = deepl_client(base_url)
    two = [Dictionary("ZH", "EN", ENTRIES)] * 2
    with pytest.raises(deepl.DeepLException, match="exactly one dictionary") as raised:
        translator.create_multilingual_glossary("Two", two)
    assert raised.value.http_status_code == 400
    with pytest.raises(deepl.DeepLException, match="Unsupported glossary source and target language pair"):
        translator.create_multilingual_glossary("EN-DE", [Dictionary("EN", "DE", {"Hi": "Hallo"})])
    with pytest.raises(deepl.DeepLException, match="has no Chinese character"):
        translator.create_multilingual_glossary("No Chinese", [Dictionary("ZH", "EN", {"a": "b"})])
    created = translator.create_multilingual_glossary("One", [Dictionary("ZH", "EN", ENTRIES)])
    with pytest.raises(deepl.GlossaryNotFoundException, match="has one dictionary, zh → en"):
        translator.get_multilingual_glossary_entries(created, "EN", "DE")
    status, (_, body) = raw(base_url, "GET", f"/v3/glossaries/{created.glossary_id}/entries")
    assert status == 400 and "source_lang and target_lang" in json.loads(body)["message"]
    status, (_, body) = raw(base_url, "POST", "/v3/glossaries", {"name": "x", "dictionaries": "人工\tAI"})
    assert status == 400 and "dictionaries" in json.loads(body)["message"]
    status, (_, body) = raw(base_url, "GET", "/v3/glossaries/not-an-id")
    assert status == 404 and "/v3/glossaries/{glossary_id}" in json.loads(body)["message"]
    # v3's edits are not answered: a glossary here is immutable (docs/compatibility.md)
    status, (headers, _) = raw(base_url, "PATCH", f"/v3/glossaries/{created.glossary_id}", {"name": "renamed"})
    assert status == 405 and headers["Allow"] == "GET, DELETE"
    with pytest.raises(deepl.GlossaryNotFoundException, match="immutable"):
        translator.delete_multilingual_glossary_dictionary(created, source_lang="ZH", target_lang="EN")
    with pytest.raises(deepl.GlossaryNotFoundException, match="immutable"):
        translator.replace_multilingual_glossary_dictionary(created, Dictionary("ZH", "EN", {"人工": "AI"}))
    assert translator.get_multilingual_glossary(created.glossary_id).name == "One"


def test_multilingual_glossaries_belong_to_the_key_that_created_them(keyed_url: str) -> None:
    owner, other = deepl_client(keyed_url, KEY_A), deepl_client(keyed_url, KEY_B)
    created = owner.create_multilingual_glossary("Mine", [Dictionary("ZH", "EN", ENTRIES)])
    assert other.list_multilingual_glossaries() == []
    with pytest.raises(deepl.GlossaryNotFoundException):
        other.get_multilingual_glossary(created.glossary_id)
    with pytest.raises(deepl.GlossaryNotFoundException):
        other.delete_multilingual_glossary(created.glossary_id)
    assert [g.glossary_id for g in owner.list_multilingual_glossaries()] == [created.glossary_id]


# --- validation -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("entries", "entries_format", "problem"),
    [
        ("人工\t\n", "tsv", "the target term of entry 1 is empty"),
        ("\tAI", "tsv", "the source term of entry 1 is empty"),
        ("人工 AI", "tsv", "entry 1 has no tab"),
        ("人工\tAI\tmore", "tsv", "entry 1 has more than one tab"),
        ("人工\tAI\n\n人工\tagain", "tsv", "entry 3 duplicates the source term '人工' of entry 1"),
        (" 人工 \tAI\n人工\tagain", "tsv", "entry 2 duplicates the source term '人工' of entry 1"),
        ("hello\tworld", "tsv", "has no Chinese character"),
        ("人工\tA\x07I", "tsv", "holds the control character U+0007"),
        ("人工\tA\u2028I", "tsv", "holds the control character U+2028"),
        ("人" * 101 + "\tAI", "tsv", "the source term of entry 1 has 101 characters; the limit is 100"),
        ("人工\t" + "A" * 201, "tsv", "the target term of entry 1 has 201 characters; the limit is 200"),
        ("", "tsv", "the glossary has no entry"),
        ("\n \n", "tsv", "the glossary has no entry"),
        ("人工,AI,zh", "csv", "CSV entry 1 has 3 fields"),
        ("人工,AI,zh,de", "csv", "CSV entry 1 is for zh → de"),
        ('"人工,AI', "csv", "the CSV is malformed"),
        ("人工\tAI", "xlsx", "Value for 'entries_format' not supported: 'xlsx'; use tsv or csv"),
    ],
)
def test_bad_entries_are_refused_naming_the_entry(
    base_url: str, entries: str, entries_format: str, problem: str
) -> None:
    payload = {
        "name": "bad",
        "source_lang": "zh",
        "target_lang": "en",
        "entries": entries,
        "entries_format": entries_format,
    }
    status, (_, body) = raw(base_url, "POST", "/v2/glossaries", payload)
    assert status == 400 and problem in json.loads(body)["message"], body
    assert client(base_url).list_glossaries() == []  # nothing stored


@pytest.mark.parametrize(
    ("source", "target"), [("DE", "EN"), ("ZH", "DE"), ("EN", "ZH"), ("ZH", "JA"), ("", "EN"), ("ZH", "")]
)
def test_other_language_pairs_are_refused(base_url: str, source: str, target: str) -> None:
    payload = {"name": "x", "source_lang": source, "target_lang": target, "entries": "人工\tAI"}
    status, (_, body) = raw(base_url, "POST", "/v2/glossaries", payload)
    assert status == 400
    assert "Unsupported glossary source and target language pair" in json.loads(body)["message"]
    assert "Chinese → English" in json.loads(body)["message"]
    with pytest.raises(deepl.DeepLException, match="Unsupported glossary") as raised:
        client(base_url).create_glossary("x", source or "DE", target or "FR", {"人工": "AI"})
    assert raised.value.http_status_code == 400


def test_the_name_and_the_entries_are_required(base_url: str) -> None:
    for payload, problem in (
        ({"source_lang": "zh", "target_lang": "en", "entries": "人工\tAI"}, "name"),
        ({"name": " ", "source_lang": "zh", "target_lang": "en", "entries": "人工\tAI"}, "name"),
        ({"name": "n" * 1025, "source_lang": "zh", "target_lang": "en", "entries": "人工\tAI"}, "1024 UTF-8 bytes"),
        ({"name": "x", "source_lang": "zh", "target_lang": "en"}, "entries"),
        ({"name": "x", "source_lang": "zh", "target_lang": "en", "entries": ["人工\tAI"]}, "entries"),
        ({"name": "\ud800", "source_lang": "zh", "target_lang": "en", "entries": "人工\tAI"}, "surrogate"),
        ({"name": "x", "source_lang": 3, "target_lang": "en", "entries": "人工\tAI"}, "'source_lang' must be a string"),
    ):
        status, (_, body) = raw(base_url, "POST", "/v2/glossaries", payload)
        assert status == 400 and problem in json.loads(body)["message"], (payload, body)


def test_a_form_body_creates_a_glossary_too(base_url: str) -> None:
    from urllib.parse import urlencode

    form = urlencode({"name": "Form", "source_lang": "zh", "target_lang": "en", "entries": "人工\tAI"}).encode()
    request = urllib.request.Request(
        base_url + "/v2/glossaries", form, {"Content-Type": "application/x-www-form-urlencoded"}
    )
    with urllib.request.urlopen(request) as response:  # noqa: S310 - loopback
        assert response.status == 201
        created = json.loads(response.read())
    assert created["entry_count"] == 1 and created["source_lang"] == "zh" and created["target_lang"] == "en"
    assert set(created) == {
        "glossary_id",
        "name",
        "ready",
        "source_lang",
        "target_lang",
        "creation_time",
        "entry_count",
    }


def test_limits_are_413(base_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # too many entries, too many bytes (each under the body limit), too many glossaries for one key
    many = "\n".join(f"词{index}\tterm {index}" for index in range(MAX_ENTRIES + 1))
    status, (_, body) = raw(base_url, "POST", "/v2/glossaries", {"name": "x", "source_lang": "zh", "target_lang": "en",
                                                                 "entries": many})  # fmt: skip
    assert status == 413 and f"more than {MAX_ENTRIES:,} entries" in json.loads(body)["message"]
    large = "人工\t" + "A" * (MAX_ENTRIES_BYTES + 1)
    status, (_, body) = raw(base_url, "POST", "/v2/glossaries", {"name": "x", "source_lang": "zh", "target_lang": "en",
                                                                 "entries": large})  # fmt: skip
    assert status == 413 and f"limit is {MAX_ENTRIES_BYTES:,} bytes" in json.loads(body)["message"]
    monkeypatch.setattr(glossary_store, "MAX_GLOSSARIES", 2)
    translator = client(base_url)
    translator.create_glossary("1", "ZH", "EN", {"人工": "AI"})
    translator.create_glossary("2", "ZH", "EN", {"人工": "AI"})
    with pytest.raises(deepl.DeepLException, match="holds 2 glossaries, the limit is 2") as raised:
        translator.create_glossary("3", "ZH", "EN", {"人工": "AI"})
    assert raised.value.http_status_code == 413 and len(translator.list_glossaries()) == 2


def test_entries_are_tab_separated_values_and_accept_is_honoured(base_url: str) -> None:
    created = client(base_url).create_glossary("T", "ZH", "EN", ENTRIES)
    path = f"/v2/glossaries/{created.glossary_id}/entries"
    accepted = (
        "text/tab-separated-values",
        "*/*",
        "text/*",
        "application/json, text/tab-separated-values;q=0.5",
        "text/tab-separated-values;q=.",
    )
    for accept in accepted:
        status, (headers, body) = raw(base_url, "GET", path, Accept=accept)
        assert status == 200 and headers["Content-Type"] == "text/tab-separated-values; charset=utf-8"
        assert body.decode() == "人工智能\tartificial-intelligence-term\n机器学习\tmachine-learning-term"
    for accept in ("application/json", "text/tab-separated-values;q=0"):
        status, (_, body) = raw(base_url, "GET", path, Accept=accept)
        assert status == 415 and "No supported media type" in json.loads(body)["message"]
    status, (headers, body) = raw(base_url, "DELETE", f"/v2/glossaries/{created.glossary_id}")
    assert status == 204 and body == b""
    status, _ = raw(base_url, "PUT", f"/v2/glossaries/{created.glossary_id}")
    assert status == 405


# --- storage: a fresh process, S3 and Cloud Storage ---------------------------------------------------------------
@pytest.mark.slow
def test_glossaries_survive_a_cold_start(adapter_env: dict[str, str], tmp_path: Path) -> None:
    # GIVEN functions-framework (Cloud Functions' server, no output bucket: the state folder) creating a glossary
    env = {**adapter_env, "TRANSLATE_STATE_DIR": str(tmp_path / "state")}
    first, url = start_functions_framework("translate_http", env, tmp_path)
    try:
        created = client(url).create_glossary("Survivor", "ZH", "EN", ENTRIES)
    finally:
        first.stop()
    # WHEN a fresh process starts on the same folder THEN the glossary is there and applies
    second, url = start_functions_framework("translate_http", env, tmp_path)
    try:
        translator = client(url)
        assert translator.get_glossary(created.glossary_id).name == "Survivor"
        assert translator.get_glossary_entries(created) == ENTRIES
        english = translator.translate_text(TEXT, source_lang="ZH", target_lang="EN-US", glossary=created).text
        assert "artificial-intelligence-term" in english.lower()
    finally:
        second.stop()


@pytest.fixture(params=["folder", "s3", "gcs"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> StateLocation:
    bucket = f"glossaries-{uuid.uuid4().hex[:12]}"
    if request.param == "folder":
        return StateLocation(FolderStore(tmp_path / "state"), bucket, "_state/")
    if request.param == "s3":
        s3 = request.getfixturevalue("s3_client")
        s3.create_bucket(Bucket=bucket)
        return StateLocation(S3Store(s3), bucket, "_state/")
    gcs = request.getfixturevalue("gcs_client")
    gcs.create_bucket(bucket)
    return StateLocation(GcsStore(gcs), bucket, "_state/")


def test_the_store_round_trips_in_every_object_store(location: StateLocation) -> None:
    store = GlossaryStore(location, keys_required=True)
    info = store.create(name="名字 ✓", source_lang="ZH", target_lang="EN-US", entries="人工智能\tAI\n机器\tmachine",
                        key=KEY_A)  # fmt: skip
    # one JSON object under the prefix, in the key's folder
    keys = location.keys("glossaries/")
    assert keys == [f"glossaries/{store.owner_of(KEY_A)}/{info.glossary_id}.json"]
    assert KEY_A not in keys[0]  # the key itself is never stored
    # a new store on the same location (another instance, a cold start) reads it back
    again = GlossaryStore(location, keys_required=True)
    assert again.glossary_for(info.glossary_id, KEY_A) == Glossary((("人工智能", "AI"), ("机器", "machine")))
    assert again.get(info.glossary_id, KEY_A).info == info and info.name == "名字 ✓"
    assert [found.glossary_id for found in again.list_glossaries(KEY_A)] == [info.glossary_id]
    assert again.list_glossaries(KEY_B) == []
    with pytest.raises(GlossaryNotFoundError):
        again.glossary_for(info.glossary_id, KEY_B)
    again.delete(info.glossary_id, KEY_A)
    assert location.keys("glossaries/") == []
    with pytest.raises(GlossaryNotFoundError):
        store.glossary_for(info.glossary_id, KEY_A)


def test_without_keys_every_caller_shares_the_glossaries(tmp_path: Path) -> None:
    store = GlossaryStore(StateLocation(FolderStore(tmp_path), "state", "_state/"), keys_required=False)
    info = store.create(name="shared", source_lang="zh", target_lang="en", entries="人工\tAI", key="one")
    assert store.glossary_for(info.glossary_id, "two") == store.glossary_for(info.glossary_id, None)
    assert (tmp_path / "state" / "_state" / "glossaries" / "shared" / f"{info.glossary_id}.json").is_file()


def test_the_lambda_adapter_keeps_glossaries_in_the_output_bucket(startup: Startup, s3_client: Any) -> None:
    from handler.adapters.aws_lambda import LambdaAdapter

    bucket = f"out-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=bucket)
    deployed = Startup(startup.config.with_overrides(output_bucket=bucket), startup.service, None, 0.0)

    def call(adapter: LambdaAdapter, method: str, path: str, payload: dict[str, Any] | None = None) -> Any:
        body = json.dumps(payload).encode() if payload is not None else b""
        event = http_event(FUNCTION_URL, method, path, {"Content-Type": "application/json"}, body)
        return reply_from_proxy_response(adapter.handle(event, None))

    create = {
        "name": "S3",
        "source_lang": "zh",
        "target_lang": "en",
        "entries": "人工智能\tartificial-intelligence-term",
    }
    reply = call(LambdaAdapter(deployed, store=S3Store(s3_client)), "POST", "/v2/glossaries", create)
    assert reply.status == 201, reply.body
    glossary_id = reply.json()["glossary_id"]
    listed = s3_client.list_objects_v2(Bucket=bucket, Prefix="_state/glossaries/")
    assert [item["Key"] for item in listed["Contents"]] == [f"_state/glossaries/shared/{glossary_id}.json"]
    # a fresh adapter (another instance, after a cold start) finds it in the bucket
    fresh = LambdaAdapter(deployed, store=S3Store(s3_client))
    assert call(fresh, "GET", f"/v2/glossaries/{glossary_id}").json()["name"] == "S3"
    request = {"text": ["人工智能"], "source_lang": "ZH", "target_lang": "EN-US", "glossary_id": glossary_id}
    translated = call(fresh, "POST", "/v2/translate", request)
    assert "artificial-intelligence-term" in translated.json()["translations"][0]["text"].lower()
    assert call(fresh, "DELETE", f"/v2/glossaries/{glossary_id}").status == 204
    assert "Contents" not in s3_client.list_objects_v2(Bucket=bucket, Prefix="_state/glossaries/")


def test_the_cloud_functions_adapter_keeps_glossaries_in_the_output_bucket(startup: Startup, gcs_client: Any) -> None:
    import flask

    from handler.adapters.gcp import GcpAdapter

    bucket = f"out-{uuid.uuid4().hex[:12]}"
    gcs_client.create_bucket(bucket)
    deployed = Startup(startup.config.with_overrides(output_bucket=bucket), startup.service, None, 0.0)
    app = flask.Flask("glossary-test")

    def call(adapter: GcpAdapter, method: str, path: str, payload: dict[str, Any] | None = None) -> Any:
        with app.test_request_context(path, method=method, json=payload):
            response = adapter.handle_http(flask.request)
        return response.status_code, response.get_data()

    create = {
        "name": "GCS",
        "source_lang": "zh",
        "target_lang": "en",
        "entries": "人工智能\tartificial-intelligence-term",
    }
    status, body = call(GcpAdapter(deployed, store=GcsStore(gcs_client)), "POST", "/v2/glossaries", create)
    assert status == 201, body
    glossary_id = json.loads(body)["glossary_id"]
    names = [blob.name for blob in gcs_client.list_blobs(bucket, prefix="_state/glossaries/")]
    assert names == [f"_state/glossaries/shared/{glossary_id}.json"]
    fresh = GcpAdapter(deployed, store=GcsStore(gcs_client))
    status, body = call(fresh, "GET", f"/v2/glossaries/{glossary_id}/entries")
    assert status == 200 and body.decode() == "人工智能\tartificial-intelligence-term"
    assert call(fresh, "DELETE", f"/v2/glossaries/{glossary_id}")[0] == 204
    assert list(gcs_client.list_blobs(bucket, prefix="_state/glossaries/")) == []


def test_the_default_state_is_the_local_folder(startup: Startup, tmp_path: Path) -> None:
    # GIVEN HttpApi without a state (the local server, the CLI's serve) WHEN a glossary is created
    api = HttpApi(with_state(startup, tmp_path / "here"))
    info = api.glossaries.create(name="n", source_lang="zh", target_lang="en", entries="人工\tAI", key=None)
    # THEN it lies in TRANSLATE_STATE_DIR, under TRANSLATE_STATE_PREFIX
    state = api.glossaries.state
    assert isinstance(state.store, FolderStore) and state.store.root == tmp_path / "here"
    assert state.bucket == LOCAL_BUCKET and state.prefix == api.config.state_prefix
    expected = tmp_path / "here" / LOCAL_BUCKET / api.config.state_prefix / "glossaries" / "shared"
    assert (expected / f"{info.glossary_id}.json").is_file()


# --- the entry parser ---------------------------------------------------------------------------------------------
def test_the_entry_rules_in_the_parser() -> None:
    # CRLF and CR lines, a byte-order mark, surrounding white space and blank lines
    assert parse_entries("\ufeff 人工 \t AI \r\n\r\n机器\tmachine\r学习\tlearning", "tsv").as_dict() == {
        "人工": "AI",
        "机器": "machine",
        "学习": "learning",
    }
    # a quoted CSV field may hold a line break? No: terms are one line, and the control-character rule says so
    with pytest.raises(InvalidRequestError, match="control character U\\+000A"):
        parse_entries('"人\n工",AI', "csv")
    with pytest.raises(InvalidRequestError, match="entries"):
        parse_entries(None, "tsv")
    with pytest.raises(InvalidRequestError, match="unpaired UTF-16 surrogate"):
        parse_entries("人工\tA\ud800", "tsv")
    with pytest.raises(RequestTooLargeError):
        parse_entries("人工\t" + "好" * MAX_ENTRIES_BYTES, "tsv")


def test_the_access_line_names_the_route_not_the_glossary_id(
    startup: Startup, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from handler.api.messages import HttpRequest

    api = HttpApi(with_state(startup, tmp_path))
    glossary_id = str(uuid.uuid4())
    with caplog.at_level(logging.INFO, logger="handler.access"):
        for path in (f"/v2/glossaries/{glossary_id}", f"/v2/glossaries/{glossary_id}/entries"):
            assert api.handle(HttpRequest.create("GET", path)).status == 404
    routes = [record.route for record in caplog.records if record.name == "handler.access"]  # type: ignore[attr-defined]
    assert routes == ["/v2/glossaries/{glossary_id}", "/v2/glossaries/{glossary_id}/entries"]
