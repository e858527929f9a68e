"""The OpenAPI 3.1 description of the whole HTTP surface, served at ``GET /openapi.json``.

One place for every route and method the function answers (this server's API, the page, the health report, the
LibreTranslate and DeepL drop-in APIs), each request body and every response status with its schema. Ranges and
names come from the code (beam sizes, option ranges, formats, Chinese variants, span kinds, error codes), and the
served document carries the deployment's limits (``TRANSLATE_MAX_CHARS``, ``TRANSLATE_MAX_TEXTS``) and says whether
an API key is required. ``tests/adapters/test_openapi.py`` fails when a route or method the code answers is
missing here (or described but not answered). ``python -m handler.api.openapi`` prints the document.
"""

from __future__ import annotations

import json
from typing import Any

from handler.config import MAX_BEAM_SIZE, RuntimeConfig
from handler.errors import InvalidRequestError
from handler.service import LENGTH_PENALTY_RANGE, MAX_ALTERNATIVES, MAX_LENGTH_RATIO_RANGE
from handler.storage.glossaries import ENTRIES_FORMATS, MAX_ENTRIES, MAX_ENTRIES_BYTES, MAX_GLOSSARIES, MAX_NAME_BYTES
from handler.text.glossary import MAX_REQUEST_TERMS, MAX_TARGET_CHARS, MAX_TERM_CHARS
from handler.text.markup import FORMATS
from handler.text.script_conversion import VARIANTS, canonical_variant
from handler.text.spans import MARKUP_LIMIT, MARKUP_OPEN, SpanKind

OPENAPI_PATH = "/openapi.json"
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"

# what handler.text.glossary takes: a term holds a Han character (handler.text.spans), a target is not blank, and
# neither holds a line break ("(?![\\s\\S])" ends the text: "$" would also match before a final line break)
_NO_BREAK = "[^\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]*"
_END = "(?![\\s\\S])"
GLOSSARY_TERM_PATTERN = f"^{_NO_BREAK}[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]{_NO_BREAK}{_END}"
GLOSSARY_TARGET_PATTERN = f"^{_NO_BREAK}\\S{_NO_BREAK}{_END}"

GLOSSARY_ID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"  # what POST /v2/glossaries gives
NO_MARKUP_PATTERN = f"^[^{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]*{_END}"  # (handler.text.markup's own characters)

# every code this server's own error body may carry ({"error": {"code", "message"}})
ERROR_CODES = (
    "invalid_request",
    "unauthorized",
    "not_found",
    "method_not_allowed",
    "request_too_large",
    "unsupported_media_type",
    "internal_error",
    "configuration_error",
    "model_unavailable",
    "bundle_invalid",
    "deadline_exceeded",
)


def _accepted(spelling: str) -> bool:
    try:
        canonical_variant(spelling)
    except InvalidRequestError:
        return False
    return True


# the spellings of a Chinese variant the service reads (case does not matter to it)
_SPELLINGS = ("zh", "zh-CN", "zh-SG", "zh-Hans", "zt", "zh-Hant", "zh-TW", "zh-HK", "zh-MO", "auto")
SOURCE_SPELLINGS = tuple(spelling for spelling in dict.fromkeys((*VARIANTS, *_SPELLINGS)) if _accepted(spelling))


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or ``null`` (null means the default)."""
    return {"anyOf": [schema, {"type": "null"}]}


_REQUEST_ID_HEADER = {"X-Request-Id": {"$ref": "#/components/headers/RequestId"}}


def _response(
    description: str,
    schema: dict[str, Any] | None = None,
    media: str = JSON,
    headers: dict[str, Any] | None = None,
) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": description, "headers": {**_REQUEST_ID_HEADER, **(headers or {})}}
    if schema is not None:
        answer["content"] = {media: {"schema": schema}}
    return answer


def _own_errors(*statuses: int) -> dict[str, Any]:
    texts = {
        400: "malformed JSON, a wrong type, an unknown or out-of-range option",
        401: "an API key is required (TRANSLATE_API_KEYS / TRANSLATE_API_KEYS_FILE) and none valid was presented",
        413: "over TRANSLATE_MAX_CHARS or TRANSLATE_MAX_TEXTS, or a body too large for them",
        415: "the body is not UTF-8 application/json",
        500: "a bug or a bad setting; details in the function's log, none in the response",
        503: "the model is unavailable (the message names the file and the fix) or out of time",
    }
    answers = {}
    for status in statuses:
        extra = {"WWW-Authenticate": {"$ref": "#/components/headers/WwwAuthenticate"}} if status == 401 else {}
        answers[str(status)] = _response(texts[status], _ref("Error"), headers=extra)
    return answers


def _head_of(get: dict[str, Any], operation_id: str) -> dict[str, Any]:
    """HEAD answered like GET, without a body."""
    responses = {
        status: {key: value for key, value in answer.items() if key != "content"}
        for status, answer in get["responses"].items()
    }
    kept = {key: value for key, value in get.items() if key not in ("responses", "operationId")}
    return {**kept, "operationId": operation_id, "responses": responses}


def _preflight(operation_id: str, tag: str) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "tags": [tag],
        "summary": "CORS preflight (Access-Control-* headers only for origins TRANSLATE_CORS_ORIGINS allows)",
        "responses": {
            "204": _response(
                "the methods the route answers, in Allow", headers={"Allow": {"schema": {"type": "string"}}}
            )
        },
    }


def _security(required: bool, *schemes: str) -> list[dict[str, list[str]]]:
    """Which schemes a route takes; without configured keys none is needed (the empty requirement)."""
    chosen: list[dict[str, list[str]]] = [{scheme: []} for scheme in schemes]
    return chosen if required else [{}, *chosen]


def build_document(config: RuntimeConfig | None = None) -> dict[str, Any]:
    """The description; ``config`` supplies the deployment's limits and whether a key is required. One builder per
    API (this server's own, LibreTranslate's, DeepL's) writes its paths; ``tests/adapters/test_openapi.py`` fails
    when a route the code answers is missing here, or the other way round."""
    config = config if config is not None else RuntimeConfig()
    keys_required = bool(config.api_keys)
    paths: dict[str, Any] = {
        **own_api_paths(config, keys_required),
        **libretranslate_paths(),
        **deepl_paths(keys_required),
        **document_paths(keys_required),
        **deepl_glossary_paths(keys_required),
    }
    schemas = {**_schemas(config), **_document_schemas(), **_glossary_schemas()}
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


def own_api_paths(config: RuntimeConfig, keys_required: bool) -> dict[str, Any]:
    """This server's own routes: the page, ``/healthz``, ``/openapi.json`` and ``POST /translate`` (whose path
    LibreTranslate's translate shares: both request shapes are described on it)."""
    own_security = _security(keys_required, "ApiKeyHeader", "BearerKey")
    translate_get_out = {
        "operationId": "translate",
        "tags": ["translate"],
        "summary": "Translate Chinese to English (this server's API; LibreTranslate's POST /translate shares the path)",
        "description": (
            'One text ({"text": ...}) or several ({"texts": [...]}) plus options; the response names the model. '
            f"At most {config.max_chars:,} characters in all and {config.max_texts} texts. A body with a `q` field "
            "(and no text/texts) or a form body is LibreTranslate's request, answered in LibreTranslate's shapes."
        ),
        "security": own_security,
        "requestBody": {
            "required": True,
            "content": {
                JSON: {"schema": {"oneOf": [_ref("TranslateRequest"), _ref("LibreTranslateRequest")]}},
                FORM: {"schema": _ref("LibreTranslateRequestForm")},
            },
        },
        "responses": {
            "200": {
                **_response(
                    "the translation(s); streamed with stream: true",
                    {"oneOf": [_ref("TranslateResponse"), _ref("LibreTranslateResponse")]},
                ),
                "content": {
                    JSON: {"schema": {"oneOf": [_ref("TranslateResponse"), _ref("LibreTranslateResponse")]}},
                    "application/x-ndjson": {
                        "schema": {"type": "string", "description": "one TranslateStreamEvent (JSON) a line"},
                        "x-item-schema": _ref("TranslateStreamEvent"),
                    },
                    "text/event-stream": {
                        "schema": {"type": "string", "description": "event: <type> / data: <TranslateStreamEvent>"},
                        "x-item-schema": _ref("TranslateStreamEvent"),
                    },
                },
            },
            "400": _response(
                "a bad request (LibreTranslate: also too large)",
                {"oneOf": [_ref("Error"), _ref("LibreTranslateError")]},
            ),
            **_own_errors(401),
            "403": _response("LibreTranslate: api_key missing or invalid", _ref("LibreTranslateError")),
            **_own_errors(413, 415),
            "500": _response(
                "a bug or a bad setting (LibreTranslate: also the model unavailable); no internals in the body",
                {"oneOf": [_ref("Error"), _ref("LibreTranslateError")]},
            ),
            **_own_errors(503),
        },
    }

    page_get = {
        "operationId": "page",
        "tags": ["page"],
        "summary": "The two-pane web page (Chinese left, English right), with the limits injected",
        "responses": {"200": _response("the page", {"type": "string"}, "text/html")},
    }
    health_get = {
        "operationId": "health",
        "tags": ["health"],
        "summary": "Model name, bundle hash, warm state, cold-start timings, limits, whether a key is required",
        "responses": {
            "200": _response("the model is loaded and warm", _ref("Health")),
            "503": _response("the model could not load; error says why", _ref("Health")),
        },
    }
    openapi_get = {
        "operationId": "openapi",
        "tags": ["meta"],
        "summary": "This description",
        "responses": {"200": _response("the OpenAPI 3.1 document", {"type": "object"})},
    }

    return {
        "/": {"get": page_get, "head": _head_of(page_get, "pageHead")},
        "/healthz": {"get": health_get, "head": _head_of(health_get, "healthHead")},
        OPENAPI_PATH: {"get": openapi_get, "head": _head_of(openapi_get, "openapiHead")},
        "/translate": {"post": translate_get_out, "options": _preflight("translatePreflight", "translate")},
    }


def libretranslate_paths() -> dict[str, Any]:
    """LibreTranslate's routes besides ``/translate``: ``/detect``, ``/languages``, ``/frontend/settings``."""
    lt_errors = {
        "400": _response("a bad or too large request, an unsupported language", _ref("LibreTranslateError")),
        "403": _response("api_key missing or invalid (TRANSLATE_API_KEYS is set)", _ref("LibreTranslateError")),
        "500": _response("translation failed or the model is unavailable", _ref("LibreTranslateError")),
    }
    lt_body = {
        "content": {JSON: {"schema": _ref("LibreTranslateQuery")}, FORM: {"schema": _ref("LibreTranslateQueryForm")}}
    }
    any_body = {"content": {JSON: {"schema": {"type": "object"}}, FORM: {"schema": {"type": "object"}}}}
    lt_languages_get = {
        "operationId": "libretranslateLanguages",
        "tags": ["libretranslate"],
        "summary": "LibreTranslate: the language pairs (zh -> en, zt -> en)",
        "responses": {
            "200": _response("the languages", {"type": "array", "items": _ref("LibreTranslateLanguage")}),
            "400": lt_errors["400"],
        },
    }
    lt_settings_get = {
        "operationId": "libretranslateSettings",
        "tags": ["libretranslate"],
        "summary": "LibreTranslate: the frontend settings (character limit, whether a key is required)",
        "responses": {"200": _response("the settings", _ref("LibreTranslateSettings")), "400": lt_errors["400"]},
    }

    return {
        "/detect": {
            "post": {
                "operationId": "libretranslateDetect",
                "tags": ["libretranslate"],
                "summary": "LibreTranslate: detect the Chinese variant (zh or zt) of q",
                "requestBody": {**lt_body, "required": True},
                "responses": {
                    "200": _response("the detection", {"type": "array", "items": _ref("LibreTranslateDetection")}),
                    **lt_errors,
                },
            },
            "options": _preflight("libretranslateDetectPreflight", "libretranslate"),
        },
        "/languages": {
            "get": lt_languages_get,
            "head": _head_of(lt_languages_get, "libretranslateLanguagesHead"),
            "post": _post_of(lt_languages_get, "libretranslateLanguagesPost", any_body),
            "options": _preflight("libretranslateLanguagesPreflight", "libretranslate"),
        },
        "/frontend/settings": {
            "get": lt_settings_get,
            "head": _head_of(lt_settings_get, "libretranslateSettingsHead"),
            "options": _preflight("libretranslateSettingsPreflight", "libretranslate"),
        },
    }


def deepl_paths(keys_required: bool) -> dict[str, Any]:
    """DeepL's v2 routes: ``/v2/translate``, ``/v2/languages``, ``/v2/usage``."""
    deepl_security = _security(keys_required, "DeepLAuthKey", "ApiKeyHeader", "BearerKey")
    deepl_errors = {
        "400": _response("a bad request or an unsupported language", _ref("DeepLError")),
        "403": _response("authorization failure (TRANSLATE_API_KEYS is set)", _ref("DeepLError")),
        "413": _response("the request is too large", _ref("DeepLError")),
        "500": _response("translation failed", _ref("DeepLError")),
        "503": _response("the model is unavailable or out of time (DeepL's clients retry)", _ref("DeepLError")),
    }

    def deepl_body(name: str) -> dict[str, Any]:
        return {"content": {JSON: {"schema": _ref(name)}, FORM: {"schema": _ref(name + "Form")}}}

    auth_key_query = {
        "name": "auth_key",
        "in": "query",
        "required": False,
        "schema": {"type": "string"},
        "description": "DeepL's legacy key parameter",
    }
    deepl_languages_get = {
        "operationId": "deeplLanguages",
        "tags": ["deepl"],
        "summary": "DeepL: source (ZH) or target (EN-GB, EN-US) languages",
        "security": deepl_security,
        "parameters": [
            {
                "name": "type",
                "in": "query",
                "required": False,
                "schema": _ref("DeepLLanguageType"),
            },
            auth_key_query,
        ],
        "responses": {
            "200": _response("the languages", {"type": "array", "items": _ref("DeepLLanguage")}),
            **{status: deepl_errors[status] for status in ("400", "403", "413")},
        },
    }
    deepl_usage_get = {
        "operationId": "deeplUsage",
        "tags": ["deepl"],
        "summary": "DeepL: characters translated through this API by this instance since its cold start",
        "security": deepl_security,
        "parameters": [auth_key_query],
        "responses": {
            "200": _response("the usage", _ref("DeepLUsage")),
            **{status: deepl_errors[status] for status in ("400", "403", "413")},
        },
    }

    return {
        "/v2/translate": {
            "post": {
                "operationId": "deeplTranslate",
                "tags": ["deepl"],
                "summary": "DeepL: translate text (repeated, or a JSON list) to EN, EN-US or EN-GB",
                "security": deepl_security,
                "requestBody": {**deepl_body("DeepLParameters"), "required": True},
                "responses": {"200": _response("the translations", _ref("DeepLTranslations")), **deepl_errors},
            },
            "options": _preflight("deeplTranslatePreflight", "deepl"),
        },
        "/v2/languages": {
            "get": deepl_languages_get,
            "head": _head_of(deepl_languages_get, "deeplLanguagesHead"),
            "post": _post_of(deepl_languages_get, "deeplLanguagesPost", deepl_body("DeepLLanguagesParameters")),
            "options": _preflight("deeplLanguagesPreflight", "deepl"),
        },
        "/v2/usage": {
            "get": deepl_usage_get,
            "head": _head_of(deepl_usage_get, "deeplUsageHead"),
            "post": _post_of(deepl_usage_get, "deeplUsagePost", deepl_body("DeepLUsageParameters")),
            "options": _preflight("deeplUsagePreflight", "deepl"),
        },
    }


MULTIPART = "multipart/form-data"
# what a translated file is served as (handler.storage.files.CONTENT_TYPES), by the format of its upload
_FILE_MEDIA = {"*/*": {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}}


def document_paths(keys_required: bool) -> dict[str, Any]:
    """Files: DeepL's document API (``/v2/document`` ...) and LibreTranslate's ``/translate_file`` with its download
    route (``handler.storage.documents``, ``handler.storage.translated_files``)."""
    deepl_security = _security(keys_required, "DeepLAuthKey", "ApiKeyHeader", "BearerKey")

    def deepl_error(text: str) -> dict[str, Any]:
        return _response(text, _ref("DeepLError"))

    def lt_error(text: str) -> dict[str, Any]:
        return _response(text, _ref("LibreTranslateError"))

    filename = {
        "name": "filename",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9a-f]{32}-.+$"},
        "description": "<token>-<file name>, as translatedFileUrl names it",
    }

    def preflight(operation_id: str, tag: str, parameter: dict[str, Any]) -> dict[str, Any]:
        """A CORS preflight answers any value of the path's parameter."""
        any_value = {key: value for key, value in parameter.items() if key not in ("schema", "description")}
        return {**_preflight(operation_id, tag), "parameters": [{**any_value, "schema": {"type": "string"}}]}

    document_id = {
        "name": "document_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9A-F]{32}$"},
        "description": "what POST /v2/document answered (32 hexadecimal digits)",
    }
    key_body = {
        "required": True,
        "content": {
            JSON: {"schema": _ref("DeepLDocumentKey")},
            FORM: {"schema": _ref("DeepLDocumentKey")},
        },
    }
    download = {
        "operationId": "libretranslateDownloadFile",
        "tags": ["libretranslate"],
        "summary": "LibreTranslate: a translated file, by the name translatedFileUrl gives (its token: the credential)",
        "parameters": [filename],
        "responses": {
            "200": _response("the translated file, in the Content-Type of its format", media="*/*", schema=None)
            | {"content": _FILE_MEDIA},
            "400": lt_error("not a download name (<token>-<file name>)"),
            "404": lt_error("no such file (expired, or mistyped)"),
        },
    }
    return {
        "/v2/document": {
            "post": {
                "operationId": "deeplDocumentUpload",
                "tags": ["deepl"],
                "summary": "DeepL: upload a document (.txt, .html, .md, .srt, .vtt, .docx) to translate in the "
                "background",
                "security": deepl_security,
                "requestBody": {"required": True, "content": {MULTIPART: {"schema": _ref("DeepLDocumentUpload")}}},
                "responses": {
                    "200": _response("the document's id and key", _ref("DeepLDocumentHandle")),
                    "400": deepl_error(
                        "no file, an unsupported suffix (the message lists them) or language, or an "
                        "option refused (formality more/less, glossary_id without source_lang, another output_format)"
                    ),
                    "403": deepl_error("authorization failure (TRANSLATE_API_KEYS is set)"),
                    "404": deepl_error("glossary_id names no glossary of this key"),
                    "413": deepl_error("the file is over TRANSLATE_MAX_FILE_BYTES, or the body too large"),
                    "429": deepl_error("too many documents are waiting (the local worker's queue; retry later)"),
                    "500": deepl_error("the deployment has nowhere to keep documents, or a bug"),
                    "503": deepl_error("the model is unavailable (DeepL's clients retry)"),
                },
            },
            "options": _preflight("deeplDocumentUploadPreflight", "deepl"),
        },
        "/v2/document/{document_id}": {
            "post": {
                "operationId": "deeplDocumentStatus",
                "tags": ["deepl"],
                "summary": "DeepL: a document's status (queued, translating, done, error)",
                "security": deepl_security,
                "parameters": [document_id],
                "requestBody": key_body,
                "responses": {
                    "200": _response("the status", _ref("DeepLDocumentStatus")),
                    "400": deepl_error("no document_key"),
                    "403": deepl_error("authorization failure, or not the document's key"),
                    "404": deepl_error("no such document (never uploaded, expired, or downloaded already)"),
                    "500": deepl_error("the deployment has nowhere to keep documents, or a bug"),
                },
            },
            "options": preflight("deeplDocumentStatusPreflight", "deepl", document_id),
        },
        "/v2/document/{document_id}/result": {
            "post": {
                "operationId": "deeplDocumentResult",
                "tags": ["deepl"],
                "summary": "DeepL: download the translation, once (it is deleted as it is sent)",
                "security": deepl_security,
                "parameters": [document_id],
                "requestBody": key_body,
                "responses": {
                    "200": _response("the translated document, in the Content-Type of its format")
                    | {"content": _FILE_MEDIA},
                    "400": deepl_error("no document_key"),
                    "403": deepl_error("authorization failure, or not the document's key"),
                    "404": deepl_error("no such document, downloaded already, or its translation failed"),
                    "500": deepl_error("the deployment has nowhere to keep documents, or a bug"),
                    "503": deepl_error("not translated yet (DeepL's clients wait and retry)"),
                },
            },
            "options": preflight("deeplDocumentResultPreflight", "deepl", document_id),
        },
        "/translate_file": {
            "post": {
                "operationId": "libretranslateTranslateFile",
                "tags": ["libretranslate"],
                "summary": "LibreTranslate: translate a file (.txt, .html, .md, .srt, .vtt, .docx) within the request",
                "requestBody": {"required": True, "content": {MULTIPART: {"schema": _ref("LibreTranslateFile")}}},
                "responses": {
                    "200": _response("where to download the translation", _ref("LibreTranslateFileUrl")),
                    "400": lt_error(
                        "no file, an unsupported format (the message lists them) or language, a corrupt file"
                    ),
                    "403": lt_error("api_key missing or invalid (TRANSLATE_API_KEYS is set)"),
                    "413": lt_error("the file is over TRANSLATE_MAX_FILE_BYTES"),
                    "500": lt_error("translation failed, out of time, or the model is unavailable"),
                },
            },
            "options": _preflight("libretranslateTranslateFilePreflight", "libretranslate"),
        },
        "/download_file/{filename}": {
            "get": download,
            "head": _head_of(download, "libretranslateDownloadFileHead"),
            "options": preflight("libretranslateDownloadFilePreflight", "libretranslate", filename),
        },
    }


def deepl_glossary_paths(keys_required: bool) -> dict[str, Any]:
    """DeepL's v2 glossary routes (``handler.api.compat.deepl``, stored by ``handler.storage.glossaries``)."""
    security = _security(keys_required, "DeepLAuthKey", "ApiKeyHeader", "BearerKey")
    error = _ref("DeepLError")
    errors = {
        "400": _response("a bad request (the message names the entry or parameter)", error),
        "403": _response("authorization failure (TRANSLATE_API_KEYS is set)", error),
        "413": _response(
            f"over {MAX_ENTRIES_BYTES:,} bytes or {MAX_ENTRIES:,} entries, or {MAX_GLOSSARIES} glossaries held", error
        ),
        "500": _response("the glossary store failed", error),
    }
    not_found = {"404": _response("no such glossary for this key", error)}

    def id_preflight(operation_id: str) -> dict[str, Any]:
        preflight = _preflight(operation_id, "deepl")
        preflight["responses"]["404"] = _response("the path names no glossary (its ID is not a UUID)", error)
        return {**preflight, "parameters": [glossary_id]}

    glossary_id = {
        "name": "glossary_id",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": GLOSSARY_ID_PATTERN},
        "description": "the glossary_id POST /v2/glossaries returned (a UUID)",
    }

    def operation(operation_id: str, summary: str, ok: dict[str, Any], *statuses: str) -> dict[str, Any]:
        found = {status: {**errors, **not_found}[status] for status in statuses}
        return {"operationId": operation_id, "tags": ["deepl"], "summary": summary, "security": security,
                "responses": {**ok, **found}}  # fmt: skip

    pairs_get = operation(
        "deeplGlossaryLanguagePairs",
        "DeepL: the glossary language pairs (zh → en only)",
        {"200": _response("the pairs", _ref("DeepLGlossaryLanguagePairs"))},
        "403",
    )
    list_get = operation(
        "deeplGlossaries",
        "DeepL: the caller's glossaries",
        {"200": _response("the glossaries", _ref("DeepLGlossaryList"))},
        "403",
    )
    create = operation(
        "deeplGlossaryCreate",
        f"DeepL: create a zh → en glossary from TSV or CSV entries (at most {MAX_ENTRIES:,} entries, "
        f"{MAX_ENTRIES_BYTES:,} bytes, a name of {MAX_NAME_BYTES} bytes, {MAX_GLOSSARIES} glossaries per key)",
        {"201": _response("the new glossary", _ref("DeepLGlossary"))},
        "400",
        "403",
        "413",
        "500",
    )
    create["requestBody"] = {
        "required": True,
        "content": {JSON: {"schema": _ref("DeepLGlossaryCreate")}, FORM: {"schema": _ref("DeepLGlossaryCreate")}},
    }
    one_get = operation(
        "deeplGlossary",
        "DeepL: one glossary's description",
        {"200": _response("the glossary", _ref("DeepLGlossary"))},
        "400",
        "403",
        "404",
    )
    delete = operation(
        "deeplGlossaryDelete", "DeepL: delete a glossary", {"204": _response("deleted")}, "400", "403", "404"
    )
    entries_get = operation(
        "deeplGlossaryEntries",
        "DeepL: a glossary's entries, source<TAB>target per line",
        {"200": _response("the entries", {"type": "string"}, media="text/tab-separated-values")},
        "400",
        "403",
        "404",
    )
    for with_id in (one_get, delete, entries_get):
        with_id["parameters"] = [glossary_id]
    entries_get["responses"]["415"] = _response("the Accept header allows no text/tab-separated-values", error)
    return {
        "/v2/glossary-language-pairs": {
            "get": pairs_get,
            "head": _head_of(pairs_get, "deeplGlossaryLanguagePairsHead"),
            "options": _preflight("deeplGlossaryLanguagePairsPreflight", "deepl"),
        },
        "/v2/glossaries": {
            "get": list_get,
            "head": _head_of(list_get, "deeplGlossariesHead"),
            "post": create,
            "options": _preflight("deeplGlossariesPreflight", "deepl"),
        },
        "/v2/glossaries/{glossary_id}": {
            "get": one_get,
            "head": _head_of(one_get, "deeplGlossaryHead"),
            "delete": delete,
            "options": id_preflight("deeplGlossaryPreflight"),
        },
        "/v2/glossaries/{glossary_id}/entries": {
            "get": entries_get,
            "head": _head_of(entries_get, "deeplGlossaryEntriesHead"),
            "options": id_preflight("deeplGlossaryEntriesPreflight"),
        },
    }


def _document_schemas() -> dict[str, Any]:
    file_part = {"type": "string", "contentMediaType": "application/octet-stream"}
    optional = {"type": "string"}
    return {
        "DeepLDocumentUpload": {
            "type": "object",
            "required": ["file", "target_lang"],
            "properties": {
                "file": file_part,
                "filename": optional,
                "target_lang": {"type": "string", "enum": ["EN", "EN-US", "EN-GB"]},
                "source_lang": {"type": "string", "enum": ["ZH", "ZH-HANS", "ZH-HANT"]},
                "formality": {"type": "string", "enum": ["default", "prefer_more", "prefer_less"]},
                "output_format": optional,
                "glossary_id": {
                    "type": "string",
                    "description": "a glossary of POST /v2/glossaries; needs source_lang",
                },
                "auth_key": optional,
            },
        },
        "DeepLDocumentHandle": {
            "type": "object",
            "required": ["document_id", "document_key"],
            "properties": {"document_id": {"type": "string"}, "document_key": {"type": "string"}},
        },
        "DeepLDocumentKey": {
            "type": "object",
            "required": ["document_key"],
            "properties": {"document_key": {"type": "string", "minLength": 1}, "auth_key": optional},
        },
        "DeepLDocumentStatus": {
            "type": "object",
            "required": ["document_id", "status"],
            "properties": {
                "document_id": {"type": "string"},
                "status": {"type": "string", "enum": ["queued", "translating", "done", "error"]},
                "seconds_remaining": {"type": "integer", "minimum": 0},
                "billed_characters": {"type": "integer", "minimum": 0},
                "error_message": {"type": "string"},
            },
        },
        "LibreTranslateFile": {
            "type": "object",
            "required": ["file", "target"],
            "properties": {
                "file": file_part,
                "source": {"type": "string", "enum": list(SOURCE_SPELLINGS)},
                "target": {"type": "string", "enum": ["en"]},
                "api_key": optional,
            },
        },
        "LibreTranslateFileUrl": {
            "type": "object",
            "required": ["translatedFileUrl"],
            "properties": {"translatedFileUrl": {"type": "string"}},
        },
    }


def _glossary_schemas() -> dict[str, Any]:
    return {
        "DeepLGlossaryCreate": {
            "type": "object",
            "required": ["name", "source_lang", "target_lang", "entries"],
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "source_lang": {"type": "string", "enum": ["zh", "ZH", "zh-Hans", "zh-Hant", "ZH-HANS", "ZH-HANT"]},
                "target_lang": {"type": "string", "enum": ["en", "EN", "en-US", "en-GB", "EN-US", "EN-GB"]},
                "entries": {
                    "type": "string",
                    "description": "tsv: source<TAB>target per line; csv: source,target[,source_lang,target_lang]",
                },
                "entries_format": {"type": "string", "enum": list(ENTRIES_FORMATS), "default": "tsv"},
                "auth_key": {"type": "string"},
            },
        },
        "DeepLGlossary": {
            "type": "object",
            "required": ["glossary_id", "name", "ready", "source_lang", "target_lang", "creation_time", "entry_count"],
            "properties": {
                "glossary_id": {"type": "string"},
                "name": {"type": "string"},
                "ready": {"type": "boolean"},
                "source_lang": {"type": "string", "enum": ["zh"]},
                "target_lang": {"type": "string", "enum": ["en"]},
                "creation_time": {"type": "string", "format": "date-time"},
                "entry_count": {"type": "integer", "minimum": 1},
            },
        },
        "DeepLGlossaryList": {
            "type": "object",
            "required": ["glossaries"],
            "properties": {"glossaries": {"type": "array", "items": _ref("DeepLGlossary")}},
        },
        "DeepLGlossaryLanguagePairs": {
            "type": "object",
            "required": ["supported_languages"],
            "properties": {
                "supported_languages": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["source_lang", "target_lang"],
                        "properties": {"source_lang": {"type": "string"}, "target_lang": {"type": "string"}},
                    },
                }
            },
        },
    }


def _post_of(get: dict[str, Any], operation_id: str, body: dict[str, Any]) -> dict[str, Any]:
    parameters = [p for p in get.get("parameters", []) if p["name"] != "type"]
    post = {**get, "operationId": operation_id, "requestBody": body}
    if parameters:
        post["parameters"] = parameters
    else:
        post.pop("parameters", None)
    return post


def _schemas(config: RuntimeConfig) -> dict[str, Any]:
    """The request and response schemas of all three APIs, with this deployment's limits."""
    texts = {"type": "string", "maxLength": config.max_chars}
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
    options = {
        "beam_size": _nullable({"type": "integer", "minimum": 1, "maximum": MAX_BEAM_SIZE}),
        "length_penalty": _nullable(
            {"type": "number", "minimum": LENGTH_PENALTY_RANGE[0], "maximum": LENGTH_PENALTY_RANGE[1]}
        ),
        "max_length_ratio": _nullable(
            {"type": "number", "minimum": MAX_LENGTH_RATIO_RANGE[0], "maximum": MAX_LENGTH_RATIO_RANGE[1]}
        ),
        "repetition_guard": _nullable({"type": "boolean"}),
        "format": _nullable({"type": "string", "enum": list(FORMATS)}),
        "glossary": _nullable(
            {
                "type": "object",
                "description": (
                    "Chinese term -> English term, merged over the deployment's glossary; a term holds a Chinese "
                    "character, neither side is blank or holds a line break"
                ),
                "maxProperties": MAX_REQUEST_TERMS,
                "propertyNames": {"minLength": 1, "maxLength": MAX_TERM_CHARS, "pattern": GLOSSARY_TERM_PATTERN},
                "additionalProperties": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_TARGET_CHARS,
                    "pattern": GLOSSARY_TARGET_PATTERN,
                },
            }
        ),
        "protect_spans": _nullable({"type": "boolean"}),
        "source": _nullable({"type": "string", "enum": list(SOURCE_SPELLINGS)}),
        "spans": {"type": "boolean", "description": "true: list each translation's protected spans"},
        "stream": {
            "type": "boolean",
            "description": "true: the answer is streamed, application/x-ndjson (one TranslateStreamEvent a line) or, "
            "with Accept: text/event-stream, server-sent events: a segment event per sentence (a block of html and "
            "markdown) as soon as it is done, progress events, and a last done event carrying the whole answer, or "
            "an error event when the work fails after the answer began",
        },
        "scores": _nullable(
            {"type": "boolean", "description": "true: list each translation's segments with a confidence and flags"}
        ),
    }
    offsets = {
        "type": ["array", "null"],
        "items": {"type": "integer", "minimum": 0},
        "minItems": 2,
        "maxItems": 2,
        "description": "[start, end) character offsets; null where the output's markup escaping hides the text",
    }
    scored_segment = {
        "type": "object",
        "additionalProperties": False,
        "required": [
            "source",
            "translation",
            "source_span",
            "translation_span",
            "confidence",
            "low_confidence",
            "reasons",
            "flags",
            "model_score",
        ],
        "properties": {
            "source": {"type": "string"},
            "translation": {"type": "string"},
            "source_span": offsets,
            "translation_span": offsets,
            "confidence": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "the expected sentence chrF / 100 of translations the model scored like this one",
            },
            "low_confidence": {"type": "boolean"},
            "reasons": {"type": "array", "items": {"type": "string"}},
            "flags": {
                "type": "object",
                "additionalProperties": False,
                "required": [
                    "repetition_guard",
                    "span_recovered",
                    "length_ratio",
                    "length_ratio_out_of_range",
                    "untranslated",
                ],
                "properties": {
                    "repetition_guard": {"type": "boolean"},
                    "span_recovered": {"type": "boolean"},
                    "length_ratio": {"type": "number", "minimum": 0},
                    "length_ratio_out_of_range": {"type": "boolean"},
                    "untranslated": {"type": "boolean"},
                },
            },
            "model_score": {"type": ["number", "null"], "description": "mean log-probability per output token"},
        },
    }
    string_or_list = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    one_or_more = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]}
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
    schemas: dict[str, Any] = {
        "Error": {
            "type": "object",
            "required": ["error"],
            "additionalProperties": False,
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "additionalProperties": False,
                    "properties": {
                        "code": {"type": "string", "enum": list(ERROR_CODES)},
                        "message": {"type": "string", "description": "what was wrong and what is allowed"},
                    },
                }
            },
        },
        "TranslateRequest": {
            "type": "object",
            "additionalProperties": False,
            "oneOf": [{"required": ["text"]}, {"required": ["texts"]}],
            "properties": {
                "text": texts,
                "texts": {"type": "array", "items": texts, "maxItems": config.max_texts},
                **options,
            },
        },
        "TranslateResponse": translate_response,
        "TranslateStreamEvent": {
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
        },
        "Health": {
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
                        name: {"type": "integer"}
                        for name in ("max_chars", "max_texts", "max_file_bytes", "default_beam_size")
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
        },
        "LibreTranslateRequest": {
            "type": "object",
            "required": ["q", "target"],
            "not": {"anyOf": [{"required": ["text"]}, {"required": ["texts"]}]},
            "properties": {
                "q": string_or_list,
                "source": {
                    "type": ["string", "null"],
                    "enum": ["", *SOURCE_SPELLINGS, None],
                    "description": "empty: auto",
                },
                "target": {"type": "string", "enum": ["en", "en-US", "en-GB"]},
                "format": {"type": ["string", "null"], "enum": ["text", "html", None]},
                "api_key": {"type": ["string", "null"]},
                "alternatives": {
                    "type": ["integer", "null"],
                    "minimum": 0,
                    "maximum": MAX_ALTERNATIVES,
                    "description": "up to this many other distinct translations of each text (more is refused)",
                },
            },
        },
        "LibreTranslateQuery": {
            "type": "object",
            "required": ["q"],
            "properties": {"q": string_or_list, "api_key": {"type": ["string", "null"]}},
        },
        "LibreTranslateResponse": {
            "type": "object",
            "required": ["translatedText"],
            "properties": {
                "translatedText": string_or_list,
                "detectedLanguage": {
                    "oneOf": [
                        _ref("LibreTranslateDetection"),
                        {"type": "array", "items": _ref("LibreTranslateDetection")},
                    ]
                },
                "alternatives": {
                    "type": "array",
                    "description": "a list of strings for one q, a list of such lists for a list",
                    "items": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
                },
            },
        },
        "LibreTranslateDetection": {
            "type": "object",
            "required": ["language", "confidence"],
            "properties": {"language": {"type": "string"}, "confidence": {"type": "number"}},
        },
        "LibreTranslateLanguage": {
            "type": "object",
            "required": ["code", "name", "targets"],
            "properties": {
                "code": {"type": "string"},
                "name": {"type": "string"},
                "targets": {"type": "array", "items": {"type": "string"}},
            },
        },
        "LibreTranslateSettings": {
            "type": "object",
            "required": ["charLimit", "keyRequired"],
            "properties": {"charLimit": {"type": "integer"}, "keyRequired": {"type": "boolean"}},
        },
        "LibreTranslateError": {
            "type": "object",
            "required": ["error"],
            "properties": {"error": {"type": "string"}},
        },
        "DeepLParameters": {
            "type": "object",
            "required": ["text", "target_lang"],
            "description": "DeepL's other options (formality, split_sentences, context, ...) are accepted and ignored",
            "additionalProperties": _ref("DeepLIgnoredOption"),
            "properties": {
                "text": one_or_more,
                "source_lang": {"type": ["string", "null"], "enum": ["ZH", "ZH-HANS", "ZH-HANT", None]},
                "target_lang": {"type": "string", "enum": ["EN", "EN-US", "EN-GB"]},
                "tag_handling": {"type": ["string", "null"], "enum": ["html", None]},
                "glossary_id": {
                    "type": ["string", "null"],
                    "pattern": f"^$|{GLOSSARY_ID_PATTERN}",
                    "description": "a glossary of POST /v2/glossaries (needs source_lang); unknown: 404",
                },
                "auth_key": {"type": ["string", "null"]},
            },
            "allOf": [
                {  # a glossary needs source_lang, as on DeepL
                    "if": {
                        "required": ["glossary_id"],
                        "properties": {"glossary_id": {"type": "string", "minLength": 1}},
                    },
                    "then": {"required": ["source_lang"], "properties": {"source_lang": {"type": "string"}}},
                },
                {  # html is cut into blocks with private-use characters for its tags: a text may not hold them
                    "if": {"required": ["tag_handling"], "properties": {"tag_handling": {"const": "html"}}},
                    "then": {
                        "properties": {
                            "text": {
                                "oneOf": [
                                    {"type": "string", "pattern": NO_MARKUP_PATTERN},
                                    {"type": "array", "items": {"type": "string", "pattern": NO_MARKUP_PATTERN}},
                                ]
                            }
                        }
                    },
                },
            ],
        },
        "DeepLIgnoredOption": {
            "description": "any JSON value a body may hold (read_json: integers of at most 30 digits, finite numbers)",
            "anyOf": [
                {"type": ["string", "boolean", "null"]},
                {"type": "integer", "minimum": -(10**30 - 1), "maximum": 10**30 - 1},
                {"type": "number", "not": {"type": "integer"}},
                {"type": "array", "items": _ref("DeepLIgnoredOption")},
                {"type": "object", "additionalProperties": _ref("DeepLIgnoredOption")},
            ],
        },
        "DeepLLanguageType": {"type": "string", "enum": ["source", "target", ""], "description": "empty: source"},
        "DeepLLanguageTypeOrNull": {"type": ["string", "null"], "enum": ["source", "target", "", None]},
        "DeepLLanguagesParameters": {
            "type": "object",
            "properties": {"type": _ref("DeepLLanguageTypeOrNull"), "auth_key": {"type": ["string", "null"]}},
        },
        "DeepLUsageParameters": {"type": "object", "properties": {"auth_key": {"type": ["string", "null"]}}},
        "DeepLTranslations": {
            "type": "object",
            "required": ["translations"],
            "properties": {
                "translations": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["detected_source_language", "text"],
                        "properties": {
                            "detected_source_language": {"type": "string"},
                            "text": {"type": "string"},
                            "billed_characters": {"type": "integer"},
                        },
                    },
                }
            },
        },
        "DeepLLanguage": {
            "type": "object",
            "required": ["language", "name"],
            "properties": {"language": {"type": "string"}, "name": {"type": "string"}},
        },
        "DeepLUsage": {
            "type": "object",
            "required": ["character_count", "character_limit"],
            "properties": {"character_count": {"type": "integer"}, "character_limit": {"type": "integer"}},
        },
        "DeepLError": {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}},
    }
    for name in ("LibreTranslateRequest", "LibreTranslateQuery", "DeepLParameters", "DeepLLanguagesParameters",
                 "DeepLUsageParameters"):  # fmt: skip
        schemas[name + "Form"] = _form_variant(schemas[name])
    schemas["DeepLLanguagesParametersForm"]["properties"]["type"] = _ref("DeepLLanguageType")
    return schemas


def _form_variant(schema: Any) -> Any:
    """A JSON body's schema as a form body's: a form has no null, and an empty list is no field at all."""
    if isinstance(schema, list):
        return [_form_variant(item) for item in schema if item != {"type": "null"} and item is not None]
    if not isinstance(schema, dict):
        return schema
    form = {key: _form_variant(value) for key, value in schema.items()}
    if isinstance(form.get("type"), list):
        kinds = [kind for kind in form["type"] if kind != "null"]
        form["type"] = kinds[0] if len(kinds) == 1 else kinds
    if form.get("type") == "array":
        form.setdefault("minItems", 1)
    return form


def described_operations(document: dict[str, Any]) -> set[tuple[str, str]]:
    """``{(METHOD, path)}`` of every operation the document describes."""
    methods = ("get", "head", "post", "put", "patch", "delete", "options")
    return {(method.upper(), path) for path, item in document["paths"].items() for method in item if method in methods}


if __name__ == "__main__":
    print(json.dumps(build_document(RuntimeConfig.from_env()), indent=1, ensure_ascii=False))
