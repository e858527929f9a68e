"""LibreTranslate's API on the translation service, for its clients (libretranslatepy, browser extensions, apps), as
LibreTranslate >= 1.7.2 answers it (checked against 1.9.6's libretranslate/app.py and its tests; docs/compatibility.md
lists each route's differences).

Routes (``handler.api.compat.libretranslate_routes``, each request's shape declared once in
``handler.api.compat.libretranslate_shapes``, from which both the reading and the OpenAPI schema come; JSON,
form-encoded or multipart/form-data bodies, GET parameters in the query string):

``POST /translate``         ``q`` (a string or a list), ``source`` ("zh-Hans", "zh-Hant", "zh", "zt", "auto", ...),
                            ``target`` ("en"), ``format`` ("text" or "html"), ``api_key``, ``alternatives``
                            → ``{"translatedText": ...}`` (a list for a list), with ``detectedLanguage`` when the
                            source was "auto" and, when ``alternatives`` is 1 to 5 (``MAX_ALTERNATIVES``; more is
                            refused with 400), ``alternatives``: up to that many other distinct translations of each
                            text, from the beam search (``TranslationService.translate_alternatives`` says which).
                            Checked in LibreTranslate's order with its messages: ``q``, ``source`` and ``target``
                            required, ``charLimit`` (TRANSLATE_MAX_CHARS) each text's, at most TRANSLATE_MAX_TEXTS
                            texts. Told apart from this server's own ``POST /translate`` by its fields (``claims``).
``POST /detect``            ``q`` → ``[{"language": "zh-Hans", "confidence": 97.0}]`` ("zh-Hant" for Traditional)
``GET /languages``          the pairs this server translates: zh-Hans → en and zh-Hant → en
``GET /frontend/settings``  the character limit, whether a key is required, the default languages, the file formats
``GET /health``             ``{"status": "ok"}`` (what LibreTranslate's health check asks); 500 without a model
``GET /spec``               the OpenAPI document (``handler.api.openapi``, as ``/openapi.json``)
``POST /suggest``           403: suggestions are off, as on LibreTranslate without ``--suggestions``
``POST /translate_file``    multipart ``file``, ``source``, ``target``, ``api_key`` → ``{"translatedFileUrl":
                            "<scheme>://<host>/download_file/<token>-<name>"}``: translated at once, within the
                            request (``handler.formats.translate_file``; the suffixes of
                            ``FILE_SUFFIXES``), kept in the state location (``handler.storage.translated_files``)
``GET /download_file/<token>-<name>``  that file (Content-Type of its format); the 128-bit token is its credential
``GET /usage``              (this server's, not LibreTranslate's: it has no such route) with API keys, the calling
                            key's characters and requests this period and their limits (``handler.api.quotas``);
                            without keys 400 (nothing is counted)

Errors are LibreTranslate's: ``{"error": "message"}`` with 400 (bad or too large request, unsupported language or
file format, a corrupt file, no ``api_key`` when keys are configured), 413 (a file over ``TRANSLATE_MAX_FILE_BYTES``),
403 (an invalid ``api_key``, or this server's ``X-API-Key`` / ``Authorization: Bearer``: ``handler.api.keys``;
``/suggest``), 404 (an unknown download) and 405, 429 (the key over its ``rate`` or character quota, the decoder
busy; with ``Retry-After``), 500 (translation failed or the model is unavailable). A file's characters count against
its key's quota once it is translated.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote

from handler.api.compat.fields import (
    FORM_TYPE,
    MULTIPART_TYPE,
    ApiStatus,
    HttpRequest,
    HttpResponse,
    RequestFields,
    UnauthorizedError,
    UploadedFile,
    json_response,
    key_is_valid,
    read_fields,
    route_or_refusal,
)
from handler.api.compat.libretranslate_routes import DOWNLOAD_PREFIX, LIBRETRANSLATE_ROUTES, ROUTES
from handler.api.compat.libretranslate_shapes import TARGET
from handler.api.keys import ApiKeys, presented_key
from handler.api.messages import ErrorShape, error_headers, read_json, status_for
from handler.api.quotas import Measured, Quotas
from handler.api.shapes import read_shape, takes_files
from handler.coldstart import Startup
from handler.config import ENV_API_KEYS
from handler.errors import DeadlineExceededError, InvalidRequestError, TranslatorError
from handler.formats import FILE_SUFFIXES, content_type_for, translate_file
from handler.options import TranslateOptions
from handler.storage.state import StateLocation, local_state
from handler.storage.translated_files import TranslatedFiles, valid_download_name
from handler.text.script_conversion import HONG_KONG, SIMPLIFIED, TAIWAN, TRADITIONAL, canonical_variant

if TYPE_CHECKING:  # the answers' types, for mypy: their module is imported when the document is built
    from handler.api.compat.libretranslate_openapi import (
        LibreTranslateDetection,
        LibreTranslateError,
        LibreTranslateFileUrl,
        LibreTranslateHealth,
        LibreTranslateLanguage,
        LibreTranslateResponse,
        LibreTranslateSettings,
        LibreTranslateUsage,
        LibreTranslateUsageCount,
    )
    from handler.service import TranslationService

__all__ = ["LANGUAGES", "MAX_BODY_BYTES", "ROUTES", "LibreTranslateApi"]

logger = logging.getLogger(__name__)

# the codes LibreTranslate >= 1.7.2 answers (libretranslate/language.py ``model2iso``: zh -> zh-Hans, zt -> zh-Hant);
# as a source, the classic zh / zt and every spelling of handler.options are accepted too (``iso2model``)
SIMPLIFIED_CODE = "zh-Hans"
TRADITIONAL_CODE = "zh-Hant"
LANGUAGES: tuple[LibreTranslateLanguage, ...] = (
    {"code": SIMPLIFIED_CODE, "name": "Chinese", "targets": [TARGET]},
    {"code": TRADITIONAL_CODE, "name": "Chinese (traditional)", "targets": [TARGET]},
    {"code": TARGET, "name": "English", "targets": []},
)
_CODE_BY_VARIANT = {
    SIMPLIFIED: SIMPLIFIED_CODE,
    TRADITIONAL: TRADITIONAL_CODE,
    TAIWAN: TRADITIONAL_CODE,
    HONG_KONG: TRADITIONAL_CODE,
}
SUGGESTIONS_DISABLED = "Suggestions are disabled on this server."  # LibreTranslate's words (app.py, /suggest)
# a form body naming one of these (and neither text nor texts) is LibreTranslate's POST /translate
_FORM_FIELDS = ("q", "q[]", "source", "target", "format", "alternatives", "api_key")
MAX_BODY_BYTES = 10 * 1024 * 1024


@dataclass(eq=False, repr=False)  # (no generated __eq__, __repr__ or frozen setters: a cold start's time)
class Call:
    """One request to one of LibreTranslate's routes: its fields, their reading by the route's shape (None without
    one) and the path's parameters."""

    request: HttpRequest
    fields: RequestFields | None
    values: Any
    parameters: dict[str, str]


class LibreTranslateApi:
    def __init__(
        self, startup: Startup, state: Callable[[], StateLocation] | None = None, quotas: Quotas | None = None
    ) -> None:
        """``state``: where translated files are kept (``handler.storage.state``); default: the local folder.
        ``quotas``: the keys' usage and limits (``handler.api.quotas``; default: this configuration's)."""
        self.startup = startup
        config = startup.config
        self.files = TranslatedFiles(state or (lambda: local_state(config)))
        self.keys = ApiKeys.of(startup.config.api_keys)
        self.quotas = quotas or Quotas(config)
        self.routes = ROUTES
        self._openapi: dict[str, Any] | None = None

    def route_of(self, path: str) -> str | None:
        return LIBRETRANSLATE_ROUTES.match(path)[0]

    def claims(self, path: str, request: HttpRequest) -> bool:
        """LibreTranslate's routes; ``POST /translate`` only with a ``q`` field or a non-JSON body."""
        if path != "/translate":
            return self.route_of(path) is not None
        if request.method != "POST":
            return False
        content_type = request.headers.get("content-type", "").lower()
        if content_type.startswith(FORM_TYPE):  # LibreTranslate's clients send forms; this server's API takes JSON
            fields = parse_qs(request.body.decode("utf-8", "replace"), keep_blank_values=True)
            # naming one of LibreTranslate's fields and none of this API's (which is told to send JSON)
            named = any(name in fields for name in _FORM_FIELDS)
            return named and not any(name in fields for name in ("text", "texts"))
        if content_type.startswith(MULTIPART_TYPE):  # a browser's FormData, as LibreTranslate's page sends
            return True
        if "json" not in content_type:
            return False  # this server's own API explains which body it takes
        try:
            payload = read_json(request.body)
        except InvalidRequestError:  # unreadable (not UTF-8, too deep, NaN...): LibreTranslate's if it names q only
            return b'"q"' in request.body and b'"text' not in request.body
        if not isinstance(payload, dict) or any(name in payload for name in ("text", "texts")):
            return False
        return "q" in payload or "target" in payload  # target: LibreTranslate's field only (this API's is English)

    def claims_unread(self, path: str, request: HttpRequest) -> bool:
        """Whether a request refused before its body was read (too large, unreadable) is LibreTranslate's: a path only
        it answers, or ``POST /translate`` with a form or multipart body (what its clients send: libretranslatepy's
        form, its page's FormData; this server's own ``/translate`` takes JSON only). A JSON body to ``/translate``
        cannot be told from this server's own unread (``q`` or ``text`` is in it): it is answered as this server's."""
        if path != "/translate":
            return self.claims(path, request)
        content_type = request.headers.get("content-type", "").lower()
        return request.method == "POST" and content_type.startswith((FORM_TYPE, MULTIPART_TYPE))

    def error_response(self, path: str, error: TranslatorError) -> HttpResponse:
        """``error`` in LibreTranslate's shape, ``{"error": "message"}``, with the status LibreTranslate answers it
        with (``status_for``: a request too large is 400); logged when it is the server's fault."""
        status = status_for(error, ErrorShape.LIBRETRANSLATE)
        if status >= 500:
            logger.error("LibreTranslate %s failed: %s: %s", path, type(error).__name__, error)
        return json_response(status, _error(str(error)), error_headers(error))

    def handle(self, path: str, request: HttpRequest) -> HttpResponse:
        """The answer of the route ``LIBRETRANSLATE_ROUTES`` finds for ``request``: the key checked where the route
        takes one, its fields read by the route's shape; 404 and 405 from the table; errors in ``{"error": ...}``."""
        try:
            found = LIBRETRANSLATE_ROUTES.find(request.method, path)
            if found.template is None:
                raise ApiStatus(404, f"{path} is not a LibreTranslate route this server answers")
            allowed = ROUTES[found.template]
            route = route_or_refusal(request.method, found, allowed, _error)
            if isinstance(route, HttpResponse):  # a preflight, or a method the path does not take
                return route
            fields, values = None, None
            if route.reads:
                files: dict[str, UploadedFile] = {}
                fields = read_fields(request, MAX_BODY_BYTES, files if takes_files(route.shape) else None)
                if route.auth:
                    self._check_key(request, fields)
                    if route.handler != "usage":  # reading its usage is not a request against the key's rate
                        self.quotas.count_request(presented_key(request.headers, fields.text("api_key")))
                if route.shape is not None:
                    values = read_shape(route.shape, fields, self.startup.config, files)
            answer: HttpResponse = getattr(self, "_" + route.handler)(
                Call(request, fields, values, dict(found.parameters))
            )
            return answer
        except ApiStatus as error:
            return json_response(error.status, _error(str(error)))
        except TranslatorError as error:
            return self.error_response(path, error)
        except Exception:
            logger.exception("LibreTranslate %s failed with an unexpected error", path)
            return json_response(500, _error("internal error while translating; the function's log has the details"))

    # --- routes ---------------------------------------------------------------------------------------------
    def _health(self, call: Call) -> HttpResponse:
        self.startup.require_service()  # what LibreTranslate's healthcheck.py asks; unhealthy (500) without a model
        healthy: LibreTranslateHealth = {"status": "ok"}
        return json_response(200, healthy)

    def _suggest(self, call: Call) -> HttpResponse:
        raise ApiStatus(403, SUGGESTIONS_DISABLED)  # LibreTranslate without --suggestions: before reading anything

    def _languages(self, call: Call) -> HttpResponse:
        return json_response(200, list(LANGUAGES))

    def _spec(self, call: Call) -> HttpResponse:
        """The OpenAPI document of this server (``/openapi.json``'s), built on first use."""
        if self._openapi is None:
            # imported here: handler.api.openapi describes the drop-in APIs, so it imports their package
            from handler.api.openapi import build_document

            self._openapi = build_document(self.startup.config)
        return json_response(200, self._openapi)

    def _settings(self, call: Call) -> HttpResponse:
        settings: LibreTranslateSettings = {
            "charLimit": self.startup.config.max_chars,
            "frontendTimeout": 500,
            "apiKeys": self.keys.required,
            "keyRequired": self.keys.required,
            "suggestions": False,
            "filesTranslation": True,
            "supportedFilesFormat": list(FILE_SUFFIXES),
            "language": {
                "source": {"code": "zh", "name": "Chinese"},
                "target": {"code": TARGET, "name": "English"},
            },
        }
        return json_response(200, settings)

    def _check_key(self, request: HttpRequest, fields: RequestFields) -> None:
        """LibreTranslate's answers (app.py ``access_check``): a wrong key 403, no key where one is needed 400."""
        parameter = fields.text("api_key")
        if key_is_valid(request, parameter, self.keys):
            return
        if presented_key(request.headers, parameter) is None:
            raise ApiStatus(
                400, f"Visit the server's operator to get an API key: api_key is required ({ENV_API_KEYS} is set)"
            )
        raise UnauthorizedError(
            "Invalid API key: this server requires an api_key from its list (TRANSLATE_API_KEYS); "
            "ask the server's operator for one"
        )

    def _detect(self, call: Call) -> HttpResponse:
        texts = [call.values.q] if isinstance(call.values.q, str) else call.values.q
        return json_response(200, [self._detection("\n".join(texts))])

    def _detection(self, sample: str) -> LibreTranslateDetection:
        """The language of ``sample``: its Chinese variant with the share of its letters that are Han characters,
        else English (confidence 0 without letters, as LibreTranslate answers a text of emoji or digits)."""
        found = self.startup.require_service().scripts.detect(sample)
        letters = sum(1 for ch in sample if ch.isalpha())
        if not found.han:
            return {"language": TARGET, "confidence": 100.0 if letters else 0.0}
        confidence = round(100.0 * found.han / max(1, letters), 1)
        code = _CODE_BY_VARIANT.get(found.variant, SIMPLIFIED_CODE)
        return {"language": code, "confidence": min(100.0, confidence)}

    def _translate_file(self, call: Call) -> HttpResponse:
        request = call.values
        uploaded: UploadedFile = request.file
        name = uploaded.filename.replace("\\", "/").rsplit("/", 1)[-1].strip()
        config = self.startup.config
        if len(uploaded.data) > config.max_file_bytes:
            raise ApiStatus(
                413,
                f"Invalid request: {name!r} is {len(uploaded.data):,} bytes; the limit is {config.max_file_bytes:,} "
                "(TRANSLATE_MAX_FILE_BYTES)",
            )
        service = self.startup.require_service()
        self.quotas.require_left(self._key(call))  # 429 when the key's characters are used up: counted once done
        deadline = time.monotonic() + config.event_timeout_s - config.deadline_margin_s
        encoding = (request.encoding or "").strip() or None  # this server's extension, as on /v2/document
        options = TranslateOptions(source=canonical_variant(request.source))
        translated = translate_file(uploaded.data, name, service, options, deadline=deadline, encoding=encoding)
        self.quotas.record(self._key(call), translated.source.characters)  # counted once done: a file's own count
        download_name = self.files.put(name, translated.data)
        url: LibreTranslateFileUrl = {"translatedFileUrl": f"{_base_url(call.request)}{DOWNLOAD_PREFIX}{download_name}"}
        return json_response(200, url)

    def _download(self, call: Call) -> HttpResponse:
        download_name = call.parameters["filename"]
        if not valid_download_name(download_name):
            raise ApiStatus(400, "Invalid filename: a download name is <token>-<file name>, as translatedFileUrl gives")
        kept = self.files.get(download_name)
        if kept is None:
            raise ApiStatus(
                404, "Invalid filename: no translated file by this name (it expired, or the URL is mistyped)"
            )
        headers = {
            "Content-Type": content_type_for(kept.name),
            "Content-Disposition": f"attachment; filename*=UTF-8''{quote(kept.name, safe='')}",
            "Cache-Control": "no-store",
        }
        return HttpResponse(200, headers, kept.data)

    def _translate(self, call: Call) -> HttpResponse:
        """LibreTranslate's translation, once its shape has read the request in LibreTranslate's order (app.py
        ``translate``: q, source, target, then their values, the character limit of each text, the batch limit,
        alternatives, the format)."""
        request = call.values
        is_list = not isinstance(request.q, str)
        texts = list(request.q) if is_list else [request.q]
        variant = canonical_variant(request.source)
        service = self.startup.require_service()
        options = TranslateOptions(format=request.format, source=variant)
        translations: list[str] = []
        others: list[list[str]] = []
        config = self.startup.config
        deadline = time.monotonic() + config.event_timeout_s - config.deadline_margin_s
        charge = self.quotas.charge(self._key(call), sum(len(text) for text in texts))  # 429 past the key's quota
        try:
            self._translate_groups(texts, request.alternatives, service, options, deadline, translations, others)
        except TranslatorError:
            charge.refund()
            raise
        result: LibreTranslateResponse = {"translatedText": translations if is_list else translations[0]}
        if variant == "auto":  # each text's, as /detect tells it
            detected = [self._detection(text) for text in texts]
            result["detectedLanguage"] = detected if is_list else detected[0]
        if request.alternatives:
            result["alternatives"] = others if is_list else others[0]
        return json_response(200, result)

    def _translate_groups(
        self,
        texts: list[str],
        alternatives: int,
        service: TranslationService,
        options: TranslateOptions,
        deadline: float,
        translations: list[str],
        others: list[list[str]],
    ) -> None:
        """``texts`` translated into ``translations`` (and ``others``, with alternatives), a group at a time."""
        for group in _groups(texts, self.startup.config.max_chars):  # each text within charLimit; the service's total
            if time.monotonic() >= deadline:
                raise DeadlineExceededError(
                    f"out of time after {len(translations)} of {len(texts)} texts; send fewer or shorter texts"
                )
            if alternatives:
                found = service.translate_alternatives(group, options, alternatives)
                translations += [item.text for item in found]
                others += [list(item.alternatives) for item in found]
            else:
                translations += service.translate_many(group, options)

    def _key(self, call: Call) -> str | None:
        """The key the call presented (checked before)."""
        return presented_key(call.request.headers, call.fields.text("api_key") if call.fields else None)

    def _usage(self, call: Call) -> HttpResponse:
        """The calling key's usage this period: its characters and, with a ``rate``, its requests."""
        counted = self.quotas.usage(self._key(call))
        if counted is None:
            raise ApiStatus(403, f"usage is counted per API key, and this server has none ({ENV_API_KEYS} is not set)")
        usage: LibreTranslateUsage = {"characters": _usage_count(counted.characters)}
        if counted.name:
            usage["name"] = counted.name
        if counted.requests is not None:
            usage["requests"] = _usage_count(counted.requests)
        return json_response(200, usage)


def _base_url(request: HttpRequest) -> str:
    """The URL the client reached this server at: scheme and host as a proxy forwarded them (X-Forwarded-Proto,
    X-Forwarded-Host), else the Host header; X-Forwarded-Prefix is a path prefix (an API Gateway stage)."""
    headers = request.headers
    scheme = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower() or "http"
    host = headers.get("x-forwarded-host", "").split(",")[0].strip() or headers.get("host", "").strip() or "localhost"
    prefix = headers.get("x-forwarded-prefix", "").split(",")[0].strip().rstrip("/")
    return f"{scheme if scheme in ('http', 'https') else 'http'}://{host}{prefix}"


def _groups(texts: list[str], max_chars: int) -> list[list[str]]:
    """``texts`` in order, cut into runs of at most ``max_chars`` characters in all (each text is within it): the
    service's limit a call, while LibreTranslate's ``charLimit`` is each text's."""
    groups: list[list[str]] = []
    size = 0
    for text in texts:
        if not groups or size + len(text) > max_chars:
            groups.append([])
            size = 0
        groups[-1].append(text)
        size += len(text)
    return groups


def _usage_count(measured: Measured) -> LibreTranslateUsageCount:
    return {
        "used": measured.used,
        "limit": measured.limit,
        "period": measured.period,
        "resetsIn": measured.resets_in_s,
    }


def _error(text: str) -> LibreTranslateError:
    """LibreTranslate's error answer."""
    return {"error": text}
