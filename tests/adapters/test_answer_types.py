"""The drop-in APIs' answers are typed (``handler.api.answers``: a ``TypedDict`` per answer, which mypy checks the
handlers against) and the document's response schemas are written from those types: every answer the local server
gives on loopback validates against the schema the served document names for it, and the schema names every member
the answer has and requires none it may leave out."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.adapters.conftest import RealHttpClient

JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def client(local_server_url: str) -> RealHttpClient:
    return RealHttpClient("local_server", local_server_url)


@pytest.fixture(scope="module")
def document(client: RealHttpClient) -> dict[str, Any]:
    return dict(json.loads(client.call("GET", "/openapi.json").body))


def described(document: dict[str, Any], path: str, method: str, status: str) -> dict[str, Any]:
    schema = document["paths"][path][method.lower()]["responses"][status]["content"]["application/json"]["schema"]
    return dict(schema)


def component(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The component a ``$ref`` names (the schema itself otherwise)."""
    if "$ref" in schema:
        return dict(document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]])
    return schema


def members_named(document: dict[str, Any], schema: dict[str, Any], answer: Any) -> list[str]:
    """What the schema fails to say of ``answer``: a member it does not name, or requires but the answer lacks."""
    schema = component(document, schema)
    problems = []
    if isinstance(answer, list):
        return [problem for item in answer for problem in members_named(document, schema.get("items", {}), item)]
    if isinstance(answer, dict) and schema.get("type") == "object":
        properties = schema.get("properties", {})
        problems += [f"{name} is not named" for name in answer if name not in properties]
        problems += [f"{name} is required but absent" for name in schema.get("required", []) if name not in answer]
        for name, value in answer.items():
            if name in properties and isinstance(value, dict | list):
                for option in properties[name].get("anyOf", [properties[name]]):
                    if Draft202012Validator({**option, "components": document["components"]}).is_valid(value):
                        problems += members_named(document, option, value)
                        break
    return problems


ANSWERS = [
    ("GET", "/v2/languages?type=target", None),
    ("GET", "/v2/languages", None),
    ("GET", "/v2/usage", None),
    ("POST", "/v2/translate", {"text": ["你好", "Hello"], "target_lang": "EN", "model_type": "quality_optimized"}),
    ("GET", "/v2/glossary-language-pairs", None),
    ("POST", "/v2/glossaries", {"name": "g", "source_lang": "zh", "target_lang": "en", "entries": "人工\tAI"}),
    ("GET", "/v2/glossaries", None),
    ("POST", "/v3/glossaries", {"name": "g", "dictionaries": [{"source_lang": "zh", "target_lang": "en",
                                                               "entries": "人工\tAI"}]}),
    ("GET", "/v3/glossaries", None),
    ("GET", "/frontend/settings", None),
    ("GET", "/languages", None),
    ("GET", "/health", None),
    ("POST", "/detect", {"q": "你好"}),
    ("POST", "/translate", {"q": ["今天天气很好。", "2026"], "source": "auto", "target": "en", "alternatives": 2}),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "body"), ANSWERS)
def test_each_answer_is_its_documented_type(
    client: RealHttpClient, document: dict[str, Any], method: str, path: str, body: dict[str, Any] | None
) -> None:
    # GIVEN a request to a drop-in API WHEN the local server answers it
    reply = client.call(method, path, JSON if body is not None else {}, json.dumps(body).encode() if body else b"")
    assert reply.status in (200, 201), reply.body
    answer = json.loads(reply.body)
    # THEN the answer validates against the schema the document names for it
    route = path.split("?", 1)[0]
    schema = described(document, route, method, str(reply.status))
    if route == "/translate":
        schema = {"$ref": "#/components/schemas/LibreTranslateResponse"}
    Draft202012Validator({**schema, "components": document["components"]}).validate(answer)
    # AND the schema names each member the answer has, and requires none it leaves out
    assert members_named(document, schema, answer) == []
