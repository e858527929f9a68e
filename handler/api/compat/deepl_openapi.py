"""DeepL's response schemas (the OpenAPI document's components; ``handler.api.openapi`` assembles them) and its error
answers: what ``handler.api.compat.deepl`` answers each route of its table (``handler.api.compat.deepl_routes``)
with. The requests' schemas are not here: they come from the request shapes (``handler.api.compat.deepl_shapes``)."""

from __future__ import annotations

from typing import Any

from handler.api.compat.deepl_shapes import MODEL_TYPE_USED
from handler.api.describe import ref, response
from handler.storage.documents import DONE, ERROR, QUEUED, TRANSLATING
from handler.storage.glossaries import SOURCE_LANG, TARGET_LANG

ERROR_SCHEMA = "DeepLError"
COMMON_ERRORS = {
    "400": "a bad request or an unsupported language",
    "403": "authorization failure (TRANSLATE_API_KEYS is set)",
    "404": "no such resource",
    "413": "the request is too large",
    "500": "translation failed",
    "503": "the model is unavailable or out of time (DeepL's clients retry)",
}


def errors(*statuses: str, **texts: str) -> dict[str, Any]:
    """DeepL's error answers (``{"message"}``): the common text of each status, or the one given as ``_<status>``."""
    return {
        status: response(texts.get(f"_{status}", COMMON_ERRORS.get(status, "")), ref(ERROR_SCHEMA))
        for status in statuses
    }


def deepl_schemas() -> dict[str, Any]:
    """DeepL's response shapes."""
    return {
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
    return {
        "DeepLDocumentHandle": {
            "type": "object",
            "required": ["document_id", "document_key"],
            "properties": {"document_id": {"type": "string"}, "document_key": {"type": "string"}},
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
