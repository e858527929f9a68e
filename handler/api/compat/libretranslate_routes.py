"""LibreTranslate's routes, declared once (``handler.api.routes``): each method and path template, the method of
``handler.api.compat.libretranslate.LibreTranslateApi`` that answers it, whether it checks the key and reads the
request's fields, its request shape (``handler.api.compat.libretranslate_shapes``) and its responses.
``LibreTranslateApi`` routes by this table (404 and 405 included) and ``handler.api.openapi`` describes it; its
``POST /translate`` shares the path of this server's own and is described there, with both request shapes."""

from __future__ import annotations

from typing import Any

from handler.api.compat.libretranslate_shapes import (
    LibreTranslateFile,
    LibreTranslateKeyQuery,
    LibreTranslateQuery,
    LibreTranslateRequest,
)
from handler.api.describe import file_response, ref, response
from handler.api.routes import PathParameter, Route, RouteTable
from handler.api.shapes import FORM_MEDIA, JSON_MEDIA, MULTIPART_MEDIA
from handler.config import RuntimeConfig
from handler.formats import FILE_SUFFIXES
from handler.storage.translated_files import TOKEN_CHARS

TAG = "libretranslate"
ERROR_SCHEMA = "LibreTranslateError"  # handler.api.compat.libretranslate_openapi.LibreTranslateError
COMMON_ERRORS = {
    "400": "a bad or too large request, an unsupported language, no api_key where one is needed",
    "403": "api_key invalid (TRANSLATE_API_KEYS is set)",
    "429": "the key is over its rate or its character quota, or the decoder is busy (Retry-After: seconds to wait)",
    "500": "translation failed or the model is unavailable",
}
BODY = (JSON_MEDIA, FORM_MEDIA)
DOWNLOAD_PREFIX = "/download_file/"
# a download name as handler.storage.translated_files reads it (its "." matches anything but a line feed)
DOWNLOAD_NAME_PATTERN = f"^[0-9a-f]{{{TOKEN_CHARS}}}-[^\\n]+$"


def errors(*statuses: str) -> dict[str, Any]:
    """LibreTranslate's error answers (``{"error"}``) with the common text of each status."""
    return {status: response(COMMON_ERRORS[status], ref(ERROR_SCHEMA)) for status in statuses}


def _error(text: str) -> dict[str, Any]:
    return response(text, ref(ERROR_SCHEMA))


def _any_body(config: RuntimeConfig) -> dict[str, Any]:
    """``POST /suggest``'s body: anything (it is answered 403 unread)."""
    return {"content": {media: {"schema": {}} for media in (JSON_MEDIA, FORM_MEDIA, MULTIPART_MEDIA)}}


_TRANSLATE_FILE_RESPONSES = {
    "200": response("where to download the translation", ref("LibreTranslateFileUrl")),
    "400": _error("no file, an unsupported format (the message lists them) or language, a corrupt file"),
    **errors("403"),
    "413": _error("the file is over TRANSLATE_MAX_FILE_BYTES"),
    **errors("429"),
    "500": _error("translation failed, out of time, or the model is unavailable"),
}
_DOWNLOAD_RESPONSES = {
    "200": file_response("the translated file, in the Content-Type of its format"),
    "400": _error("not a download name (<token>-<file name>)"),
    "404": _error("no such file (expired, or mistyped)"),
}

LIBRETRANSLATE_ROUTES = RouteTable(
    tag=TAG,
    error_schema=ERROR_SCHEMA,
    parameters=(
        PathParameter(
            "filename",
            DOWNLOAD_NAME_PATTERN,
            "<token>-<file name>, as translatedFileUrl names it",
            matches="[\\s\\S]+",  # any other name is answered 400 (not a download name) by the route
        ),
    ),
    routes=(
        # described with this server's own POST /translate (handler.api.own_routes), which names both shapes
        Route("POST", "/translate", "translate", "libretranslateTranslate", "LibreTranslate: translate q",
              {}, LibreTranslateRequest, BODY, described=False),
        Route("POST", "/detect", "detect", "libretranslateDetect",
              "LibreTranslate: detect the Chinese variant (zh-Hans or zh-Hant) of q",
              {"200": response("the detection", {"type": "array", "items": ref("LibreTranslateDetection")}),
               **errors("400", "403", "429", "500")},
              LibreTranslateQuery, BODY),
        Route("GET", "/languages", "languages", "libretranslateLanguages",
              "LibreTranslate: the language pairs (zh-Hans -> en, zh-Hant -> en)",
              {"200": response("the languages", {"type": "array", "items": ref("LibreTranslateLanguage")}),
               **errors("400")},
              auth=False),
        Route("GET", "/frontend/settings", "settings", "libretranslateSettings",
              "LibreTranslate: the frontend settings (character limit, whether a key is required)",
              {"200": response("the settings", ref("LibreTranslateSettings")), **errors("400")}, auth=False),
        Route("POST", "/translate_file", "translate_file", "libretranslateTranslateFile",
              f"LibreTranslate: translate a file ({', '.join(FILE_SUFFIXES)}) within the request",
              _TRANSLATE_FILE_RESPONSES, LibreTranslateFile, (MULTIPART_MEDIA,)),
        Route("GET", DOWNLOAD_PREFIX + "{filename}", "download", "libretranslateDownloadFile",
              "LibreTranslate: a translated file, by the name translatedFileUrl gives (its token: the credential)",
              _DOWNLOAD_RESPONSES, auth=False, reads=False),
        Route("GET", "/usage", "usage", "libretranslateUsage",
              "this server's: the calling key's characters and requests this period and its limits (LibreTranslate "
              "has no such route)",
              {"200": response("the key's usage", ref("LibreTranslateUsage")),
               "403": _error("api_key invalid, or this server has no keys (TRANSLATE_API_KEYS): nothing is counted "
                             "per key")},
              LibreTranslateKeyQuery),
        Route("GET", "/health", "health", "libretranslateHealth",
              'LibreTranslate: whether the server can translate ({"status": "ok"}); open without a key',
              {"200": response("healthy", ref("LibreTranslateHealth")),
               "500": _error("the model is unavailable (the message says why)")},
              auth=False, reads=False),
        Route("GET", "/spec", "spec", "libretranslateSpec",
              "LibreTranslate: the OpenAPI document (this one, as /openapi.json serves it)",
              {"200": response("the OpenAPI document", {"type": "object"})}, auth=False, reads=False),
        Route("POST", "/suggest", "suggest", "libretranslateSuggest",
              "LibreTranslate: suggestions are off on this server (403, whatever the body)",
              {"403": _error("suggestions are disabled on this server")},
              auth=False, reads=False, request_body=_any_body),
    ),
)  # fmt: skip
ROUTES: dict[str, tuple[str, ...]] = LIBRETRANSLATE_ROUTES.methods()
