"""The shipped default bundle (``model_artifacts/default``), loaded once per process, for fuzz and hostile-input tests.

The load is cached at module level rather than in a pytest fixture, so a process that runs pytest several times
(mutmut's workers are forked from a process that already ran the tests) opens the ONNX sessions once. One
intra-op thread: deterministic timings on a shared machine, and an ONNX Runtime session without a thread pool
survives a fork.
"""

from __future__ import annotations

from functools import cache
from typing import TypeVar

import pytest

from handler.config import DEFAULT_BUNDLE_DIR, RuntimeConfig
from handler.model.bundle import MANIFEST
from handler.model.families.marian.tokenizer import SentencePieceTokenizer
from handler.model.loader import LoadedModel, load_model
from handler.service import TranslationService

T = TypeVar("T")

NEEDS_SHIPPED_BUNDLE = [
    pytest.mark.shipped_model,
    pytest.mark.skipif(
        not (DEFAULT_BUNDLE_DIR / MANIFEST).exists(), reason="no default bundle in model_artifacts/default"
    ),
]


def needs_shipped_bundle(test: T) -> T:
    """Mark a test as needing ``model_artifacts/default`` (skipped where it is not built)."""
    for mark in NEEDS_SHIPPED_BUNDLE:
        test = mark(test)
    return test


def shipped_config(**overrides: object) -> RuntimeConfig:
    return RuntimeConfig(bundle_dir=DEFAULT_BUNDLE_DIR, threads=1).with_overrides(**overrides)


@cache
def shipped_model() -> LoadedModel:
    return load_model(shipped_config())


def shipped_service(**overrides: object) -> TranslationService:
    """A fresh service (its own limits and lock) on the cached model."""
    return TranslationService(shipped_model(), shipped_config(**overrides))


def shipped_tokenizer() -> SentencePieceTokenizer:
    return shipped_model().tokenizer
