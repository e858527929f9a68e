"""The OpenAPI 3.1 description of the whole HTTP surface, served at ``GET /openapi.json``.

One place assembles every route and method the function answers: this server's own API (the page, the health report,
``POST /translate``) here, and the drop-in APIs' parts beside them (``handler.api.compat.libretranslate_openapi``,
``handler.api.compat.deepl_openapi``), each request body and every response status with its schema. The shapes come
from the types that validate the requests: ``POST /translate``'s body from its shape (``handler.api.own_shapes``: its
texts, flags and ``handler.options.TranslateOptions``' fields), the error codes from the error classes
(``handler.api.messages.error_codes``), the scored segment from ``handler.api.scores``; the served document carries
the deployment's limits (``TRANSLATE_MAX_CHARS``, ``TRANSLATE_MAX_TEXTS``) and says whether an API key is required.
``tests/adapters/test_openapi.py`` fails when a route or method the code answers is missing here (or described but not
answered). ``python -m handler.api.openapi`` prints the document.
"""

from __future__ import annotations

import json
from typing import Any

from handler.api.compat.deepl_routes import DEEPL_ROUTES
from handler.api.compat.libretranslate_routes import LIBRETRANSLATE_ROUTES
from handler.api.describe import describe_table
from handler.api.messages import error_codes
from handler.api.own_routes import OWN_ROUTES
from handler.api.own_shapes import TranslateRequest
from handler.api.scores import SCORED_SEGMENT_SCHEMA
from handler.api.shapes import IgnoredValue, shape_schema
from handler.config import RuntimeConfig
from handler.text.spans import SpanKind


def build_document(config: RuntimeConfig | None = None) -> dict[str, Any]:
    """The description; ``config`` supplies the deployment's limits and whether a key is required. One builder per
    API (this server's own, LibreTranslate's, DeepL's) writes its paths; ``tests/adapters/test_openapi.py`` fails
    when a route the code answers is missing here, or the other way round."""
    # the answers' types: imported when the document is built (its first request), not at a cold start
    from handler.api.compat.deepl_openapi import deepl_schemas
    from handler.api.compat.libretranslate_openapi import libretranslate_schemas

    config = config if config is not None else RuntimeConfig()
    keys_required = bool(config.api_keys)
    own_paths, _ = describe_table(OWN_ROUTES, config, keys_required)
    libretranslate_paths, libretranslate_requests = describe_table(LIBRETRANSLATE_ROUTES, config, keys_required)
    deepl_paths, deepl_requests = describe_table(DEEPL_ROUTES, config, keys_required)
    paths: dict[str, Any] = {
        **own_paths,
        **libretranslate_paths,
        **deepl_paths,
    }
    schemas = {
        **own_schemas(config),
        **libretranslate_requests,
        **libretranslate_schemas(),
        **deepl_requests,
        **deepl_schemas(),
        IgnoredValue.NAME: IgnoredValue.schema(),
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "zh-en-translate",
            "version": "1",
            "description": (
                "Chinese -> English translation. Every error of this server's own API is "
                '{"error": {"code", "message"}}; the drop-in APIs answer in their own shapes. '
                + ("This deployment requires an API key." if keys_required else "This deployment requires no API key.")
            ),
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "headers": {
                "RequestId": {
                    "description": "the request's id (the caller's X-Request-Id, the platform's trace id, or new)",
                    "required": True,
                    "schema": {"type": "string", "minLength": 1, "maxLength": 128},
                },
                "WwwAuthenticate": {"required": True, "schema": {"type": "string"}},
            },
            "securitySchemes": {
                "ApiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                "BearerKey": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer KEY"},
                "DeepLAuthKey": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Authorization",
                    "description": "Authorization: DeepL-Auth-Key KEY",
                },
            },
        },
    }


def own_schemas(config: RuntimeConfig) -> dict[str, Any]:
    """This server's own request and response schemas, with this deployment's limits."""
    scored_segment = SCORED_SEGMENT_SCHEMA
    span = {
        "type": "object",
        "required": ["kind", "source", "target"],
        "additionalProperties": False,
        "properties": {
            "kind": {"type": "string", "enum": [kind.value for kind in SpanKind]},
            "source": {"type": "string"},
            "target": {"type": "string"},
        },
    }
    translate_response: dict[str, Any] = {
        "type": "object",
        "required": ["model", "bundle_hash", "elapsed_ms"],
        "oneOf": [{"required": ["translation"]}, {"required": ["translations"]}],
        "additionalProperties": False,
        "properties": {
            "translation": {"type": "string"},
            "translations": {"type": "array", "items": {"type": "string"}},
            "spans": {
                "description": "a list of spans for text, a list of such lists for texts",
                "type": "array",
                "items": {"oneOf": [span, {"type": "array", "items": span}]},
            },
            "scores": {
                "description": "a list of scored segments for text, a list of such lists for texts",
                "type": "array",
                "items": {"oneOf": [scored_segment, {"type": "array", "items": scored_segment}]},
            },
            "model": {"type": ["string", "null"]},
            "bundle_hash": {"type": ["string", "null"]},
            "elapsed_ms": {"type": "number", "minimum": 0},
        },
    }
    error = {
        "type": "object",
        "required": ["error"],
        "additionalProperties": False,
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "additionalProperties": False,
                "properties": {
                    "code": {"type": "string", "enum": list(error_codes())},
                    "message": {"type": "string", "description": "what was wrong and what is allowed"},
                },
            }
        },
    }
    return {
        "Error": error,
        "TranslateRequest": shape_schema(TranslateRequest, config),
        "TranslateResponse": translate_response,
        "TranslateStreamEvent": _stream_event_schema(translate_response, scored_segment),
        "Health": _HEALTH,
    }


def _stream_event_schema(translate_response: dict[str, Any], scored_segment: dict[str, Any]) -> dict[str, Any]:
    return {
        "description": "one event of a streamed POST /translate (stream: true), in source order",
        "oneOf": [
            {
                "type": "object",
                "required": ["type", "index", "source", "source_span", "translation"],
                "properties": {
                    "type": {"const": "segment"},
                    "index": {"type": "integer", "minimum": 0, "description": "from 0, in source order"},
                    "text": {"type": "integer", "minimum": 0, "description": "with texts: which text"},
                    "source": {"type": "string"},
                    "source_span": {
                        "description": "[start, end) in the text as given; null where not found as written",
                        "oneOf": [
                            {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
                            {"type": "null"},
                        ],
                    },
                    "translation": {"type": "string"},
                    "scores": {"type": "array", "items": scored_segment},
                },
            },
            {
                "type": "object",
                "required": ["type", "done", "total"],
                "properties": {
                    "type": {"const": "progress"},
                    "done": {"type": "integer", "minimum": 0, "description": "source characters translated"},
                    "total": {"type": "integer", "minimum": 0},
                },
            },
            {
                **translate_response,
                "description": "the last event: TranslateResponse's fields, the segment count and characters",
                "required": [*translate_response["required"], "type", "segments", "characters"],
                "properties": {
                    **translate_response["properties"],
                    "type": {"const": "done"},
                    "segments": {"type": "integer", "minimum": 0},
                    "characters": {"type": "integer", "minimum": 0},
                },
            },
            {
                "description": "the last event when the work failed after the answer began",
                "type": "object",
                "required": ["type", "error"],
                "properties": {
                    "type": {"const": "error"},
                    "error": {"$ref": "#/components/schemas/Error/properties/error"},
                },
            },
        ],
    }


_HEALTH: dict[str, Any] = {
    "type": "object",
    "required": ["status", "warm", "cold_start", "licence", "limits", "api_key_required"],
    "properties": {
        "status": {"type": "string", "enum": ["ok", "unavailable"]},
        "warm": {"type": "boolean"},
        "api_key_required": {"type": "boolean"},
        "cold_start": {"type": "object"},
        "licence": {
            "description": "the served bundle's licence, from its manifest or model card (null: not known); "
            "notice: the one line a non-commercial demo model shows, null for a commercial-use one",
            "type": "object",
            "required": ["name", "commercial_use", "notice"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": ["string", "null"]},
                "commercial_use": {"type": ["boolean", "null"]},
                "notice": {"type": ["string", "null"]},
            },
        },
        "limits": {
            "type": "object",
            "required": ["max_chars", "max_texts", "max_file_bytes", "default_beam_size"],
            "properties": {
                name: {"type": "integer"} for name in ("max_chars", "max_texts", "max_file_bytes", "default_beam_size")
            },
        },
        "model": {"type": ["string", "null"]},
        "bundle_hash": {"type": ["string", "null"]},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        },
    },
}


def described_operations(document: dict[str, Any]) -> set[tuple[str, str]]:
    """``{(METHOD, path)}`` of every operation the document describes."""
    methods = ("get", "head", "post", "put", "patch", "delete", "options")
    return {(method.upper(), path) for path, item in document["paths"].items() for method in item if method in methods}


if __name__ == "__main__":
    print(json.dumps(build_document(RuntimeConfig.from_env()), indent=1, ensure_ascii=False))
