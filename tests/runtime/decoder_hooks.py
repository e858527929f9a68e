"""A hook into a service's decoder (``handler.decoder``) for tests that need to act between its batches."""

from __future__ import annotations

from collections.abc import Callable

from handler.decoder import SearchKey
from handler.model.decoding import Hypothesis
from handler.service import TranslationService


def after_each_batch(service: TranslationService, hook: Callable[[list[list[int]]], object]) -> None:
    """``hook(rows)`` on the decoder's thread as each batch ends, before the next one is chosen (a hook that waits
    holds the decoder: what arrives meanwhile queues)."""
    search = service.decoder._search

    def searched(rows: list[list[int]], key: SearchKey) -> list[Hypothesis]:
        found = search(rows, key)
        hook(rows)
        return found

    service.decoder._search = searched
