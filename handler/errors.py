"""The errors the translator raises: a small hierarchy whose messages say what was wrong and what is allowed.

Each error owns its answer: ``code`` (the stable name in error bodies) and the HTTP ``status`` of each API's shape,
this server's own and the drop-in DeepL and LibreTranslate ones (``handler.api.messages.status_for`` reads them, the
one place an error becomes a status). A subclass anywhere (the storage's, the formats') declares its own the same way.
"""

from __future__ import annotations


class TranslatorError(Exception):
    """Base class. ``code`` is a stable machine-readable name used in error responses; ``status`` the HTTP status of
    this server's own API; ``deepl_status`` DeepL's where its clients expect another (None: ``status``);
    ``libretranslate_status`` LibreTranslate's, which answers 400, 403 or 500 (and 429 when it is rate-limited)."""

    code = "internal_error"
    status = 500
    deepl_status: int | None = None
    libretranslate_status = 500


class InvalidRequestError(TranslatorError):
    """The request is malformed or a value is out of range (HTTP 400)."""

    code = "invalid_request"
    status = 400
    libretranslate_status = 400


class RequestTooLargeError(TranslatorError):
    """The request exceeds a configured size limit (HTTP 413)."""

    code = "request_too_large"
    status = 413
    libretranslate_status = 400  # LibreTranslate answers a request too large with 400


class ModelUnavailableError(TranslatorError):
    """The model bundle cannot be loaded or used (HTTP 503)."""

    code = "model_unavailable"
    status = 503


class BundleError(ModelUnavailableError):
    """The bundle on disk is missing, incomplete, corrupted or of an unsupported format."""

    code = "bundle_invalid"


class ConfigurationError(TranslatorError):
    """An environment variable or setting has a value the translator cannot use."""

    code = "configuration_error"


class DeadlineExceededError(TranslatorError):
    """The work cannot be finished in the time left (e.g. a Lambda invocation's remaining time)."""

    code = "deadline_exceeded"
    status = 503


class ServerBusyError(TranslatorError):
    """More work is queued than the decoder's budget (``handler.decoder``): retry after ``retry_after_s`` seconds
    (answered with ``Retry-After``; DeepL's and LibreTranslate's clients retry 429 themselves)."""

    code = "busy"
    status = 429
    libretranslate_status = 429

    def __init__(self, message: str, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class KeyLimitError(TranslatorError):
    """An API key over one of its limits (``TRANSLATE_API_KEYS``' ``chars=`` or ``rate=``, ``handler.api.quotas``):
    nothing was translated; its period ends in ``retry_after_s`` seconds (answered with ``Retry-After``)."""

    status = 429
    libretranslate_status = 429

    def __init__(self, message: str, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class QuotaExceededError(KeyLimitError):
    """The key's characters for the period are used up (or the request alone asks more than are left): 429 on this
    server's and LibreTranslate's APIs, 456 on DeepL's (its "Quota exceeded", which its clients do not retry)."""

    code = "quota_exceeded"
    deepl_status = 456


class RateLimitedError(KeyLimitError):
    """The key sent more requests in the period than its rate allows: 429 on every API (DeepL's "Too many
    requests", which its clients retry after a while)."""

    code = "rate_limited"


class StorageError(TranslatorError):
    """The object store kept failing (connection dropped, timed out, 5xx) after retries, or no time was left to
    retry; nothing was written, and the platform retries the event."""

    code = "storage_unavailable"


class UnauthorizedError(TranslatorError):
    """A request without a valid API key where the deployment requires one (TRANSLATE_API_KEYS): 401 on this
    server's own API, 403 on the drop-in DeepL and LibreTranslate APIs (as their clients expect)."""

    code = "unauthorized"
    status = 401
    deepl_status = 403
    libretranslate_status = 403


class GlossaryNotFoundError(TranslatorError):
    """A stored glossary (``handler.storage.glossaries``) that does not exist, or belongs to another API key."""

    code = "glossary_not_found"
    status = 404
