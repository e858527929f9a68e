"""DeepL's part of the OpenAPI description (``handler.api.openapi`` assembles it): its v2 routes (text, languages,
usage, documents, glossaries), its v3 multilingual glossary routes, and their request and response schemas, as
``handler.api.compat.deepl`` reads and answers them."""

from __future__ import annotations

from typing import Any

from handler.api.compat.deepl import (
    FORMALITIES_IGNORED,
    GLOSSARIES_V3,
    GLOSSARY_ENTRIES_V3,
    GLOSSARY_ID_PATTERN,
    GLOSSARY_V3,
    MODEL_TYPE_USED,
    MODEL_TYPES,
    SOURCE_LANGS,
    TARGET_LANGS,
)
from handler.api.describe import (
    FORM,
    JSON,
    MULTIPART,
    NO_MARKUP_PATTERN,
    file_response,
    head_of,
    path_parameter,
    post_of,
    preflight,
    ref,
    response,
    security,
    with_form_variants,
)
from handler.formats import FILE_SUFFIXES
from handler.options import TEXT_END
from handler.storage.documents import DONE, ERROR, ID_PATTERN, QUEUED, TRANSLATING
from handler.storage.glossaries import (
    ENTRIES_FORMATS,
    MAX_ENTRIES,
    MAX_ENTRIES_BYTES,
    MAX_GLOSSARIES,
    MAX_NAME_BYTES,
    SOURCE_LANG,
    TARGET_LANG,
)
from handler.text.markup import TAGGED_FORMATS

TAG = "deepl"
DOCUMENT_ID_PATTERN = f"^{ID_PATTERN.pattern}$"  # what POST /v2/document answers (handler.storage.documents)
SCHEMES = ("DeepLAuthKey", "ApiKeyHeader", "BearerKey")


def _any_case(suffix: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in suffix)


# a file name the document API translates: one of FILE_SUFFIXES, in any case (handler.storage.documents.suffix_of)
FILE_NAME_PATTERN = (
    "^\\s*[\\s\\S]*\\.(?:" + "|".join(_any_case(suffix[1:]) for suffix in FILE_SUFFIXES) + ")\\s*" + TEXT_END
)


def _errors(*statuses: str, **texts: str) -> dict[str, Any]:
    """DeepL's error answers (``{"message"}``): the common text of each status, or the one given as ``_<status>``."""
    common = {
        "400": "a bad request or an unsupported language",
        "403": "authorization failure (TRANSLATE_API_KEYS is set)",
        "404": "no such resource",
        "413": "the request is too large",
        "500": "translation failed",
        "503": "the model is unavailable or out of time (DeepL's clients retry)",
    }
    return {status: response(texts.get(f"_{status}", common[status]), ref("DeepLError")) for status in statuses}


def deepl_paths(keys_required: bool) -> dict[str, Any]:
    """DeepL's v2 routes: ``/v2/translate``, ``/v2/languages``, ``/v2/usage``."""
    deepl_security = security(keys_required, *SCHEMES)
    deepl_errors = _errors("400", "403", "413", "500", "503")

    def deepl_body(name: str) -> dict[str, Any]:
        return {"content": {JSON: {"schema": ref(name)}, FORM: {"schema": ref(name + "Form")}}}

    auth_key_query = {
        "name": "auth_key",
        "in": "query",
        "required": False,
        "schema": {"type": "string"},
        "description": "DeepL's legacy key parameter",
    }
    deepl_languages_get = {
        "operationId": "deeplLanguages",
        "tags": [TAG],
        "summary": "DeepL: source (ZH) or target (EN-GB, EN-US) languages",
        "security": deepl_security,
        "parameters": [
            {
                "name": "type",
                "in": "query",
                "required": False,
                "schema": ref("DeepLLanguageType"),
            },
            auth_key_query,
        ],
        "responses": {
            "200": response("the languages", {"type": "array", "items": ref("DeepLLanguage")}),
            **{status: deepl_errors[status] for status in ("400", "403", "413")},
        },
    }
    deepl_usage_get = {
        "operationId": "deeplUsage",
        "tags": [TAG],
        "summary": "DeepL: characters translated through this API by this instance since its cold start",
        "security": deepl_security,
        "parameters": [auth_key_query],
        "responses": {
            "200": response("the usage", ref("DeepLUsage")),
            **{status: deepl_errors[status] for status in ("400", "403", "413")},
        },
    }

    return {
        "/v2/translate": {
            "post": {
                "operationId": "deeplTranslate",
                "tags": [TAG],
                "summary": "DeepL: translate text (repeated, or a JSON list) to EN, EN-US or EN-GB",
                "security": deepl_security,
                "requestBody": {**deepl_body("DeepLParameters"), "required": True},
                "responses": {
                    "200": response("the translations", ref("DeepLTranslations")),
                    **deepl_errors,
                    **_errors("404", _404="glossary_id names no glossary of this key"),
                },
            },
            "options": preflight("deeplTranslatePreflight", TAG),
        },
        "/v2/languages": {
            "get": deepl_languages_get,
            "head": head_of(deepl_languages_get, "deeplLanguagesHead"),
            "post": post_of(deepl_languages_get, "deeplLanguagesPost", deepl_body("DeepLLanguagesParameters")),
            "options": preflight("deeplLanguagesPreflight", TAG),
        },
        "/v2/usage": {
            "get": deepl_usage_get,
            "head": head_of(deepl_usage_get, "deeplUsageHead"),
            "post": post_of(deepl_usage_get, "deeplUsagePost", deepl_body("DeepLUsageParameters")),
            "options": preflight("deeplUsagePreflight", TAG),
        },
    }


def document_paths(keys_required: bool) -> dict[str, Any]:
    """DeepL's document API (``/v2/document`` ...: ``handler.storage.documents``)."""
    deepl_security = security(keys_required, *SCHEMES)

    def deepl_error(text: str) -> dict[str, Any]:
        return response(text, ref("DeepLError"))

    document_id = path_parameter(
        "document_id", DOCUMENT_ID_PATTERN, "what POST /v2/document answered (32 hexadecimal digits)"
    )
    key_body = {
        "required": True,
        "content": {JSON: {"schema": ref("DeepLDocumentKey")}, FORM: {"schema": ref("DeepLDocumentKey")}},
    }
    return {
        "/v2/document": {
            "post": {
                "operationId": "deeplDocumentUpload",
                "tags": [TAG],
                "summary": f"DeepL: upload a document ({', '.join(FILE_SUFFIXES)}) to translate in the background",
                "security": deepl_security,
                "requestBody": {"required": True, "content": {MULTIPART: {"schema": ref("DeepLDocumentUpload")}}},
                "responses": {
                    "200": response("the document's id and key", ref("DeepLDocumentHandle")),
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
            "options": preflight("deeplDocumentUploadPreflight", TAG),
        },
        "/v2/document/{document_id}": {
            "post": {
                "operationId": "deeplDocumentStatus",
                "tags": [TAG],
                "summary": "DeepL: a document's status (queued, translating, done, error)",
                "security": deepl_security,
                "parameters": [document_id],
                "requestBody": key_body,
                "responses": {
                    "200": response("the status", ref("DeepLDocumentStatus")),
                    "400": deepl_error("no document_key"),
                    "403": deepl_error("authorization failure, or not the document's key"),
                    "404": deepl_error(
                        "no such document of this key (never uploaded, expired, downloaded already, or another key's)"
                    ),
                    "500": deepl_error("the deployment has nowhere to keep documents, or a bug"),
                },
            },
            "options": preflight("deeplDocumentStatusPreflight", TAG, document_id),
        },
        "/v2/document/{document_id}/result": {
            "post": {
                "operationId": "deeplDocumentResult",
                "tags": [TAG],
                "summary": "DeepL: download the translation, once (it is deleted as it is sent)",
                "security": deepl_security,
                "parameters": [document_id],
                "requestBody": key_body,
                "responses": {
                    "200": file_response("the translated document, in the Content-Type of its format"),
                    "400": deepl_error("no document_key"),
                    "403": deepl_error("authorization failure, or not the document's key"),
                    "404": deepl_error("no such document of this key, downloaded already, or its translation failed"),
                    "500": deepl_error("the deployment has nowhere to keep documents, or a bug"),
                    "503": deepl_error("not translated yet (DeepL's clients wait and retry)"),
                },
            },
            "options": preflight("deeplDocumentResultPreflight", TAG, document_id),
        },
    }


def deepl_glossary_paths(keys_required: bool) -> dict[str, Any]:
    """DeepL's v2 and v3 glossary routes (``handler.api.compat.deepl``, stored by ``handler.storage.glossaries``)."""
    return {**_glossary_v2_paths(keys_required), **_glossary_v3_paths(keys_required)}


def _glossary_v2_paths(keys_required: bool) -> dict[str, Any]:
    ops = _glossary_operations(security(keys_required, *SCHEMES))
    glossary_id = path_parameter(
        "glossary_id", GLOSSARY_ID_PATTERN, "the glossary_id POST /v2/glossaries returned (a UUID)"
    )
    for name in ("one_get", "delete", "entries_get"):
        ops[name]["parameters"] = [glossary_id]

    def id_preflight(operation_id: str) -> dict[str, Any]:
        answer = preflight(operation_id, TAG, glossary_id)
        answer["parameters"] = [glossary_id]
        answer["responses"]["404"] = response("the path names no glossary (its ID is not a UUID)", ref("DeepLError"))
        return answer

    return {
        "/v2/glossary-language-pairs": {
            "get": ops["pairs_get"],
            "head": head_of(ops["pairs_get"], "deeplGlossaryLanguagePairsHead"),
            "options": preflight("deeplGlossaryLanguagePairsPreflight", TAG),
        },
        "/v2/glossaries": {
            "get": ops["list_get"],
            "head": head_of(ops["list_get"], "deeplGlossariesHead"),
            "post": ops["create"],
            "options": preflight("deeplGlossariesPreflight", TAG),
        },
        "/v2/glossaries/{glossary_id}": {
            "get": ops["one_get"],
            "head": head_of(ops["one_get"], "deeplGlossaryHead"),
            "delete": ops["delete"],
            "options": id_preflight("deeplGlossaryPreflight"),
        },
        "/v2/glossaries/{glossary_id}/entries": {
            "get": ops["entries_get"],
            "head": head_of(ops["entries_get"], "deeplGlossaryEntriesHead"),
            "options": id_preflight("deeplGlossaryEntriesPreflight"),
        },
    }


def _glossary_v3_paths(keys_required: bool) -> dict[str, Any]:
    """DeepL's multilingual glossary routes (v3): the same stored glossaries, each one zh → en dictionary."""
    glossary_security = security(keys_required, *SCHEMES)
    errors = _errors(
        "400", "403", "404", "413", "500",
        _400="a bad request (the message names the entry or parameter; more than one dictionary)",
        _404="no such glossary for this key, or no dictionary of that language pair in it",
        _413=f"over {MAX_ENTRIES_BYTES:,} bytes or {MAX_ENTRIES:,} entries, or {MAX_GLOSSARIES} glossaries held",
        _500="the glossary store failed",
    )  # fmt: skip
    glossary_id = path_parameter(
        "glossary_id", GLOSSARY_ID_PATTERN, "the glossary_id POST /v3/glossaries (or /v2/glossaries) returned"
    )

    def operation(operation_id: str, summary: str, ok: dict[str, Any], *statuses: str) -> dict[str, Any]:
        answer = {"operationId": operation_id, "tags": [TAG], "summary": summary, "security": glossary_security,
                  "responses": {**ok, **{status: errors[status] for status in statuses}}}  # fmt: skip
        return answer

    def language(name: str, values: list[str]) -> dict[str, Any]:
        return {"name": name, "in": "query", "required": True, "schema": {"type": "string", "enum": values},
                "description": "the dictionary's language (the glossary's one pair: zh → en)"}  # fmt: skip

    create = operation(
        "deeplMultilingualGlossaryCreate",
        "DeepL v3: create a glossary of one zh → en dictionary (TSV or CSV entries)",
        {"201": response("the new glossary", ref("DeepLMultilingualGlossary"))},
        *("400", "403", "413", "500"),
    )
    create["requestBody"] = {"required": True, "content": {JSON: {"schema": ref("DeepLMultilingualGlossaryCreate")}}}
    list_get = operation(
        "deeplMultilingualGlossaries",
        "DeepL v3: the caller's glossaries (v2's too)",
        {"200": response("the glossaries", ref("DeepLMultilingualGlossaryList"))},
        "403",
    )
    one_get = operation(
        "deeplMultilingualGlossary",
        "DeepL v3: one glossary's description",
        {"200": response("the glossary", ref("DeepLMultilingualGlossary"))},
        *("400", "403", "404"),
    )
    one_get["parameters"] = [glossary_id]
    delete = operation(
        "deeplMultilingualGlossaryDelete", "DeepL v3: delete a glossary", {"204": response("deleted")},
        *("400", "403", "404"),
    )  # fmt: skip
    delete["parameters"] = [glossary_id]
    entries_get = operation(
        "deeplMultilingualGlossaryEntries",
        "DeepL v3: the entries of a glossary's dictionary (TSV text in JSON)",
        {"200": response("the dictionary's entries", ref("DeepLMultilingualGlossaryEntries"))},
        *("400", "403", "404"),
    )
    entries_get["parameters"] = [
        glossary_id,
        language("source_lang", ["zh", "ZH", "zh-Hans", "zh-Hant", "ZH-HANS", "ZH-HANT"]),
        language("target_lang", ["en", "EN", "en-US", "en-GB", "EN-US", "EN-GB"]),
    ]

    def id_preflight(operation_id: str) -> dict[str, Any]:
        answer = preflight(operation_id, TAG, glossary_id)
        answer["parameters"] = [glossary_id]
        answer["responses"]["404"] = response("the path names no glossary (its ID is not a UUID)", ref("DeepLError"))
        return answer

    return {
        GLOSSARIES_V3: {
            "get": list_get,
            "head": head_of(list_get, "deeplMultilingualGlossariesHead"),
            "post": create,
            "options": preflight("deeplMultilingualGlossariesPreflight", TAG),
        },
        GLOSSARY_V3: {
            "get": one_get,
            "head": head_of(one_get, "deeplMultilingualGlossaryHead"),
            "delete": delete,
            "options": id_preflight("deeplMultilingualGlossaryPreflight"),
        },
        GLOSSARY_ENTRIES_V3: {
            "get": entries_get,
            "head": head_of(entries_get, "deeplMultilingualGlossaryEntriesHead"),
            "options": id_preflight("deeplMultilingualGlossaryEntriesPreflight"),
        },
    }


def _glossary_operations(glossary_security: list[dict[str, list[str]]]) -> dict[str, dict[str, Any]]:
    errors = _errors(
        "400",
        "403",
        "404",
        "413",
        "500",
        _400="a bad request (the message names the entry or parameter)",
        _404="no such glossary for this key",
        _413=f"over {MAX_ENTRIES_BYTES:,} bytes or {MAX_ENTRIES:,} entries, or {MAX_GLOSSARIES} glossaries held",
        _500="the glossary store failed",
    )

    def operation(operation_id: str, summary: str, ok: dict[str, Any], *statuses: str) -> dict[str, Any]:
        found = {status: errors[status] for status in statuses}
        return {"operationId": operation_id, "tags": [TAG], "summary": summary, "security": glossary_security,
                "responses": {**ok, **found}}  # fmt: skip

    create = operation(
        "deeplGlossaryCreate",
        f"DeepL: create a zh → en glossary from TSV or CSV entries (at most {MAX_ENTRIES:,} entries, "
        f"{MAX_ENTRIES_BYTES:,} bytes, a name of {MAX_NAME_BYTES} bytes, {MAX_GLOSSARIES} glossaries per key)",
        {"201": response("the new glossary", ref("DeepLGlossary"))},
        *("400", "403", "413", "500"),
    )
    create["requestBody"] = {
        "required": True,
        "content": {JSON: {"schema": ref("DeepLGlossaryCreate")}, FORM: {"schema": ref("DeepLGlossaryCreate")}},
    }
    tsv = response("the entries", {"type": "string"}, media="text/tab-separated-values")
    entries_get = operation(
        "deeplGlossaryEntries",
        "DeepL: a glossary's entries, source<TAB>target per line",
        {"200": tsv},
        *("400", "403", "404"),
    )
    entries_get["responses"]["415"] = response(
        "the Accept header allows no text/tab-separated-values", ref("DeepLError")
    )
    return {
        "pairs_get": operation(
            "deeplGlossaryLanguagePairs",
            "DeepL: the glossary language pairs (zh → en only)",
            {"200": response("the pairs", ref("DeepLGlossaryLanguagePairs"))},
            "403",
        ),
        "list_get": operation(
            "deeplGlossaries",
            "DeepL: the caller's glossaries",
            {"200": response("the glossaries", ref("DeepLGlossaryList"))},
            "403",
        ),
        "create": create,
        "one_get": operation(
            "deeplGlossary",
            "DeepL: one glossary's description",
            {"200": response("the glossary", ref("DeepLGlossary"))},
            *("400", "403", "404"),
        ),
        "delete": operation(
            "deeplGlossaryDelete", "DeepL: delete a glossary", {"204": response("deleted")}, "400", "403", "404"
        ),
        "entries_get": entries_get,
    }


def deepl_schemas() -> dict[str, Any]:
    """DeepL's request and response shapes (each JSON body's form variant too)."""
    one_or_more = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]}
    tag_names = {  # DeepL's tag parameters: names separated by commas, or a list of such strings
        "anyOf": [{"type": ["string", "null"]}, {"type": "array", "items": {"type": "string"}}],
        "description": "tag names separated by commas (html or xml tag handling)",
    }
    schemas: dict[str, Any] = {
        "DeepLParameters": {
            "type": "object",
            "required": ["text", "target_lang"],
            "description": "DeepL's other options (split_sentences, context, ...) are accepted and ignored",
            "additionalProperties": ref("DeepLIgnoredOption"),
            "properties": {
                "text": one_or_more,
                "source_lang": {"type": ["string", "null"], "enum": [*SOURCE_LANGS, None]},
                "target_lang": {"type": "string", "enum": list(TARGET_LANGS)},
                "tag_handling": {"type": ["string", "null"], "enum": [*TAGGED_FORMATS, None]},
                **{name: tag_names for name in ("ignore_tags", "non_splitting_tags", "splitting_tags")},
                "outline_detection": {
                    "type": ["boolean", "integer", "string", "null"],
                    "enum": [True, False, 0, 1, "0", "1", "true", "false", None],
                    "description": "xml: 1 (default) splits at elements whose parent holds no text; 0: only "
                    "splitting_tags",
                },
                "formality": {
                    "type": ["string", "null"],
                    "enum": [*(name for name in FORMALITIES_IGNORED if name), None],
                    "description": "English has no formality: more and less are refused (400), as DeepL refuses "
                    "them for such a target; these change nothing",
                },
                "model_type": {
                    "type": ["string", "null"],
                    "enum": [*MODEL_TYPES, None],
                    "description": f"any: the one model answers, and model_type_used says {MODEL_TYPE_USED}",
                },
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
                {  # html and xml are cut into blocks with private-use characters for their tags: a text holds none
                    "if": {
                        "required": ["tag_handling"],
                        "properties": {"tag_handling": {"enum": list(TAGGED_FORMATS)}},
                    },
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
                {"type": "array", "items": ref("DeepLIgnoredOption")},
                {"type": "object", "additionalProperties": ref("DeepLIgnoredOption")},
            ],
        },
        "DeepLLanguageType": {"type": "string", "enum": ["source", "target", ""], "description": "empty: source"},
        "DeepLLanguageTypeOrNull": {"type": ["string", "null"], "enum": ["source", "target", "", None]},
        "DeepLLanguagesParameters": {
            "type": "object",
            "properties": {"type": ref("DeepLLanguageTypeOrNull"), "auth_key": {"type": ["string", "null"]}},
        },
        "DeepLUsageParameters": {"type": "object", "properties": {"auth_key": {"type": ["string", "null"]}}},
    }
    schemas = with_form_variants(schemas, "DeepLParameters", "DeepLLanguagesParameters", "DeepLUsageParameters")
    schemas["DeepLLanguagesParametersForm"]["properties"]["type"] = ref("DeepLLanguageType")
    return {
        **schemas,
        **_answer_schemas(),
        **_document_schemas(),
        **_glossary_schemas(),
        **_multilingual_glossary_schemas(),
    }


def _answer_schemas() -> dict[str, Any]:
    """What /v2/translate, /v2/languages and /v2/usage answer, and the error shape."""
    return {
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
                            "model_type_used": {
                                "type": "string",
                                "enum": [MODEL_TYPE_USED],
                                "description": "only when model_type was sent",
                            },
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


def _document_schemas() -> dict[str, Any]:
    """The document API's shapes."""
    file_part = {"type": "string", "contentMediaType": "application/octet-stream"}
    optional = {"type": "string"}
    return {
        "DeepLDocumentUpload": {
            "type": "object",
            "required": ["file", "target_lang"],
            "properties": {
                "file": file_part,
                "filename": {
                    "type": "string",
                    "pattern": FILE_NAME_PATTERN,
                    "description": "the file's name, instead of the part's: its suffix says the format",
                },
                "target_lang": {"type": "string", "enum": list(TARGET_LANGS)},
                "source_lang": {"type": "string", "enum": list(SOURCE_LANGS)},
                "formality": {
                    "type": "string",
                    "enum": [name for name in FORMALITIES_IGNORED if name],
                    "description": "English has no formality: more and less are refused (400), as on /v2/translate",
                },
                "output_format": optional,
                "glossary_id": {
                    "type": "string",
                    "description": "a glossary of POST /v2/glossaries; needs source_lang",
                },
                "encoding": {
                    "type": "string",
                    "description": "this server's extension (DeepL has no such field): a text file's encoding, e.g. "
                    "big5 or gb18030; else detected, and a file too short to tell is refused naming this field",
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
            "additionalProperties": ref("DeepLIgnoredOption"),  # read, and ignored: any JSON the reader takes
            "properties": {"document_key": {"type": "string", "minLength": 1}, "auth_key": optional},
        },
        "DeepLDocumentStatus": {
            "type": "object",
            "required": ["document_id", "status"],
            "properties": {
                "document_id": {"type": "string"},
                "status": {"type": "string", "enum": [QUEUED, TRANSLATING, DONE, ERROR]},
                "seconds_remaining": {"type": "integer", "minimum": 0},
                "billed_characters": {"type": "integer", "minimum": 0},
                "error_message": {"type": "string"},
            },
        },
    }


def _glossary_schemas() -> dict[str, Any]:
    """The v2 glossary API's shapes."""
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
                    "pattern": "\\S",  # at least one entry: an empty glossary is refused
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
                "source_lang": {"type": "string", "enum": [SOURCE_LANG]},
                "target_lang": {"type": "string", "enum": [TARGET_LANG]},
                "creation_time": {"type": "string", "format": "date-time"},
                "entry_count": {"type": "integer", "minimum": 1},
            },
        },
        "DeepLGlossaryList": {
            "type": "object",
            "required": ["glossaries"],
            "properties": {"glossaries": {"type": "array", "items": ref("DeepLGlossary")}},
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


def _multilingual_glossary_schemas() -> dict[str, Any]:
    """The v3 (multilingual) glossary API's shapes."""
    return {
        "DeepLMultilingualGlossaryCreate": {
            "type": "object",
            "required": ["name", "dictionaries"],
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "dictionaries": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 1,
                    "description": "this server's glossaries hold one dictionary, zh → en",
                    "items": {
                        "type": "object",
                        "required": ["source_lang", "target_lang", "entries"],
                        "properties": {
                            "source_lang": {"type": "string", "enum": ["zh", "ZH", "zh-Hans", "zh-Hant"]},
                            "target_lang": {"type": "string", "enum": ["en", "EN", "en-US", "en-GB"]},
                            "entries": {"type": "string", "pattern": "\\S"},
                            "entries_format": {"type": "string", "enum": list(ENTRIES_FORMATS), "default": "tsv"},
                        },
                    },
                },
                "auth_key": {"type": "string"},
            },
        },
        "DeepLMultilingualGlossary": {
            "type": "object",
            "required": ["glossary_id", "name", "dictionaries", "creation_time"],
            "properties": {
                "glossary_id": {"type": "string"},
                "name": {"type": "string"},
                "creation_time": {"type": "string", "format": "date-time"},
                "dictionaries": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["source_lang", "target_lang", "entry_count"],
                        "properties": {
                            "source_lang": {"type": "string", "enum": [SOURCE_LANG]},
                            "target_lang": {"type": "string", "enum": [TARGET_LANG]},
                            "entry_count": {"type": "integer", "minimum": 1},
                        },
                    },
                },
            },
        },
        "DeepLMultilingualGlossaryList": {
            "type": "object",
            "required": ["glossaries"],
            "properties": {"glossaries": {"type": "array", "items": ref("DeepLMultilingualGlossary")}},
        },
        "DeepLMultilingualGlossaryEntries": {
            "type": "object",
            "required": ["dictionaries"],
            "properties": {
                "dictionaries": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["source_lang", "target_lang", "entries", "entries_format"],
                        "properties": {
                            "source_lang": {"type": "string", "enum": [SOURCE_LANG]},
                            "target_lang": {"type": "string", "enum": [TARGET_LANG]},
                            "entries": {"type": "string", "description": "source<TAB>target per line"},
                            "entries_format": {"type": "string", "enum": ["tsv"]},
                        },
                    },
                }
            },
        },
    }
