"""The errors the translator raises: a small hierarchy whose messages say what was wrong and what is allowed.

The core raises these; only the adapters map them to HTTP statuses (see ``handler.api.router``).
"""

from __future__ import annotations


class TranslatorError(Exception):
    """Base class. ``code`` is a stable machine-readable name used in error responses."""

    code = "internal_error"


class InvalidRequestError(TranslatorError):
    """The request is malformed or a value is out of range (HTTP 400)."""

    code = "invalid_request"


class RequestTooLargeError(TranslatorError):
    """The request exceeds a configured size limit (HTTP 413)."""

    code = "request_too_large"


class ModelUnavailableError(TranslatorError):
    """The model bundle cannot be loaded or used (HTTP 503)."""

    code = "model_unavailable"


class BundleError(ModelUnavailableError):
    """The bundle on disk is missing, incomplete, corrupted or of an unsupported format."""

    code = "bundle_invalid"


class ConfigurationError(TranslatorError):
    """An environment variable or setting has a value the translator cannot use."""

    code = "configuration_error"


class DeadlineExceededError(TranslatorError):
    """The work cannot be finished in the time left (e.g. a Lambda invocation's remaining time)."""

    code = "deadline_exceeded"


class StorageError(TranslatorError):
    """The object store kept failing (connection dropped, timed out, 5xx) after retries, or no time was left to
    retry; nothing was written, and the platform retries the event."""

    code = "storage_unavailable"


class UnauthorizedError(TranslatorError):
    """A request without a valid API key where the deployment requires one (TRANSLATE_API_KEYS): 401 on this
    server's own API, 403 on the drop-in DeepL and LibreTranslate APIs (as their clients expect)."""

    code = "unauthorized"


class GlossaryNotFoundError(TranslatorError):
    """A stored glossary (``handler.storage.glossaries``) that does not exist, or belongs to another API key."""

    code = "glossary_not_found"
