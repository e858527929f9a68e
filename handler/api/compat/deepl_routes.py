"""DeepL's routes, declared once (``handler.api.routes``): each method and path template, the method of
``handler.api.compat.deepl.DeepLApi`` that answers it, its request shape (``handler.api.compat.deepl_shapes``) and
its responses. ``DeepLApi`` routes by this table (404 and 405 included) and ``handler.api.openapi`` describes it."""

from __future__ import annotations

from typing import Any

from handler.api.compat.deepl_shapes import (
    GLOSSARY_ID_PATTERN,
    DeepLDictionaryQuery,
    DeepLDocumentKey,
    DeepLDocumentUpload,
    DeepLGlossaryCreate,
    DeepLKeyRequest,
    DeepLLanguagesRequest,
    DeepLMultilingualGlossaryCreate,
    DeepLTranslateRequest,
)
from handler.api.describe import file_response, ref, response
from handler.api.routes import PathParameter, Route, RouteTable
from handler.api.shapes import FORM_MEDIA, JSON_MEDIA, MULTIPART_MEDIA
from handler.formats import FILE_SUFFIXES
from handler.storage.documents import ID_PATTERN
from handler.storage.glossaries import MAX_ENTRIES, MAX_ENTRIES_BYTES, MAX_GLOSSARIES, MAX_NAME_BYTES

TAG = "deepl"
ERROR_SCHEMA = "DeepLError"  # handler.api.compat.deepl_openapi.DeepLError
COMMON_ERRORS = {
    "400": "a bad request or an unsupported language",
    "403": "authorization failure (TRANSLATE_API_KEYS is set)",
    "404": "no such resource",
    "413": "the request is too large",
    "429": "too many requests: the key is over its rate, or the decoder is busy (Retry-After; DeepL's clients retry)",
    "456": "quota exceeded: the key's characters for the period are used up (Retry-After: seconds to the next period)",
    "500": "translation failed",
    "503": "the model is unavailable or out of time (DeepL's clients retry)",
}
BODY = (JSON_MEDIA, FORM_MEDIA)
GLOSSARY = "/v2/glossaries/{glossary_id}"
GLOSSARY_ENTRIES = "/v2/glossaries/{glossary_id}/entries"
GLOSSARIES_V3 = "/v3/glossaries"
GLOSSARY_V3 = "/v3/glossaries/{glossary_id}"
GLOSSARY_ENTRIES_V3 = "/v3/glossaries/{glossary_id}/entries"
DOCUMENT = "/v2/document/{document_id}"
DOCUMENT_RESULT = "/v2/document/{document_id}/result"
DOCUMENT_ID_PATTERN = f"^{ID_PATTERN.pattern}$"  # what POST /v2/document answers (handler.storage.documents)


def errors(*statuses: str, **texts: str) -> dict[str, Any]:
    """DeepL's error answers (``{"message"}``): the common text of each status, or the one given as ``_<status>``."""
    return {
        status: response(texts.get(f"_{status}", COMMON_ERRORS.get(status, "")), ref(ERROR_SCHEMA))
        for status in statuses
    }


_TOO_LARGE_GLOSSARY = (
    f"over {MAX_ENTRIES_BYTES:,} bytes or {MAX_ENTRIES:,} entries, or {MAX_GLOSSARIES} glossaries held"
)
_GLOSSARY_ERRORS = errors(
    "400", "403", "404", "413", "500",
    _400="a bad request (the message names the entry or parameter)",
    _404="no such glossary for this key",
    _413=_TOO_LARGE_GLOSSARY,
    _500="the glossary store failed",
)  # fmt: skip
_V3_ERRORS = errors(
    "400", "403", "404", "413", "500",
    _400="a bad request (the message names the entry or parameter; more than one dictionary)",
    _404="no such glossary for this key, or no dictionary of that language pair in it",
    _413=_TOO_LARGE_GLOSSARY,
    _500="the glossary store failed",
)  # fmt: skip
_DOCUMENT_ERROR_500 = response("the deployment has nowhere to keep documents, or a bug", ref(ERROR_SCHEMA))


def _some(answers: dict[str, Any], *statuses: str) -> dict[str, Any]:
    return {status: answers[status] for status in statuses}


def _error(text: str) -> dict[str, Any]:
    return response(text, ref(ERROR_SCHEMA))


_LANGUAGES = {
    "200": response("the languages", {"type": "array", "items": ref("DeepLLanguage")}),
    **errors("400", "403", "413"),
}
_USAGE = {"200": response("the usage", ref("DeepLUsage")), **errors("400", "403", "413")}
_USAGE_SUMMARY = (
    "DeepL: the calling key's characters this period and its limit, across instances (without keys: this instance's "
    "since its cold start)"
)
_STATUS_RESPONSES = {
    "200": response("the status", ref("DeepLDocumentStatus")),
    "400": _error("no document_key"),
    "403": _error("authorization failure, or not the document's key"),
    "404": _error("no such document of this key (never uploaded, expired, downloaded already, or another key's)"),
    "500": _DOCUMENT_ERROR_500,
}
_RESULT_RESPONSES = {
    "200": file_response("the translated document, in the Content-Type of its format"),
    "400": _error("no document_key"),
    "403": _error("authorization failure, or not the document's key"),
    "404": _error("no such document of this key, downloaded already, or its translation failed"),
    "500": _DOCUMENT_ERROR_500,
    "503": _error("not translated yet (DeepL's clients wait and retry)"),
}
_UPLOAD_RESPONSES = {
    "200": response("the document's id and key", ref("DeepLDocumentHandle")),
    "400": _error(
        "no file, an empty one, an unsupported suffix (the message lists them) or language, a file its format cannot "
        "read, or an option refused (formality more/less, glossary_id without source_lang, another output_format)"
    ),
    "403": _error("authorization failure (TRANSLATE_API_KEYS is set)"),
    "404": _error("glossary_id names no glossary of this key"),
    "413": _error("the file is over TRANSLATE_MAX_FILE_BYTES, or the body too large"),
    "429": _error("too many documents are waiting (the local worker's queue; retry later)"),
    "500": _error("the deployment has nowhere to keep documents, or a bug"),
    "503": _error("the model is unavailable (DeepL's clients retry)"),
}
_TSV = response("the entries", {"type": "string"}, media="text/tab-separated-values")

DEEPL_ROUTES = RouteTable(
    tag=TAG,
    schemes=("DeepLAuthKey", "ApiKeyHeader", "BearerKey"),
    error_schema=ERROR_SCHEMA,
    parameters=(
        PathParameter(
            "document_id",
            DOCUMENT_ID_PATTERN,
            "what POST /v2/document answered (32 hexadecimal digits)",
            matches="[^/]+",  # any other id is the document store's 404
        ),
        PathParameter("glossary_id", GLOSSARY_ID_PATTERN, "the glossary_id POST /v2/glossaries (or v3's) returned"),
    ),
    routes=(
        Route(
            "POST", "/v2/translate", "translate", "deeplTranslate",
            "DeepL: translate text (repeated, or a JSON list) to EN, EN-US or EN-GB",
            {
                "200": response("the translations", ref("DeepLTranslations")),
                **errors("400", "403", "413", "429", "456", "500", "503"),
                **errors("404", _404="glossary_id names no glossary of this key"),
            },
            DeepLTranslateRequest, BODY,
        ),
        Route("GET", "/v2/languages", "languages", "deeplLanguages",
              "DeepL: source (ZH) or target (EN-GB, EN-US) languages", _LANGUAGES, DeepLLanguagesRequest),
        Route("POST", "/v2/languages", "languages", "deeplLanguagesPost",
              "DeepL: source (ZH) or target (EN-GB, EN-US) languages", _LANGUAGES, DeepLLanguagesRequest, BODY),
        Route("GET", "/v2/usage", "usage", "deeplUsage", _USAGE_SUMMARY, _USAGE, DeepLKeyRequest),
        Route("POST", "/v2/usage", "usage", "deeplUsagePost", _USAGE_SUMMARY, _USAGE, DeepLKeyRequest, BODY),
        Route("POST", "/v2/document", "upload", "deeplDocumentUpload",
              f"DeepL: upload a document ({', '.join(FILE_SUFFIXES)}) to translate in the background",
              _UPLOAD_RESPONSES, DeepLDocumentUpload, (MULTIPART_MEDIA,)),
        Route("POST", DOCUMENT, "document_status", "deeplDocumentStatus",
              "DeepL: a document's status (queued, translating, done, error)", _STATUS_RESPONSES, DeepLDocumentKey,
              BODY),
        Route("POST", DOCUMENT_RESULT, "document_result", "deeplDocumentResult",
              "DeepL: download the translation, once (it is deleted as it is sent)", _RESULT_RESPONSES,
              DeepLDocumentKey, BODY),
        Route("GET", "/v2/glossaries", "glossaries", "deeplGlossaries", "DeepL: the caller's glossaries",
              {"200": response("the glossaries", ref("DeepLGlossaryList")), **_some(_GLOSSARY_ERRORS, "403")}),
        Route("POST", "/v2/glossaries", "create_glossary", "deeplGlossaryCreate",
              f"DeepL: create a zh → en glossary from TSV or CSV entries (at most {MAX_ENTRIES:,} entries, "
              f"{MAX_ENTRIES_BYTES:,} bytes, a name of {MAX_NAME_BYTES} bytes, {MAX_GLOSSARIES} glossaries per key)",
              {"201": response("the new glossary", ref("GlossaryDescription")),
               **_some(_GLOSSARY_ERRORS, "400", "403", "413", "500")},
              DeepLGlossaryCreate, BODY),
        Route("GET", GLOSSARY, "glossary", "deeplGlossary", "DeepL: one glossary's description",
              {"200": response("the glossary", ref("GlossaryDescription")),
               **_some(_GLOSSARY_ERRORS, "400", "403", "404")}),
        Route("DELETE", GLOSSARY, "delete_glossary", "deeplGlossaryDelete", "DeepL: delete a glossary",
              {"204": response("deleted"), **_some(_GLOSSARY_ERRORS, "400", "403", "404")}),
        Route("GET", GLOSSARY_ENTRIES, "glossary_entries", "deeplGlossaryEntries",
              "DeepL: a glossary's entries, source<TAB>target per line",
              {"200": _TSV, **_some(_GLOSSARY_ERRORS, "400", "403", "404"),
               "415": _error("the Accept header allows no text/tab-separated-values")}),
        Route("GET", "/v2/glossary-language-pairs", "glossary_language_pairs", "deeplGlossaryLanguagePairs",
              "DeepL: the glossary language pairs (zh → en only)",
              {"200": response("the pairs", ref("DeepLGlossaryLanguagePairs")), **_some(_GLOSSARY_ERRORS, "403")}),
        Route("GET", GLOSSARIES_V3, "glossaries_v3", "deeplMultilingualGlossaries",
              "DeepL v3: the caller's glossaries (v2's too)",
              {"200": response("the glossaries", ref("DeepLMultilingualGlossaryList")), **_some(_V3_ERRORS, "403")}),
        Route("POST", GLOSSARIES_V3, "create_glossary_v3", "deeplMultilingualGlossaryCreate",
              "DeepL v3: create a glossary of one zh → en dictionary (TSV or CSV entries)",
              {"201": response("the new glossary", ref("MultilingualGlossaryDescription")),
               **_some(_V3_ERRORS, "400", "403", "413", "500")},
              DeepLMultilingualGlossaryCreate, (JSON_MEDIA,)),
        Route("GET", GLOSSARY_V3, "glossary_v3", "deeplMultilingualGlossary", "DeepL v3: one glossary's description",
              {"200": response("the glossary", ref("MultilingualGlossaryDescription")),
               **_some(_V3_ERRORS, "400", "403", "404")}),
        Route("DELETE", GLOSSARY_V3, "delete_glossary", "deeplMultilingualGlossaryDelete",
              "DeepL v3: delete a glossary", {"204": response("deleted"), **_some(_V3_ERRORS, "400", "403", "404")}),
        Route("GET", GLOSSARY_ENTRIES_V3, "glossary_entries_v3", "deeplMultilingualGlossaryEntries",
              "DeepL v3: the entries of a glossary's dictionary (TSV text in JSON)",
              {"200": response("the dictionary's entries", ref("DeepLMultilingualGlossaryEntries")),
               **_some(_V3_ERRORS, "400", "403", "404")},
              DeepLDictionaryQuery),
    ),
)  # fmt: skip
ROUTES: dict[str, tuple[str, ...]] = DEEPL_ROUTES.methods()
