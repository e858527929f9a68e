"""The pieces every part of the OpenAPI description is built from (``handler.api.openapi`` assembles them; the
drop-in APIs' parts live beside those APIs, ``handler.api.compat.*_openapi``): references, answers with the
request-id header, HEAD and preflight operations, security requirements and the form-body variant of a JSON schema.
"""

from __future__ import annotations

from typing import Any

from handler.options import TEXT_END
from handler.text.spans import MARKUP_LIMIT, MARKUP_OPEN

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
# a file served in the Content-Type of its format (handler.storage.files)
FILE_MEDIA = {"*/*": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}}
# the private-use characters handler.text.markup cuts html and markdown with: a text of those formats may not hold them
NO_MARKUP_PATTERN = f"^[^{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]*{TEXT_END}"
REQUEST_ID_HEADER = {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}}


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or ``null`` (null means the default)."""
    return {"anyOf": [schema, {"type": "null"}]}


def response(
    description: str,
    schema: dict[str, Any] | None = None,
    media: str = JSON,
    headers: dict[str, Any] | None = None,
) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": description, "headers": {**REQUEST_ID_HEADER, **(headers or {})}}
    if schema is not None:
        answer["content"] = {media: {"schema": schema}}
    return answer


def file_response(description: str) -> dict[str, Any]:
    """A file in the Content-Type of its format."""
    return response(description) | {"content": FILE_MEDIA}


def head_of(get: dict[str, Any], operation_id: str) -> dict[str, Any]:
    """HEAD answered like GET, without a body."""
    responses = {
        status: {key: value for key, value in answer.items() if key != "content"}
        for status, answer in get["responses"].items()
    }
    kept = {key: value for key, value in get.items() if key not in ("responses", "operationId")}
    return {**kept, "operationId": operation_id, "responses": responses}


def post_of(get: dict[str, Any], operation_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST answered like GET, its query parameters (but ``type``) in a body."""
    parameters = [p for p in get.get("parameters", []) if p["name"] != "type"]
    post = {**get, "operationId": operation_id, "requestBody": body}
    if parameters:
        post["parameters"] = parameters
    else:
        post.pop("parameters", None)
    return post


def preflight(operation_id: str, tag: str, parameter: dict[str, Any] | None = None) -> dict[str, Any]:
    """A CORS preflight; on a path with a parameter it answers any value of it."""
    operation: dict[str, Any] = {
        "operationId": operation_id,
        "tags": [tag],
        "summary": "CORS preflight (Access-Control-* headers only for origins TRANSLATE_CORS_ORIGINS allows)",
        "responses": {
            "204": response(
                "the methods the route answers, in Allow", headers={"Allow": {"schema": {"type": "string"}}}
            )
        },
    }
    if parameter is not None:
        any_value = {key: value for key, value in parameter.items() if key not in ("schema", "description")}
        operation["parameters"] = [{**any_value, "schema": {"type": "string"}}]
    return operation


def security(required: bool, *schemes: str) -> list[dict[str, list[str]]]:
    """Which schemes a route takes; without configured keys none is needed (the empty requirement)."""
    chosen: list[dict[str, list[str]]] = [{scheme: []} for scheme in schemes]
    return chosen if required else [{}, *chosen]


def path_parameter(name: str, pattern: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": pattern},
        "description": description,
    }


def form_variant(schema: Any) -> Any:
    """A JSON body's schema as a form body's: a form has no null, and an empty list is no field at all."""
    if isinstance(schema, list):
        return [form_variant(item) for item in schema if item != {"type": "null"} and item is not None]
    if not isinstance(schema, dict):
        return schema
    form = {key: form_variant(value) for key, value in schema.items()}
    if isinstance(form.get("type"), list):
        kinds = [kind for kind in form["type"] if kind != "null"]
        form["type"] = kinds[0] if len(kinds) == 1 else kinds
    if form.get("type") == "array":
        form.setdefault("minItems", 1)
    return form


def with_form_variants(schemas: dict[str, Any], *names: str) -> dict[str, Any]:
    """``schemas`` plus ``<name>Form``, the form-body variant, of each of ``names``."""
    return {**schemas, **{name + "Form": form_variant(schemas[name]) for name in names}}
