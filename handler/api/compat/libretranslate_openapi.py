"""LibreTranslate's response schemas (the OpenAPI document's components; ``handler.api.openapi`` assembles them) and
its error answers: what ``handler.api.compat.libretranslate`` answers the routes of its table
(``handler.api.compat.libretranslate_routes``) with. The requests' schemas come from the request shapes
(``handler.api.compat.libretranslate_shapes``)."""

from __future__ import annotations

from typing import Any

from handler.api.describe import ref, response

ERROR_SCHEMA = "LibreTranslateError"
COMMON_ERRORS = {
    "400": "a bad or too large request, an unsupported language, no api_key where one is needed",
    "403": "api_key invalid (TRANSLATE_API_KEYS is set)",
    "500": "translation failed or the model is unavailable",
}


def errors(*statuses: str, **texts: str) -> dict[str, Any]:
    """LibreTranslate's error answers (``{"error"}``): the common text of each status, or the one given as
    ``_<status>``."""
    return {
        status: response(texts.get(f"_{status}", COMMON_ERRORS.get(status, "")), ref(ERROR_SCHEMA))
        for status in statuses
    }


def libretranslate_schemas() -> dict[str, Any]:
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
        "LibreTranslateFileUrl": {
            "type": "object",
            "required": ["translatedFileUrl"],
            "properties": {"translatedFileUrl": {"type": "string"}},
        },
    }
