"""DeepL's answers, typed (``handler.api.answers``): what ``handler.api.compat.deepl`` answers the routes of its table
(``handler.api.compat.deepl_routes``) with, each a ``TypedDict`` mypy checks the handler's answers against, and the
OpenAPI document's response schemas written from them (``deepl_schemas``; ``handler.api.openapi`` imports this
module when it builds the document). The requests' schemas come from the request shapes
(``handler.api.compat.deepl_shapes``); the glossaries' descriptions are the glossary store's types
(``handler.storage.glossaries``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from handler.api.answers import answer_schemas
from handler.storage.documents import DONE, ERROR, QUEUED, TRANSLATING
from handler.storage.glossaries import DictionaryEntries, GlossaryDescription, MultilingualGlossaryDescription


class DeepLTranslation(TypedDict):
    """One text's translation."""

    detected_source_language: Annotated[str, "EN for a text already in English (it passes through), else ZH"]
    text: str
    billed_characters: int
    model_type_used: NotRequired[Annotated[Literal["latency_optimized"], "only when model_type was sent"]]


class DeepLTranslations(TypedDict):
    translations: list[DeepLTranslation]


class DeepLLanguage(TypedDict):
    language: str
    name: str
    supports_formality: NotRequired[Annotated[bool, "target languages only"]]


class DeepLUsage(TypedDict):
    character_count: int
    character_limit: int


class DeepLError(TypedDict):
    message: str


class DeepLDocumentHandle(TypedDict):
    document_id: str
    document_key: str


class DeepLDocumentStatus(TypedDict):
    document_id: str
    status: Annotated[str, {"enum": [QUEUED, TRANSLATING, DONE, ERROR]}]
    seconds_remaining: NotRequired[Annotated[int, {"minimum": 0}, "while queued or translating"]]
    billed_characters: NotRequired[Annotated[int, {"minimum": 0}, "once done"]]
    error_message: NotRequired[Annotated[str, "on error"]]


class DeepLGlossaryList(TypedDict):
    glossaries: list[GlossaryDescription]


class DeepLGlossaryLanguagePair(TypedDict):
    source_lang: str
    target_lang: str


class DeepLGlossaryLanguagePairs(TypedDict):
    supported_languages: list[DeepLGlossaryLanguagePair]


class DeepLMultilingualGlossaryList(TypedDict):
    glossaries: list[MultilingualGlossaryDescription]


class DeepLMultilingualGlossaryEntries(TypedDict):
    dictionaries: list[DictionaryEntries]


def deepl_schemas() -> dict[str, Any]:
    """DeepL's response schemas, by the answers' names."""
    return answer_schemas(
        DeepLTranslations,
        DeepLLanguage,
        DeepLUsage,
        DeepLError,
        DeepLDocumentHandle,
        DeepLDocumentStatus,
        GlossaryDescription,
        DeepLGlossaryList,
        DeepLGlossaryLanguagePairs,
        MultilingualGlossaryDescription,
        DeepLMultilingualGlossaryList,
        DeepLMultilingualGlossaryEntries,
    )
