"""The pieces every part of the OpenAPI description is built from (``handler.api.openapi`` assembles them; the
drop-in APIs' parts live beside those APIs, ``handler.api.compat.*_openapi``): references, answers with the
request-id header, HEAD and preflight operations, security requirements, and each API's ``paths`` written from its
route table (``describe_table``: every route's operation, its parameters and request body from the route's shape,
HEAD beside GET, a preflight for every path).
"""

from __future__ import annotations

from typing import Any

from handler.api.routes import Route, RouteTable, with_parameters
from handler.api.shapes import (
    FORM_MEDIA,
    JSON_MEDIA,
    MULTIPART_MEDIA,
    file_encoding,
    params_of,
    query_parameters,
    shape_schema,
)
from handler.config import RuntimeConfig

JSON = JSON_MEDIA
FORM = FORM_MEDIA
MULTIPART = MULTIPART_MEDIA
# a file served in the Content-Type of its format (handler.storage.files)
FILE_MEDIA = {"*/*": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}}
REQUEST_ID_HEADER = {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}}


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


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


# --- an API's paths from its route table ----------------------------------------------------------------------------
def describe_table(
    table: RouteTable, config: RuntimeConfig, keys_required: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The OpenAPI ``paths`` of ``table``'s described routes and the request schemas they refer to (each shape's
    JSON and form variants, by the shape's name)."""
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for route in table.routes:
        if not route.described:  # described by another table's route: its shape's schemas are still the document's
            if route.shape is not None:
                request_body(route.shape, route.body, config, schemas)
            continue
        item = paths.setdefault(route.path, {})
        if route.method == "OPTIONS":  # a preflight the table declares itself
            item["options"] = _preflight(route.operation_id, route.path, table, route.tag)
            continue
        operation = _operation(route, table, config, keys_required, schemas)
        item[route.method.lower()] = operation
        if route.method == "GET" and table.head:
            item["head"] = head_of(operation, route.operation_id + "Head")
    for template, item in paths.items():
        if table.preflight and "options" not in item:
            first = next(iter(item.values()))["operationId"]
            first_route = next(route for route in table.routes if route.path == template)
            item["options"] = _preflight(first + "Preflight", template, table, first_route.tag)
    return paths, schemas


def _operation(
    route: Route, table: RouteTable, config: RuntimeConfig, keys_required: bool, schemas: dict[str, Any]
) -> dict[str, Any]:
    tag = route.tag or table.tag
    operation: dict[str, Any] = {"operationId": route.operation_id, "tags": [tag], "summary": route.summary}
    if route.description is not None:
        operation["description"] = route.description(config)
    if route.auth and table.schemes:
        operation["security"] = security(keys_required, *table.schemes)
    parameters = [parameter.schema() for parameter in with_parameters(route.path, table)]
    if route.shape is not None and not route.body:
        parameters += query_parameters(route.shape, config)
    if parameters:
        operation["parameters"] = parameters
    if route.request_body is not None:
        operation["requestBody"] = route.request_body(config)
    elif route.shape is not None and route.body:
        operation["requestBody"] = request_body(route.shape, route.body, config, schemas)
    operation["responses"] = dict(route.responses)
    return operation


def request_body(shape: type, media: tuple[str, ...], config: RuntimeConfig, schemas: dict[str, Any]) -> dict[str, Any]:
    """The request body of ``shape`` in each of ``media``: its JSON schema, its form variant for a form-encoded or
    multipart body (a multipart one with each file part's ``encoding``); the schemas go to ``schemas`` by name."""
    name = shape.__name__
    content: dict[str, Any] = {}
    for each in media:
        form = each != JSON
        key = name + ("Form" if form else "")
        schemas.setdefault(key, shape_schema(shape, config, form))
        content[each] = {"schema": ref(key)}
        if each == MULTIPART and file_encoding(shape):
            content[each]["encoding"] = file_encoding(shape)
    required = any(kind.required for kind in params_of(shape).values())
    return {"required": required, "content": content}


def _preflight(operation_id: str, template: str, table: RouteTable, tag: str | None = None) -> dict[str, Any]:
    """A path's preflight: any value of a parameter the route answers whatever it is; a parameter the router
    matches by its pattern keeps it, and another value is no route (404)."""
    parameters = with_parameters(template, table)
    answer = preflight(operation_id, tag or table.tag)
    strict = [parameter for parameter in parameters if parameter.matches is None]
    if parameters:
        answer["parameters"] = [
            parameter.schema() if parameter.matches is None else {**parameter.schema(), "schema": {"type": "string"}}
            for parameter in parameters
        ]
    if strict:
        answer["responses"]["404"] = response(
            f"the path names no {strict[0].name.replace('_', ' ')} (it does not match its pattern)",
            ref(table.error_schema),
        )
    return answer
