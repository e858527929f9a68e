"""Answer types: a JSON answer of the drop-in APIs is a ``TypedDict``, which mypy checks every answer a handler
builds against, and from which its OpenAPI schema is written (``answer_schemas``): the answers' shapes declared once,
as the requests' are (``handler.api.shapes``). ``NotRequired`` marks a member an answer may leave out; a member's
note is ``Annotated[type, "a description"]`` and JSON Schema keywords the type cannot say are
``Annotated[type, {"minimum": 0}]`` (merged into its schema). A ``TypedDict`` a member names is a component of its
own, referred to by its name.

The modules that declare answers are imported when the document is built (on its first request), not at a cold
start: the handlers name the types for mypy only.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, NotRequired, Required, Union, get_args, get_origin, get_type_hints
from typing import is_typeddict as _is_typeddict

_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def answer_schemas(*answers: type) -> dict[str, Any]:
    """The schema of each of ``answers`` and of every ``TypedDict`` they name, by its name."""
    found: dict[str, Any] = {}
    pending = list(answers)
    while pending:
        kind = pending.pop(0)
        if kind.__name__ not in found:
            found[kind.__name__] = _object(kind, pending)
    return found


def _object(kind: type, pending: list[type]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required = []
    for name, hint in get_type_hints(kind, include_extras=True).items():
        optional = get_origin(hint) is NotRequired
        if get_origin(hint) in (NotRequired, Required):
            hint = get_args(hint)[0]
        properties[name] = _schema(hint, pending)
        if not optional:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "required": required, "properties": properties}
    if kind.__doc__ and not kind.__doc__.startswith(kind.__name__ + "("):  # (a TypedDict's default doc is its call)
        schema["description"] = " ".join(kind.__doc__.split())
    return schema


def _schema(hint: Any, pending: list[type]) -> dict[str, Any]:
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        schema = _schema(args[0], pending)
        for note in args[1:]:
            schema = {**schema, **(note if isinstance(note, dict) else {"description": str(note)})}
        return schema
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):  # (anyOf: [] is a list of strings and a list of lists alike)
        return {"anyOf": [_schema(each, pending) for each in args]}
    if origin is list:
        return {"type": "array", "items": _schema(args[0], pending)}
    if _is_typeddict(hint):
        pending.append(hint)
        return {"$ref": f"#/components/schemas/{hint.__name__}"}
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}
    raise TypeError(f"an answer's member of type {hint!r} has no JSON Schema here")
