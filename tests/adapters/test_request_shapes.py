"""Each request shape is declared once (``handler.api.shapes``) and both the server's reading and the OpenAPI
document come from it, so they agree: every mismatch schemathesis found between ``GET /openapi.json`` and the server
is a request the document now calls invalid and the server refuses (400 in the API's words), with a valid neighbour
both accept; a field added to a shape is read and described with no other edit; a glossary's TSV grammar as the
document states it holds every entries text the glossary store takes. Requests go over HTTP to the local server on
loopback, the document is the one it serves."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from handler.errors import InvalidRequestError, RequestTooLargeError
from handler.storage.glossaries import TSV_ENTRIES_PATTERN, parse_entries
from tests.adapters.conftest import MAX_TEXTS, RealHttpClient
from tests.ship.dockerfile_model import REPO_ROOT

JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
PRIVATE_USE = "\U000f0000"  # the first of the characters handler.text.markup cuts markup with


@pytest.fixture(scope="module")
def client(local_server_url: str) -> RealHttpClient:
    return RealHttpClient("local_server", local_server_url)


@pytest.fixture(scope="module")
def document(client: RealHttpClient) -> dict[str, Any]:
    reply = client.call("GET", "/openapi.json")
    assert reply.status == 200
    return dict(json.loads(reply.body))


def valid(document: dict[str, Any], schema: str, body: dict[str, Any]) -> bool:
    """Whether ``body`` is valid for the document's component ``schema``."""
    root = {"$ref": f"#/components/schemas/{schema}", "components": document["components"]}
    return bool(Draft202012Validator(root).is_valid(body))


def multipart(fields: dict[str, str], filename: str, data: bytes) -> tuple[dict[str, str], bytes]:
    boundary = "shape-boundary"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    disposition = f'Content-Disposition: form-data; name="file"; filename="{filename}"\r\n'
    parts.append(f"--{boundary}\r\n{disposition}Content-Type: application/octet-stream\r\n\r\n".encode() + data)
    body = b"".join(parts) + f"\r\n--{boundary}--\r\n".encode()
    return {"Content-Type": f"multipart/form-data; boundary={boundary}"}, body


def refusal(client: RealHttpClient, path: str, headers: dict[str, str], body: bytes) -> tuple[int, str]:
    reply = client.call("POST", path, headers, body)
    answer = json.loads(reply.body)
    return reply.status, str(answer.get("message") or answer.get("error"))


# (the route, the schema its body is described by, a body schemathesis found the server and the document disagree
# on, the words of the server's refusal, a valid neighbour of that body)
TEXT = {"text": "你好", "target_lang": "EN"}
MISMATCHES = [
    ("/v2/translate", "DeepLTranslateRequest", {**TEXT, "text": ["你好"] * (MAX_TEXTS + 1)},
     f"Parameter 'text' holds {MAX_TEXTS + 1} texts", {**TEXT, "text": ["你好"] * MAX_TEXTS}),
    ("/v2/translate", "DeepLTranslateRequest", {**TEXT, "tag_handling": ""},
     "Value for 'tag_handling' not supported: an empty value", {**TEXT, "tag_handling": "html"}),
    ("/v2/translate", "DeepLTranslateRequest", {**TEXT, "model_type": ""},
     "Value for 'model_type' not supported: ''", {**TEXT, "model_type": "quality_optimized"}),
    ("/v2/translate", "DeepLTranslateRequest", {**TEXT, "formality": ""},
     "Value for 'formality' not supported: ''", {**TEXT, "formality": "prefer_less"}),
    ("/v2/translate", "DeepLTranslateRequest", {**TEXT, "text": f"a{PRIVATE_USE}b", "tag_handling": "xml"},
     "holds private-use characters", {**TEXT, "text": f"a{PRIVATE_USE}b"}),
    ("/v2/translate", "DeepLTranslateRequest", {**TEXT, "context": [[-6.267698253359473e92]]},
     "holds the number -6.27e+92", {**TEXT, "context": [[3.024162373153549e16, -2.0041231321274905e-106]]}),
    ("/v2/usage", "DeepLKeyRequest", {"other": [[-(10**37)]]},
     "has 38 digits; no number of these APIs has more than 30", {"other": [[-(10**29)]]}),
    ("/v2/glossaries", "DeepLGlossaryCreate",
     {"name": "g", "source_lang": "zh", "target_lang": "en", "entries": "0"},
     "entry 1 has no tab", {"name": "g", "source_lang": "zh", "target_lang": "en", "entries": "人工\tAI"}),
    ("/v3/glossaries", "DeepLMultilingualGlossaryCreate",
     {"name": "g", "dictionaries": [{"source_lang": "zh", "target_lang": "en", "entries": "0"}]},
     "entry 1 has no tab",
     {"name": "g", "dictionaries": [{"source_lang": "zh", "target_lang": "en", "entries": "人工\tAI"}]}),
    ("/translate", "LibreTranslateRequest",
     {"q": f"<b>{PRIVATE_USE}</b>", "source": "zh", "target": "en", "format": "html"},
     "holds private-use characters", {"q": "<b>你好</b>", "source": "zh", "target": "en", "format": "html"}),
]  # fmt: skip


@pytest.mark.parametrize(("path", "schema", "body", "words", "neighbour"), MISMATCHES)
def test_what_the_document_calls_invalid_the_server_refuses_and_its_valid_neighbour_both_accept(
    client: RealHttpClient,
    document: dict[str, Any],
    path: str,
    schema: str,
    body: dict[str, Any],
    words: str,
    neighbour: dict[str, Any],
) -> None:
    # GIVEN a body schemathesis found answered against the document WHEN it is sent THEN both call it invalid
    assert not valid(document, schema, body)
    status, message = refusal(client, path, JSON, json.dumps(body).encode())
    assert status == 400 and words in message, message
    # AND the valid body next to it is valid for both
    assert valid(document, schema, neighbour)
    reply = client.call("POST", path, JSON, json.dumps(neighbour).encode())
    assert reply.status in (200, 201), reply.body


def test_an_empty_form_value_of_an_enumeration_is_refused_as_the_form_schema_says(
    client: RealHttpClient, document: dict[str, Any]
) -> None:
    # schemathesis sent tag_handling= and model_type= in a form and got 200
    for name in ("tag_handling", "model_type"):
        fields = {"text": "你好", "target_lang": "EN", name: ""}
        assert not valid(document, "DeepLTranslateRequestForm", fields)
        status, message = refusal(client, "/v2/translate", FORM, urlencode(fields).encode())
        assert (status, message.split(":")[0]) == (400, f"Value for '{name}' not supported")


def test_an_empty_document_is_refused_as_the_document_says(client: RealHttpClient, document: dict[str, Any]) -> None:
    described = document["components"]["schemas"]["DeepLDocumentUploadForm"]["properties"]["file"]
    assert described["minLength"] == 1
    headers, body = multipart({"target_lang": "EN"}, "empty.txt", b"")
    assert refusal(client, "/v2/document", headers, body) == (
        400,
        "'empty.txt' is empty; upload a document with text to translate",
    )


@pytest.mark.parametrize(("path", "fields"), [("/v2/document", {"target_lang": "EN"}),
                                              ("/translate_file", {"source": "zh", "target": "en"})])  # fmt: skip
def test_a_file_name_without_a_suffix_is_refused_as_its_part_s_described_name_says(
    client: RealHttpClient, document: dict[str, Any], path: str, fields: dict[str, str]
) -> None:
    # schemathesis named its generated file part "file", which the document did not refuse
    content = document["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]
    disposition = content["encoding"]["file"]["headers"]["Content-Disposition"]
    pattern = disposition["schema"]["pattern"]
    assert not re.search(pattern, 'form-data; name="file"; filename="file"')
    assert re.search(pattern, disposition["example"]) and re.search(pattern, 'form-data; filename="film.SRT"')
    headers, body = multipart(fields, "file", "你好".encode())
    status, message = refusal(client, path, headers, body)
    assert status == 400 and "'file'" in message and ".txt" in message, message
    headers, body = multipart(fields, "film.txt", "你好".encode())
    assert client.call("POST", path, headers, body).status == 200


# a field added to DeepL's /v2/translate shape: a count from 1 to 9, with its description and its message
NEW_FIELD = """    word_limit: int = param(
        Count(minimum=1, maximum=9, default=1, description="at most this many words a sentence",
              out_of_range="Value for 'word_limit' not supported: use {minimum} to {maximum}"),
        1,
    )
    auth_key: str | None = param(_auth_key())


class DeepLLanguagesRequest(Shape):"""
NEW_FIELD_PROBE = """
import json
from handler.api.openapi import build_document
from handler.api.router import HttpApi, HttpRequest
from handler.coldstart import Startup
from handler.config import RuntimeConfig
from handler.errors import ModelUnavailableError

config = RuntimeConfig()
api = HttpApi(Startup(config, None, ModelUnavailableError("no model in this test"), 0.0))
def post(body):
    headers = {"Content-Type": "application/json"}
    reply = api.handle(HttpRequest.create("POST", "/v2/translate", headers, json.dumps(body).encode()))
    return reply.status, json.loads(reply.body)["message"]
print(json.dumps({
    "described": build_document(config)["components"]["schemas"]["DeepLTranslateRequest"]["properties"]["word_limit"],
    "out_of_range": post({"text": "你好", "target_lang": "EN", "word_limit": 12}),
    "in_range": post({"text": "你好", "target_lang": "EN", "word_limit": 3}),
}))
"""


def test_a_field_added_to_a_shape_is_read_and_described_with_no_other_edit(tmp_path: Path) -> None:
    # GIVEN a copy of handler/ whose DeepL /v2/translate shape has one field more, nothing else edited
    copy = tmp_path / "handler"
    shutil.copytree(REPO_ROOT / "handler", copy, ignore=shutil.ignore_patterns("__pycache__"))
    shapes = copy / "api" / "compat" / "deepl_shapes.py"
    source = shapes.read_text(encoding="utf-8")
    anchor = "    auth_key: str | None = param(_auth_key())\n\n\nclass DeepLLanguagesRequest(Shape):"
    assert source.count(anchor) == 1
    source = source.replace(anchor, NEW_FIELD).replace("    Choice,\n", "    Choice,\n    Count,\n", 1)
    shapes.write_text(source, encoding="utf-8")
    # WHEN the copy builds its OpenAPI document and answers POST /v2/translate
    probe = subprocess.run(
        [sys.executable, "-c", NEW_FIELD_PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    found = json.loads(probe.stdout)
    # THEN the document describes it with its range and description
    described, null = found["described"]["anyOf"]  # null: the default, as every optional JSON field
    assert described["description"] == "at most this many words a sentence" and null == {"type": "null"}
    assert {"type": "integer", "minimum": 1, "maximum": 9} in described["anyOf"]
    # AND a value out of its range is refused in DeepL's words, one in range passes (to the absent model: 503)
    assert found["out_of_range"] == [400, "Value for 'word_limit' not supported: use 1 to 9"]
    assert found["in_range"][0] == 503


# a flag added to this server's own POST /translate shape, with its description
NEW_FLAG = """    echo: bool = param(Flag(description="true: the answer repeats the texts"), False)
    options: TranslateOptions
"""
NEW_FLAG_PROBE = """
import json
from handler.api.openapi import build_document
from handler.api.router import HttpApi, HttpRequest
from handler.coldstart import Startup
from handler.config import RuntimeConfig
from handler.errors import ModelUnavailableError

config = RuntimeConfig()
api = HttpApi(Startup(config, None, ModelUnavailableError("no model in this test"), 0.0))
def post(body):
    request = HttpRequest.create("POST", "/translate", {"Content-Type": "application/json"}, json.dumps(body).encode())
    reply = api.handle(request)
    return reply.status, json.loads(reply.body)["error"]["message"]
print(json.dumps({
    "described": build_document(config)["components"]["schemas"]["TranslateRequest"]["properties"].get("echo"),
    "wrong": post({"text": "你好", "echo": "yes"}),
    "right": post({"text": "你好", "echo": True}),
    "unknown": post({"text": "你好", "colour": "blue"}),
}))
"""


def test_a_flag_added_to_the_own_translate_shape_is_read_and_described_with_no_other_edit(tmp_path: Path) -> None:
    # GIVEN a copy of handler/ whose own POST /translate shape declares one flag more, nothing else edited
    copy = tmp_path / "handler"
    shutil.copytree(REPO_ROOT / "handler", copy, ignore=shutil.ignore_patterns("__pycache__"))
    shapes = copy / "api" / "own_shapes.py"
    source = shapes.read_text(encoding="utf-8")
    assert source.count("    options: TranslateOptions\n") == 1
    shapes.write_text(source.replace("    options: TranslateOptions\n", NEW_FLAG), encoding="utf-8")
    # WHEN the copy builds its OpenAPI document and answers POST /translate
    probe = subprocess.run(
        [sys.executable, "-c", NEW_FLAG_PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    found = json.loads(probe.stdout)
    # THEN the served document's TranslateRequest describes it as the other flags are described
    assert found["described"] == {"type": "boolean", "description": "true: the answer repeats the texts"}
    # AND the server reads it: a wrong value is refused in the flags' words, true passes (to the absent model: 503)
    assert found["wrong"] == [400, '"echo" must be true or false; got a JSON string']
    assert found["right"][0] == 503
    # AND an unknown field's message names it beside the other flags, after the options
    assert found["unknown"][0] == 400 and found["unknown"][1].endswith(", scores, spans, stream, echo")


WHITE = st.text(st.sampled_from([" ", "\x0b", "\x1c", "\x85", "\u3000", "\u2028", "\t"]), max_size=3)
TERM = st.text(st.sampled_from(["人", "工", "a", " ", ",", "\ufeff", "\x07"]), max_size=4)
LINE = st.one_of(
    st.builds(lambda a, b, c, d, e: a + b + "人" + c + "\t" + d + e, WHITE, TERM, TERM, TERM, WHITE),  # an entry
    WHITE,  # a blank line (Python's white space: skipped)
    TERM,  # a line without a tab
)
ENTRIES = st.builds(
    lambda bom, lines, breaks: bom + "".join(line + end for line, end in zip(lines, breaks, strict=False)),
    st.sampled_from(["", "\ufeff"]),
    st.lists(LINE, min_size=1, max_size=5),
    st.lists(st.sampled_from(["\n", "\r\n", "\r", ""]), min_size=5, max_size=5),
)


@settings(max_examples=500, deadline=None)
@given(ENTRIES)
def test_the_described_tsv_grammar_holds_every_entries_text_the_glossary_store_takes(text: str) -> None:
    # the document's pattern is a necessary condition of parse_entries: a text it refuses the store refuses too
    try:
        parse_entries(text, "tsv")
    except (InvalidRequestError, RequestTooLargeError):
        return
    assert re.search(TSV_ENTRIES_PATTERN, text), repr(text)
