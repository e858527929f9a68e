"""LibreTranslate's part of the OpenAPI description (``handler.api.openapi`` assembles it): its routes besides the
``POST /translate`` it shares with this server's API, and its request and response schemas, as
``handler.api.compat.libretranslate`` reads and answers them."""

from __future__ import annotations

from typing import Any

from handler.api.describe import (
    FORM,
    JSON,
    MULTIPART,
    NO_MARKUP_PATTERN,
    file_response,
    head_of,
    path_parameter,
    preflight,
    ref,
    response,
    with_form_variants,
)
from handler.config import RuntimeConfig
from handler.formats import FILE_SUFFIXES
from handler.options import MAX_ALTERNATIVES, SOURCE_SPELLINGS
from handler.storage.translated_files import TOKEN_CHARS

TAG = "libretranslate"
# a download name as handler.storage.translated_files reads it (its "." matches anything but a line feed)
DOWNLOAD_NAME_PATTERN = f"^[0-9a-f]{{{TOKEN_CHARS}}}-[^\\n]+$"


def libretranslate_paths() -> dict[str, Any]:
    """LibreTranslate's routes besides ``/translate``: ``/detect``, ``/languages``, ``/frontend/settings``, ``/health``,
    ``/spec``, ``/suggest`` and its files: ``/translate_file`` and the download route
    (``handler.storage.translated_files``)."""
    lt_errors = {
        "400": response(
            "a bad or too large request, an unsupported language, no api_key where one is needed",
            ref("LibreTranslateError"),
        ),
        "403": response("api_key invalid (TRANSLATE_API_KEYS is set)", ref("LibreTranslateError")),
        "500": response("translation failed or the model is unavailable", ref("LibreTranslateError")),
    }
    lt_body = {
        "content": {JSON: {"schema": ref("LibreTranslateQuery")}, FORM: {"schema": ref("LibreTranslateQueryForm")}}
    }
    lt_languages_get = {
        "operationId": "libretranslateLanguages",
        "tags": [TAG],
        "summary": "LibreTranslate: the language pairs (zh-Hans -> en, zh-Hant -> en)",
        "responses": {
            "200": response("the languages", {"type": "array", "items": ref("LibreTranslateLanguage")}),
            "400": lt_errors["400"],
        },
    }
    lt_settings_get = {
        "operationId": "libretranslateSettings",
        "tags": [TAG],
        "summary": "LibreTranslate: the frontend settings (character limit, whether a key is required)",
        "responses": {"200": response("the settings", ref("LibreTranslateSettings")), "400": lt_errors["400"]},
    }

    return {
        **_file_paths(lt_errors),
        **_service_paths(),
        "/detect": {
            "post": {
                "operationId": "libretranslateDetect",
                "tags": [TAG],
                "summary": "LibreTranslate: detect the Chinese variant (zh-Hans or zh-Hant) of q",
                "requestBody": {**lt_body, "required": True},
                "responses": {
                    "200": response("the detection", {"type": "array", "items": ref("LibreTranslateDetection")}),
                    **lt_errors,
                },
            },
            "options": preflight("libretranslateDetectPreflight", TAG),
        },
        "/languages": {
            "get": lt_languages_get,
            "head": head_of(lt_languages_get, "libretranslateLanguagesHead"),
            "options": preflight("libretranslateLanguagesPreflight", TAG),
        },
        "/frontend/settings": {
            "get": lt_settings_get,
            "head": head_of(lt_settings_get, "libretranslateSettingsHead"),
            "options": preflight("libretranslateSettingsPreflight", TAG),
        },
    }


def _service_paths() -> dict[str, Any]:
    """``/health`` (what LibreTranslate's own health check asks), ``/spec`` (this document) and ``/suggest`` (answered
    as LibreTranslate does with suggestions off: 403)."""
    health = {
        "operationId": "libretranslateHealth",
        "tags": [TAG],
        "summary": 'LibreTranslate: whether the server can translate ({"status": "ok"}); open without a key',
        "responses": {
            "200": response("healthy", ref("LibreTranslateHealth")),
            "500": response("the model is unavailable (the message says why)", ref("LibreTranslateError")),
        },
    }
    spec = {
        "operationId": "libretranslateSpec",
        "tags": [TAG],
        "summary": "LibreTranslate: the OpenAPI document (this one, as /openapi.json serves it)",
        "responses": {"200": response("the OpenAPI document", {"type": "object"})},
    }
    suggest = {
        "operationId": "libretranslateSuggest",
        "tags": [TAG],
        "summary": "LibreTranslate: suggestions are off on this server (403, whatever the body)",
        "requestBody": {"content": {JSON: {"schema": {}}, FORM: {"schema": {}}, MULTIPART: {"schema": {}}}},
        "responses": {"403": response("suggestions are disabled on this server", ref("LibreTranslateError"))},
    }
    return {
        "/health": {
            "get": health,
            "head": head_of(health, "libretranslateHealthHead"),
            "options": preflight("libretranslateHealthPreflight", TAG),
        },
        "/spec": {
            "get": spec,
            "head": head_of(spec, "libretranslateSpecHead"),
            "options": preflight("libretranslateSpecPreflight", TAG),
        },
        "/suggest": {"post": suggest, "options": preflight("libretranslateSuggestPreflight", TAG)},
    }


def _file_paths(lt_errors: dict[str, Any]) -> dict[str, Any]:
    filename = path_parameter("filename", DOWNLOAD_NAME_PATTERN, "<token>-<file name>, as translatedFileUrl names it")
    download = {
        "operationId": "libretranslateDownloadFile",
        "tags": [TAG],
        "summary": "LibreTranslate: a translated file, by the name translatedFileUrl gives (its token: the credential)",
        "parameters": [filename],
        "responses": {
            "200": file_response("the translated file, in the Content-Type of its format"),
            "400": response("not a download name (<token>-<file name>)", ref("LibreTranslateError")),
            "404": response("no such file (expired, or mistyped)", ref("LibreTranslateError")),
        },
    }
    translate_file = {
        "operationId": "libretranslateTranslateFile",
        "tags": [TAG],
        "summary": f"LibreTranslate: translate a file ({', '.join(FILE_SUFFIXES)}) within the request",
        "requestBody": {"required": True, "content": {MULTIPART: {"schema": ref("LibreTranslateFile")}}},
        "responses": {
            "200": response("where to download the translation", ref("LibreTranslateFileUrl")),
            "400": response(
                "no file, an unsupported format (the message lists them) or language, a corrupt file",
                ref("LibreTranslateError"),
            ),
            "403": lt_errors["403"],
            "413": response("the file is over TRANSLATE_MAX_FILE_BYTES", ref("LibreTranslateError")),
            "500": response("translation failed, out of time, or the model is unavailable", ref("LibreTranslateError")),
        },
    }
    return {
        "/translate_file": {"post": translate_file, "options": preflight("libretranslateTranslateFilePreflight", TAG)},
        "/download_file/{filename}": {
            "get": download,
            "head": head_of(download, "libretranslateDownloadFileHead"),
            "options": preflight("libretranslateDownloadFilePreflight", TAG, filename),
        },
    }


def _answer_schemas() -> dict[str, Any]:
    """What LibreTranslate's routes answer: translations, detections, languages, settings, health, errors, files."""
    string_or_list = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    return {
        "LibreTranslateResponse": {
            "type": "object",
            "required": ["translatedText"],
            "properties": {
                "translatedText": string_or_list,
                "detectedLanguage": {
                    "oneOf": [
                        ref("LibreTranslateDetection"),
                        {"type": "array", "items": ref("LibreTranslateDetection")},
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
        "LibreTranslateHealth": {
            "type": "object",
            "required": ["status"],
            "properties": {"status": {"const": "ok"}},
        },
        "LibreTranslateError": {
            "type": "object",
            "required": ["error"],
            "properties": {"error": {"type": "string"}},
        },
        "LibreTranslateFile": {
            "type": "object",
            "required": ["file", "source", "target"],
            "properties": {
                "file": {"type": "string", "contentMediaType": "application/octet-stream"},
                "source": {"type": "string", "enum": list(SOURCE_SPELLINGS)},
                "target": {"type": "string", "enum": ["en"]},
                "encoding": {
                    "type": "string",
                    "description": "this server's extension (LibreTranslate has no such field): a text file's "
                    "encoding, e.g. big5 or gb18030; else detected, and a file too short to tell is refused naming it",
                },
                "api_key": {"type": "string"},
            },
        },
        "LibreTranslateFileUrl": {
            "type": "object",
            "required": ["translatedFileUrl"],
            "properties": {"translatedFileUrl": {"type": "string"}},
        },
    }


def libretranslate_schemas(config: RuntimeConfig) -> dict[str, Any]:
    """LibreTranslate's request and response shapes (each JSON body's form variant too), with the deployment's
    limits on what is translated (TRANSLATE_MAX_CHARS a text, TRANSLATE_MAX_TEXTS texts)."""
    # LibreTranslate's charLimit is each text's; an empty q ("" or []) is its 400 (app.py: if not q)
    text = {"type": "string", "maxLength": config.max_chars}
    texts = {
        "oneOf": [
            {**text, "minLength": 1},
            {"type": "array", "items": text, "minItems": 1, "maxItems": config.max_texts},
        ]
    }
    query = {
        "oneOf": [{"type": "string", "minLength": 1}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]
    }
    no_markup = {"type": "string", "pattern": NO_MARKUP_PATTERN}
    schemas: dict[str, Any] = {
        "LibreTranslateRequest": {
            "type": "object",
            "required": ["q", "source", "target"],
            "not": {"anyOf": [{"required": ["text"]}, {"required": ["texts"]}]},
            # html is cut with private-use characters for its tags (handler.text.markup): its texts may not hold them
            "if": {"required": ["format"], "properties": {"format": {"const": "html"}}},
            "then": {"properties": {"q": {"oneOf": [no_markup, {"type": "array", "items": no_markup}]}}},
            "properties": {
                "q": texts,
                "source": {
                    "type": "string",
                    "enum": list(SOURCE_SPELLINGS),
                    "description": "zh-Hans, zh-Hant (or zh, zt, auto...); required, as LibreTranslate has it",
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
            "properties": {"q": query, "api_key": {"type": ["string", "null"]}},
        },
        **_answer_schemas(),
    }
    forms = with_form_variants(schemas, "LibreTranslateRequest", "LibreTranslateQuery")
    for name in ("LibreTranslateRequestForm", "LibreTranslateQueryForm"):
        # a form's q= is empty, LibreTranslate's 400, in a list too (a JSON list may hold "": _queries)
        array = forms[name]["properties"]["q"]["oneOf"][1]
        forms[name]["properties"]["q"]["oneOf"][1] = {**array, "items": {**array["items"], "minLength": 1}}
    return forms
