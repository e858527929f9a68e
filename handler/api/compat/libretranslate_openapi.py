"""LibreTranslate's answers, typed (``handler.api.answers``): what ``handler.api.compat.libretranslate`` answers the
routes of its table (``handler.api.compat.libretranslate_routes``) with, each a ``TypedDict`` mypy checks the
handler's answers against, and the OpenAPI document's response schemas written from them
(``libretranslate_schemas``; ``handler.api.openapi`` imports this module when it builds the document). The requests'
schemas come from the request shapes (``handler.api.compat.libretranslate_shapes``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from handler.api.answers import answer_schemas


class LibreTranslateDetection(TypedDict):
    language: Annotated[str, "zh-Hans, zh-Hant or en"]
    confidence: Annotated[float, {"minimum": 0, "maximum": 100}]


class LibreTranslateResponse(TypedDict):
    translatedText: Annotated[str | list[str], "a list for a list of q"]
    detectedLanguage: NotRequired[
        Annotated[LibreTranslateDetection | list[LibreTranslateDetection], "with source auto: each text's"]
    ]
    alternatives: NotRequired[
        Annotated[list[str] | list[list[str]], "a list of strings for one q, a list of such lists for a list"]
    ]


class LibreTranslateLanguage(TypedDict):
    code: str
    name: str
    targets: list[str]


class LibreTranslateLanguageName(TypedDict):
    code: str
    name: str


class LibreTranslateFrontendLanguages(TypedDict):
    source: LibreTranslateLanguageName
    target: LibreTranslateLanguageName


class LibreTranslateSettings(TypedDict):
    charLimit: Annotated[int, "each text's (TRANSLATE_MAX_CHARS)"]
    frontendTimeout: int
    apiKeys: bool
    keyRequired: bool
    suggestions: bool
    filesTranslation: bool
    supportedFilesFormat: list[str]
    language: LibreTranslateFrontendLanguages


class LibreTranslateHealth(TypedDict):
    status: Literal["ok"]


class LibreTranslateError(TypedDict):
    error: str


class LibreTranslateFileUrl(TypedDict):
    translatedFileUrl: str


class LibreTranslateUsageCount(TypedDict):
    used: Annotated[int, "this period's, across every instance"]
    limit: Annotated[int | None, "the key's limit per period; null: none"]
    period: Literal["second", "minute", "hour", "day", "month"]
    resetsIn: Annotated[int, "seconds until the period ends (UTC calendar periods)"]


class LibreTranslateUsage(TypedDict):
    name: NotRequired[Annotated[str, "the key's name in TRANSLATE_API_KEYS (name=), when it has one"]]
    characters: Annotated[LibreTranslateUsageCount, "characters translated (chars=; without it: per month)"]
    requests: NotRequired[Annotated[LibreTranslateUsageCount, "requests sent, with a rate= limit"]]


def libretranslate_schemas() -> dict[str, Any]:
    """LibreTranslate's response schemas, by the answers' names."""
    return answer_schemas(
        LibreTranslateResponse,
        LibreTranslateDetection,
        LibreTranslateLanguage,
        LibreTranslateSettings,
        LibreTranslateHealth,
        LibreTranslateError,
        LibreTranslateFileUrl,
        LibreTranslateUsage,
    )
