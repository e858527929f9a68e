"""This server's own routes, declared once (``handler.api.routes``): the page, ``/healthz``, ``/openapi.json`` and
``POST /translate`` with its CORS preflight, each with the method of ``handler.api.router.HttpApi`` that answers it,
whether it needs a key and its responses. ``HttpApi`` routes by this table (404 and 405 included) and
``handler.api.openapi`` describes it. ``POST /translate``'s path is LibreTranslate's too: its request body names both
APIs' shapes (this server's ``TranslateRequest``, from ``handler.options.TranslateOptions``' declarations, and
LibreTranslate's, from ``handler.api.compat.libretranslate_shapes``)."""

from __future__ import annotations

from typing import Any

from handler.api.describe import ref, response
from handler.api.routes import Route, RouteTable
from handler.api.shapes import FORM_MEDIA, JSON_MEDIA
from handler.config import RuntimeConfig

OPENAPI_PATH = "/openapi.json"
_OWN_ERRORS = {
    400: "malformed JSON, a wrong type, an unknown or out-of-range option",
    401: "an API key is required (TRANSLATE_API_KEYS / TRANSLATE_API_KEYS_FILE) and none valid was presented",
    413: "over TRANSLATE_MAX_CHARS or TRANSLATE_MAX_TEXTS, or a body too large for them",
    415: "the body is not UTF-8 application/json",
    429: "the key is over its rate or character quota (TRANSLATE_API_KEYS' rate= and chars=), or the decoder is busy; "
    "Retry-After says when to come back",
    500: "a bug or a bad setting; details in the function's log, none in the response",
    503: "the model is unavailable (the message names the file and the fix) or out of time",
}


def own_errors(*statuses: int) -> dict[str, Any]:
    """This server's error answers (``{"error": {"code", "message"}}``), 401 with its ``WWW-Authenticate``."""
    answers = {}
    for status in statuses:
        extra = {"WWW-Authenticate": {"$ref": "#/components/headers/WwwAuthenticate"}} if status == 401 else {}
        answers[str(status)] = response(_OWN_ERRORS[status], ref("Error"), headers=extra)
    return answers


def _translate_description(config: RuntimeConfig) -> str:
    return (
        'One text ({"text": ...}) or several ({"texts": [...]}) plus options; the response names the model. '
        f"At most {config.max_chars:,} characters in all and {config.max_texts} texts. A body with a `q` field "
        "or `target` (and no text/texts) or a form body is LibreTranslate's request, answered in its shapes."
    )


def _translate_body(config: RuntimeConfig) -> dict[str, Any]:
    return {
        "required": True,
        "content": {
            JSON_MEDIA: {"schema": {"oneOf": [ref("TranslateRequest"), ref("LibreTranslateRequest")]}},
            FORM_MEDIA: {"schema": ref("LibreTranslateRequestForm")},
        },
    }


_EITHER = {"oneOf": [ref("TranslateResponse"), ref("LibreTranslateResponse")]}
_TRANSLATE_RESPONSES = {
    "200": {
        **response("the translation(s); streamed with stream: true", _EITHER),
        "content": {
            JSON_MEDIA: {"schema": _EITHER},
            "application/x-ndjson": {
                "schema": {"type": "string", "description": "one TranslateStreamEvent (JSON) a line"},
                "x-item-schema": ref("TranslateStreamEvent"),
            },
            "text/event-stream": {
                "schema": {"type": "string", "description": "event: <type> / data: <TranslateStreamEvent>"},
                "x-item-schema": ref("TranslateStreamEvent"),
            },
        },
    },
    "400": response(
        "a bad request (LibreTranslate: also too large)", {"oneOf": [ref("Error"), ref("LibreTranslateError")]}
    ),
    **own_errors(401),
    "403": response("LibreTranslate: api_key invalid (none: 400)", ref("LibreTranslateError")),
    **own_errors(413, 415),
    "429": response(
        _OWN_ERRORS[429] + " (LibreTranslate's shape for its requests)",
        {"oneOf": [ref("Error"), ref("LibreTranslateError")]},
    ),
    "500": response(
        "a bug or a bad setting (LibreTranslate: also the model unavailable); no internals in the body",
        {"oneOf": [ref("Error"), ref("LibreTranslateError")]},
    ),
    **own_errors(503),
}

OWN_ROUTES = RouteTable(
    preflight=False,  # only POST /translate answers a preflight: the page and the reports are read same-origin
    schemes=("ApiKeyHeader", "BearerKey"),
    routes=(
        Route(
            "GET", "/", "web_page", "page",
            "The two-pane web page (Chinese left, English right), with the limits injected",
            {"200": response("the page", {"type": "string"}, "text/html")}, auth=False, tag="page",
        ),
        Route(
            "GET", "/healthz", "health", "health",
            "Model name, bundle hash, warm state, cold-start timings, limits, whether a key is required",
            {"200": response("the model is loaded and warm", ref("Health")),
             "503": response("the model could not load; error says why", ref("Health"))},
            auth=False, tag="health",
        ),
        Route(
            "GET", OPENAPI_PATH, "openapi_document", "openapi", "This description",
            {"200": response("the OpenAPI 3.1 document", {"type": "object"})}, auth=False, tag="meta",
        ),
        Route(
            "POST", "/translate", "translate", "translate",
            "Translate Chinese to English (this server's API; LibreTranslate's POST /translate shares the path)",
            _TRANSLATE_RESPONSES, tag="translate", description=_translate_description, request_body=_translate_body,
        ),
        Route("OPTIONS", "/translate", "preflight", "translatePreflight", "CORS preflight", {}, auth=False,
              tag="translate"),
    ),
)  # fmt: skip
