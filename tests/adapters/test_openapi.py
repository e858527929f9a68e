"""The OpenAPI description (``handler.api.openapi``) is valid OpenAPI 3.1, served at ``GET /openapi.json`` by the real
server, and describes exactly the routes and methods the code answers: a new route or method without a
description fails here, and so does a description of something the code does not answer.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from itertools import product
from pathlib import Path

import pytest
from openapi_spec_validator import validate

from handler.api.compat import deepl, libretranslate
from handler.api.openapi import build_document, described_operations
from handler.api.router import ROUTES, HttpApi, HttpRequest
from handler.coldstart import Startup
from tests.adapters.conftest import MAX_CHARS, MAX_TEXTS, RealHttpClient
from tests.ship.dockerfile_model import REPO_ROOT

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
NOT_ANSWERED = (404, 405)  # what the code answers a route or method it does not have


def code_paths() -> set[str]:
    """Every path in the code's route tables: this API's and the drop-in APIs'."""
    return {*ROUTES, *libretranslate.ROUTES, *deepl.ROUTES}


def new_glossary(api: HttpApi) -> str:
    """The ID of a glossary created for one request (a glossary's routes answer 404 for an ID that names none)."""
    body = json.dumps({"name": "g", "source_lang": "zh", "target_lang": "en", "entries": "人工\tAI"}).encode()
    created = api.handle(HttpRequest.create("POST", "/v2/glossaries", {"Content-Type": "application/json"}, body))
    assert created.status == 201, created.body
    return str(json.loads(created.body)["glossary_id"])


def answered_operations(api: HttpApi, paths: set[str]) -> set[tuple[str, str]]:
    """``(METHOD, path)`` pairs the code answers with anything but 404/405, found by asking it each one."""
    answered = set()
    for method, path in product(METHODS, sorted(paths)):
        concrete = path.replace("{glossary_id}", new_glossary(api)) if "{glossary_id}" in path else path
        response = api.handle(HttpRequest.create(method, concrete, {"Content-Type": "application/json"}, b"{}"))
        if response.status not in NOT_ANSWERED:
            answered.add((method, path))
    return answered


def test_the_document_is_valid_openapi_3_1(startup: Startup) -> None:
    document = build_document(startup.config)
    assert document["openapi"].startswith("3.1")
    validate(document)  # raises on any structural error of the document or its schemas


def test_every_route_the_code_answers_is_described_and_nothing_else(startup: Startup) -> None:
    # GIVEN the description and the code's route tables
    document = build_document(startup.config)
    described = described_operations(document)
    described_paths = {path for _, path in described}
    # THEN the paths agree (a route added to a table without a description fails here) ...
    assert code_paths() == described_paths, f"described only: {described_paths - code_paths()}; " + (
        f"answered only: {code_paths() - described_paths}"
    )
    # ... AND asking the code every method on every path finds exactly the described operations
    answered = answered_operations(HttpApi(startup), code_paths() | described_paths | {"/v2/other", "/nope"})
    assert answered - described == set(), "answered but not described"
    assert described - answered == set(), "described but not answered"


def test_every_operation_documents_its_statuses_and_the_error_shape(startup: Startup) -> None:
    document = build_document(startup.config)
    error = document["components"]["schemas"]["Error"]
    assert error["required"] == ["error"] and error["properties"]["error"]["required"] == ["code", "message"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            assert operation["responses"], (method, path)
            for status, answer in operation["responses"].items():
                assert "X-Request-Id" in answer["headers"], (method, path, status)
                if method not in ("head", "options") and status != "204":
                    assert answer.get("content"), f"{method} {path} {status} has no body schema"
    translate = document["paths"]["/translate"]["post"]["responses"]
    assert {"200", "400", "401", "403", "413", "415", "500", "503"} <= set(translate)
    assert "WWW-Authenticate" in translate["401"]["headers"]


def test_the_document_carries_the_deployments_limits(startup: Startup) -> None:
    request = build_document(startup.config)["components"]["schemas"]["TranslateRequest"]["properties"]
    assert request["text"]["maxLength"] == MAX_CHARS and request["texts"]["maxItems"] == MAX_TEXTS


@pytest.mark.slow
def test_the_real_server_serves_the_document(functions_framework_url: str, startup: Startup) -> None:
    # GIVEN functions-framework as make run starts it WHEN /openapi.json is fetched THEN it is the description
    reply = RealHttpClient("functions_framework", functions_framework_url).call("GET", "/openapi.json")
    assert reply.status == 200 and reply.headers["content-type"].startswith("application/json")
    assert reply.headers["x-content-type-options"] == "nosniff"
    assert json.loads(reply.body) == build_document(startup.config)


@pytest.mark.parametrize("count", [True, False, 0.5, 2.5890419884777833e-42, "x"])
def test_libretranslate_alternatives_takes_only_counts(startup: Startup, count: object) -> None:
    # schemathesis found true and 2.6e-42 taken as counts (int(True) == 1, int(2.6e-42) == 0)
    body = json.dumps({"q": "你好", "source": "zh", "target": "en", "alternatives": count}).encode()
    request = HttpRequest.create("POST", "/translate", {"Content-Type": "application/json"}, body)
    reply = HttpApi(startup).handle(request)
    assert reply.status == 400 and "alternatives must be an integer" in json.loads(reply.body)["error"]


# an option the options type does not have: an integer from 1 to 9, with its description
NEW_OPTION = """    word_limit: int | None = option(
        None, "at most this many words a sentence", {"type": "integer", "minimum": 1, "maximum": 9}
    )

    def __post_init__(self) -> None:"""
NEW_OPTION_PROBE = """
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
    return reply.status, json.loads(reply.body)["error"]
print(json.dumps({
    "described": build_document(config)["components"]["schemas"]["TranslateRequest"]["properties"].get("word_limit"),
    "out_of_range": post({"text": "你好", "word_limit": 12}),
    "in_range": post({"text": "你好", "word_limit": 3}),
}))
"""


def test_an_option_added_to_the_options_type_is_described_and_validated_with_no_other_edit(tmp_path: Path) -> None:
    # GIVEN a copy of handler/ whose TranslateOptions has one field more (its rule in its metadata), nothing else edited
    copy = tmp_path / "handler"
    shutil.copytree(REPO_ROOT / "handler", copy, ignore=shutil.ignore_patterns("__pycache__"))
    options = copy / "options.py"
    source = options.read_text(encoding="utf-8")
    assert source.count("\n    def __post_init__(self) -> None:") == 1
    options.write_text(
        source.replace("    def __post_init__(self) -> None:", NEW_OPTION.strip("\n"), 1), encoding="utf-8"
    )
    # WHEN the copy builds its OpenAPI document and answers POST /translate
    probe = subprocess.run(
        [sys.executable, "-c", NEW_OPTION_PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    found = json.loads(probe.stdout)
    # THEN the document describes it with its range and description
    assert found["described"] == {
        "anyOf": [{"type": "integer", "minimum": 1, "maximum": 9}, {"type": "null"}],
        "description": "at most this many words a sentence",
    }
    # AND a value out of its range is refused naming the rule, one in range passes validation (to the absent model)
    assert found["out_of_range"] == [
        400,
        {"code": "invalid_request", "message": "word_limit must be an integer from 1 to 9; got 12"},
    ]
    assert found["in_range"][0] == 503 and found["in_range"][1]["code"] == "model_unavailable"
