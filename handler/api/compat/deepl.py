"""DeepL's API (v2) on the translation service, for its clients (the official ``deepl`` library, CAT tools, apps).

Routes (JSON, form-encoded or multipart/form-data bodies; GET parameters in the query string or, as the ``deepl``
client sends them, a form body):

``POST /v2/translate``  ``text`` (repeated, or a JSON list), ``source_lang`` (optional: ZH, ZH-HANS, ZH-HANT),
                        ``target_lang`` (EN, EN-US, EN-GB), ``tag_handling`` ("html"; "xml" is refused), the
                        other options accepted and ignored (``formality``, ``split_sentences``, ``context``, ...)
                        → ``{"translations": [{"detected_source_language": "ZH", "text": ..., ...}]}``
``GET /v2/languages``   ``type=source`` (default: ZH) or ``type=target`` (EN-GB, EN-US)
``GET /v2/usage``       characters translated through this API by this instance since its cold start, and a limit
                        that is never reached (the function has no quota)

Authentication is DeepL's ``Authorization: DeepL-Auth-Key KEY`` header (or the legacy ``auth_key`` parameter, or
this server's ``X-API-Key`` / ``Authorization: Bearer``; precedence in ``handler.api.keys``); with keys configured
(``TRANSLATE_API_KEYS``, ``TRANSLATE_API_KEYS_FILE``) the key must be one of them, otherwise any key passes.
Errors are DeepL's ``{"message": "..."}`` with 400 (bad request, unsupported language), 403 (authorization), 404,
405, 413 (request too large), 500 and 503 (the model is unavailable or out of time; DeepL's clients retry 5xx).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from handler.api.compat.fields import (
    ApiStatus,
    HttpRequest,
    HttpResponse,
    RequestFields,
    UnauthorizedError,
    json_response,
    key_is_valid,
    read_fields,
)
from handler.api.keys import ApiKeys
from handler.coldstart import Startup
from handler.config import ENV_API_KEYS
from handler.errors import TranslatorError
from handler.service import TranslateOptions
from handler.text.script_conversion import AUTO, SIMPLIFIED, TRADITIONAL

logger = logging.getLogger(__name__)

SOURCE_LANGUAGES = [{"language": "ZH", "name": "Chinese"}]
TARGET_LANGUAGES = [
    {"language": "EN-GB", "name": "English (British)", "supports_formality": False},
    {"language": "EN-US", "name": "English (American)", "supports_formality": False},
]
_SOURCE_VARIANTS = {"ZH": AUTO, "ZH-HANS": SIMPLIFIED, "ZH-HANT": TRADITIONAL}
_TARGETS = ("EN", "EN-US", "EN-GB")
CHARACTER_LIMIT = 1_000_000_000_000  # what DeepL reports for accounts without a limit
MAX_BODY_BYTES = 10 * 1024 * 1024

ROUTES: dict[str, tuple[str, ...]] = {
    "/v2/translate": ("POST",),
    "/v2/languages": ("GET", "POST"),
    "/v2/usage": ("GET", "POST"),
}


_STATUS_BY_CODE = {
    "unauthorized": 403,
    "invalid_request": 400,
    "request_too_large": 413,
    "model_unavailable": 503,
    "bundle_invalid": 503,
    "deadline_exceeded": 503,
}


class DeepLApi:
    def __init__(self, startup: Startup) -> None:
        self.startup = startup
        self.keys = ApiKeys.of(startup.config.api_keys)
        self.routes = ROUTES
        self._characters = 0
        self._lock = threading.Lock()

    def claims(self, path: str, request: HttpRequest) -> bool:
        return path in ROUTES or path.startswith("/v2/")

    def handle(self, path: str, request: HttpRequest) -> HttpResponse:
        try:
            allowed = ROUTES.get(path)
            if allowed is None:
                raise ApiStatus(404, f"{path} is not a DeepL route this server answers; it has {', '.join(ROUTES)}")
            if request.method not in allowed and not (request.method == "HEAD" and "GET" in allowed):
                return json_response(
                    405, {"message": f"{path} answers {' and '.join(allowed)}"}, {"Allow": ", ".join(allowed)}
                )
            fields = read_fields(request, MAX_BODY_BYTES)
            self._check_key(request, fields)
            if path == "/v2/languages":
                kind = (fields.text("type") or "source").lower()
                if kind not in ("source", "target"):
                    raise ApiStatus(400, f"Value for 'type' not supported: {kind!r}; use source or target")
                return json_response(200, SOURCE_LANGUAGES if kind == "source" else TARGET_LANGUAGES)
            if path == "/v2/usage":
                return json_response(200, {"character_count": self._characters, "character_limit": CHARACTER_LIMIT})
            return json_response(200, self._translate(fields))
        except ApiStatus as error:
            return json_response(error.status, {"message": str(error)})
        except TranslatorError as error:
            status = _STATUS_BY_CODE.get(error.code, 500)
            if status >= 500:
                logger.error("DeepL %s failed: %s: %s", path, type(error).__name__, error)
            return json_response(status, {"message": str(error)})
        except Exception:
            logger.exception("DeepL %s failed with an unexpected error", path)
            return json_response(
                500, {"message": "internal error while translating; the function's log has the details"}
            )

    def _check_key(self, request: HttpRequest, fields: RequestFields) -> None:
        if not key_is_valid(request, fields.text("auth_key"), self.keys):
            raise UnauthorizedError(
                "Authorization failure: send 'Authorization: DeepL-Auth-Key KEY' with one of this server's keys "
                f"({ENV_API_KEYS})"
            )

    def _translate(self, fields: RequestFields) -> dict[str, Any]:
        texts = _texts(fields)
        target = (fields.text("target_lang") or "").strip().upper()
        if not target:
            raise ApiStatus(400, "Parameter 'target_lang' not specified; this server translates to EN, EN-US or EN-GB")
        if target not in _TARGETS:
            raise ApiStatus(
                400,
                f"Value for 'target_lang' not supported: {target}; this server translates Chinese to English "
                f"(target_lang EN, EN-US or EN-GB)",
            )
        source = (fields.text("source_lang") or "").strip().upper()
        if source and source not in _SOURCE_VARIANTS:
            raise ApiStatus(
                400,
                f"Value for 'source_lang' not supported: {source}; this server translates Chinese (source_lang ZH, "
                f"ZH-HANS or ZH-HANT) to English",
            )
        tag_handling = (fields.text("tag_handling") or "").strip().lower()
        if tag_handling not in ("", "html"):
            raise ApiStatus(400, f"Value for 'tag_handling' not supported: {tag_handling}; this server handles html")
        if fields.get("glossary_id"):
            raise ApiStatus(
                400,
                "glossary_id is not supported: this server applies its deployment's glossary (TRANSLATE_GLOSSARY_FILE) "
                "to every request",
            )
        service = self.startup.require_service()
        options = TranslateOptions(format="html" if tag_handling else "text", source=_SOURCE_VARIANTS.get(source, AUTO))
        translations = service.translate_many(texts, options)
        billed = [len(text) for text in texts]
        with self._lock:
            self._characters += sum(billed)
        return {
            "translations": [
                {"detected_source_language": "ZH", "text": english, "billed_characters": characters}
                for english, characters in zip(translations, billed, strict=True)
            ]
        }


def _texts(fields: RequestFields) -> list[str]:
    value = fields.get("text")
    if value is None:
        raise ApiStatus(400, "Parameter 'text' not specified")
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
        raise ApiStatus(400, "Parameter 'text' must be a string or a non-empty list of strings")
    return texts
