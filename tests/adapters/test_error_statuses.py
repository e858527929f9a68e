"""Every error owns its answer (``handler.errors``): the status each API's shape gives it comes from what its class
declares, read in one place (``handler.api.messages.status_for``), and the codes this API's error body may carry are
those of the error classes (``error_codes``), so a new error needs no table edited elsewhere."""

from __future__ import annotations

import inspect

import pytest

from handler import errors
from handler.api import messages
from handler.api.messages import ErrorShape, error_codes, status_for
from handler.api.openapi import build_document
from handler.config import RuntimeConfig
from handler.storage.documents import (
    DocumentKeyError,
    DocumentNotFoundError,
    DocumentNotReadyError,
    DocumentQueueFullError,
)

OWN, DEEPL, LIBRETRANSLATE = ErrorShape.OWN, ErrorShape.DEEPL, ErrorShape.LIBRETRANSLATE

# (error, this API's status, DeepL's, LibreTranslate's): what the three tables said before the errors owned them
STATUSES = [
    (errors.InvalidRequestError, 400, 400, 400),
    (errors.RequestTooLargeError, 413, 413, 400),
    (errors.UnauthorizedError, 401, 403, 403),
    (errors.GlossaryNotFoundError, 404, 404, 500),
    (errors.ModelUnavailableError, 503, 503, 500),
    (errors.BundleError, 503, 503, 500),
    (errors.DeadlineExceededError, 503, 503, 500),
    (errors.ConfigurationError, 500, 500, 500),
    (errors.StorageError, 500, 500, 500),
    (errors.TranslatorError, 500, 500, 500),
    (DocumentNotFoundError, 404, 404, 500),
    (DocumentKeyError, 403, 403, 500),
    (DocumentNotReadyError, 503, 503, 500),
    (DocumentQueueFullError, 429, 429, 500),
]


@pytest.mark.parametrize(("kind", "own", "deepl", "libretranslate"), STATUSES)
def test_each_api_answers_an_error_with_the_status_its_class_declares(
    kind: type[errors.TranslatorError], own: int, deepl: int, libretranslate: int
) -> None:
    error = kind("what was wrong")
    assert (status_for(error), status_for(error, DEEPL), status_for(error, LIBRETRANSLATE)) == (
        own,
        deepl,
        libretranslate,
    )


def test_a_new_error_declares_its_own_status_and_code() -> None:
    class TeapotError(errors.InvalidRequestError):
        code = "teapot"
        status = 418

    # its own status where it declares one, the rest inherited from the error it refines
    assert (status_for(TeapotError("x")), status_for(TeapotError("x"), LIBRETRANSLATE)) == (418, 400)


def test_the_document_lists_the_code_of_every_error_this_api_raises() -> None:
    declared = {
        kind.code
        for module in (errors, messages)
        for _, kind in inspect.getmembers(module, inspect.isclass)
        if issubclass(kind, errors.TranslatorError | messages.HttpError) and kind.__module__ == module.__name__
    }
    listed = build_document(RuntimeConfig())["components"]["schemas"]["Error"]["properties"]["error"]["properties"]
    assert set(error_codes()) == declared
    assert set(listed["code"]["enum"]) == declared
    assert {"storage_unavailable", "glossary_not_found", "not_found", "unsupported_media_type"} <= declared
