"""``handler.model.parallel_search``: a beam search of several sentences runs as parts side by side on their own
threads, with the outputs of one search over the whole batch, in its order; real sessions of the tiny bundle."""

from __future__ import annotations

import json
import os
import signal
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from handler.config import RuntimeConfig
from handler.errors import ConfigurationError
from handler.model import parallel_search
from handler.model.families.base import SearchRequest
from handler.model.loader import LoadedModel, load_model
from handler.model.parallel_search import part_count, search_in_parts, split_rows
from tests.runtime.conftest import SENTENCES


@pytest.fixture(scope="module")
def loaded_in_parts(tiny_bundle_dir: Path) -> LoadedModel:
    return load_model(RuntimeConfig(bundle_dir=tiny_bundle_dir, threads=1, decode_streams=3))


def _alone(loaded: LoadedModel) -> LoadedModel:
    return replace(loaded, streams=1)


def _rows(loaded: LoadedModel) -> list[list[int]]:
    return loaded.tokenizer.encode_batch(list(SENTENCES))


def test_the_parts_find_what_one_search_finds(loaded_in_parts: LoadedModel) -> None:
    rows = _rows(loaded_in_parts)
    limits = tuple(2 * len(row) + 3 for row in rows)  # one limit per row, as the service asks
    for request in (
        SearchRequest(beam_size=4, max_new_tokens=limits),
        SearchRequest(beam_size=3, max_new_tokens=12, repetition_guard=False, min_new_tokens=5),
    ):
        in_parts = loaded_in_parts.search(rows, request, width_multiple=16)
        alone = _alone(loaded_in_parts).search(rows, request, width_multiple=16)
        assert in_parts == alone
        assert loaded_in_parts.search_n_best(rows, request, 3) == _alone(loaded_in_parts).search_n_best(
            rows, request, 3
        )


def test_each_part_runs_on_its_own_thread_and_the_results_keep_the_batch_order(
    loaded_in_parts: LoadedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, list[int]]] = []
    real = loaded_in_parts.decoding.search

    def recorded(model, input_ids, attention_mask, request, on_row=None):  # type: ignore[no-untyped-def]
        seen.append((threading.get_ident(), input_ids[:, 0].tolist()))
        return real(model, input_ids, attention_mask, request, on_row)

    monkeypatch.setattr(loaded_in_parts.decoding, "search", recorded)
    rows = _rows(loaded_in_parts)
    found = loaded_in_parts.search(rows, SearchRequest(beam_size=2, max_new_tokens=8))
    assert len(seen) == 3 and len({thread for thread, _ in seen}) == 3  # 3 streams: 3 parts
    assert sorted(first for _, firsts in seen for first in firsts) == sorted(row[0] for row in rows)
    monkeypatch.undo()
    assert found == _alone(loaded_in_parts).search(rows, SearchRequest(beam_size=2, max_new_tokens=8))


def test_which_searches_split() -> None:
    beam = SearchRequest(beam_size=4, max_new_tokens=10)
    assert part_count(16, beam, streams=2) == 2
    assert part_count(16, beam, streams=8) == 8
    assert part_count(4, beam, streams=2) == 2
    assert part_count(3, beam, streams=2) == 1  # parts of 2 sentences or more: a small batch gains nothing
    assert part_count(16, beam, streams=1) == 1
    assert part_count(16, SearchRequest(beam_size=1, max_new_tokens=10), streams=2) == 1  # greedy: nothing
    assert [rows.tolist() for rows in split_rows(7, 3)] == [[0, 3, 6], [1, 4], [2, 5]]


def test_a_failing_part_fails_the_search_after_every_part_has_ended() -> None:
    ended: list[int] = []

    def search(ids: np.ndarray, mask: np.ndarray, request: SearchRequest, on_row: object) -> list[int]:
        first = int(ids[0, 0])
        if first == 1:
            raise ValueError("part one failed")
        threading.Event().wait(0.2)  # the other parts are still searching when part one fails
        ended.append(first)
        return ids[:, 0].tolist()

    ids = np.arange(8, dtype=np.int64)[:, None]
    with pytest.raises(ValueError, match="part one failed"):
        search_in_parts(ids, np.ones_like(ids), SearchRequest(beam_size=4, max_new_tokens=5), 4, search)
    assert sorted(ended) == [0, 2, 3]


def test_a_forked_child_searches_in_parts_on_threads_of_its_own(loaded_in_parts: LoadedModel) -> None:
    rows = _rows(loaded_in_parts)
    request = SearchRequest(beam_size=2, max_new_tokens=8)
    expected = [hypothesis.ids for hypothesis in loaded_in_parts.search(rows, request)]  # the parent's threads exist
    assert parallel_search._pool is not None
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        signal.alarm(60)  # a child that handed its parts to its parent's threads would wait for ever
        os.close(read_end)
        os.write(write_end, json.dumps([h.ids for h in loaded_in_parts.search(rows, request)]).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        found = json.loads(pipe.read() or b"null")
    _, status = os.waitpid(child, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert found == expected


def test_the_setting(tiny_bundle_dir: Path) -> None:
    assert RuntimeConfig.from_env({"TRANSLATE_DECODE_STREAMS": "3"}).decoding_streams == 3
    assert 1 <= RuntimeConfig.from_env({}).decoding_streams <= 2  # automatic: one per CPU, at most 2
    with pytest.raises(ConfigurationError, match="TRANSLATE_DECODE_STREAMS"):
        RuntimeConfig.from_env({"TRANSLATE_DECODE_STREAMS": "-1"})
    assert load_model(RuntimeConfig(bundle_dir=tiny_bundle_dir, threads=1, decode_streams=1)).streams == 1
