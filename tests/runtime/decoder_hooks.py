"""A hook into a service's decoder (``handler.decoder``) for tests that need to act between its batches."""

from __future__ import annotations

from collections.abc import Callable

from handler.decoder import SearchKey
from handler.model.decoding import Hypothesis, RowDone
from handler.service import TranslationService


def after_each_batch(service: TranslationService, hook: Callable[[list[list[int]]], object]) -> None:
    """``hook(rows)`` on a decoding thread as each batch's search ends, before its rows are answered and before
    that thread chooses its next batch (a hook that waits holds the batch's requests, and with one worker the
    decoder: what arrives meanwhile queues)."""
    search = service.decoder._search

    def searched(rows: list[list[int]], key: SearchKey, on_row: RowDone, parts: int) -> list[Hypothesis]:
        found = search(rows, key, lambda index, hypothesis: None, parts)  # answered after the hook
        hook(rows)
        return found

    service.decoder._search = searched
