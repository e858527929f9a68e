"""The shared decoder's rows and threads (``handler.decoder``) with a scripted search in place of a model: a row
goes back to its request as soon as the search has it, not when its batch ends; with two workers a second batch
starts beside the first once as many inputs wait as the first still searches, and not for a lone row."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

import pytest

from handler.decoder import Decoder, Job, SearchKey
from handler.model.batching import Batch
from handler.model.decoding import Hypothesis, RowDone
from handler.translation_memory import MemoryKey, TranslationMemory

KEY = SearchKey(4, None, 1.5, True)
WAIT_S = 10.0


class ScriptedSearch:
    """A search whose batches each wait for the test: ``release(text)`` hands that row back while its batch goes on
    (the batch ends with its last row, as a real search does); ``end(batch)`` ends a batch at once (every row it has
    not handed back comes back with it)."""

    def __init__(self) -> None:
        self.condition = threading.Condition()
        self.batches: list[list[str]] = []  # the texts of each batch begun, in order
        self.released: set[str] = set()
        self.ended: set[int] = set()

    def __call__(self, rows: list[list[int]], key: SearchKey, on_row: RowDone, parts: int) -> list[Hypothesis]:
        texts = ["".join(map(chr, row)) for row in rows]
        with self.condition:
            number = len(self.batches)
            self.batches.append(texts)
            self.condition.notify_all()
        handed: set[int] = set()
        while True:
            with self.condition:
                ready = [i for i, text in enumerate(texts) if text in self.released and i not in handed]
                if not ready and number not in self.ended:
                    assert self.condition.wait(WAIT_S), "the test never released the batch"
                    continue
            for index in ready:
                handed.add(index)
                on_row(index, Hypothesis(rows[index]))
            if number in self.ended or len(handed) == len(rows):  # every row handed back: the search is over
                return [Hypothesis(row) for row in rows]

    def release(self, text: str) -> None:
        with self.condition:
            self.released.add(text)
            self.condition.notify_all()

    def end(self, batch: int) -> None:
        with self.condition:
            self.ended.add(batch)
            self.condition.notify_all()

    def wait_for_batches(self, count: int) -> None:
        with self.condition:
            assert self.condition.wait_for(lambda: len(self.batches) >= count, WAIT_S), self.batches


def one_batch(lengths: list[int], key: SearchKey) -> list[Batch]:
    return [Batch(tuple(range(len(lengths))), max(lengths))]


def scripted_decoder(search: ScriptedSearch, workers: int) -> Decoder:
    return Decoder(
        search=search,
        plan=one_batch,
        encode=lambda texts: [list(map(ord, text)) for text in texts],
        finish=lambda ids: "".join(map(chr, ids)).upper(),
        memory=TranslationMemory(0),
        memory_key=lambda text, key: MemoryKey("bundle", key.beam_size, None, 1.5, True, text),
        workers=workers,
    )


@contextmanager
def asking(decoder: Decoder) -> Iterator[Callable[[list[str]], Future[dict[str, str]]]]:
    """``ask(texts)``: a request for ``texts`` on a thread of its own; its future holds what came back."""
    with ThreadPoolExecutor(max_workers=8) as pool:

        def ask(texts: list[str]) -> Future[dict[str, str]]:
            def wait() -> dict[str, str]:
                job = Job(KEY)
                with decoder.decode(texts, job) as answers:
                    for _ in answers:
                        pass
                return {text: job.decoded[text].translation for text in texts}

            return pool.submit(wait)

        yield ask


def test_a_row_goes_back_to_its_request_while_its_batch_still_searches() -> None:
    search = ScriptedSearch()
    decoder = scripted_decoder(search, workers=1)
    with asking(decoder) as ask:
        holding = ask(["zz"])  # the only worker searches it while the next two requests queue
        search.wait_for_batches(1)
        short, long = ask(["ab"]), ask(["abcdef"])
        search.release("zz")
        assert holding.result(WAIT_S) == {"zz": "ZZ"}
        search.wait_for_batches(2)
        assert sorted(search.batches[1]) == ["ab", "abcdef"], "the two requests share the next batch"
        search.release("ab")
        assert short.result(WAIT_S) == {"ab": "AB"}
        assert not long.done(), "the long row's batch is still searching"
        search.end(1)
        assert long.result(WAIT_S) == {"abcdef": "ABCDEF"}


def test_a_second_worker_starts_beside_a_batch_once_as_many_rows_wait_as_it_still_searches() -> None:
    search = ScriptedSearch()
    decoder = scripted_decoder(search, workers=2)
    with asking(decoder) as ask:
        three = ask(["aa", "bb", "cc"])  # queued at once: one batch
        search.wait_for_batches(1)
        lone = ask(["dd"])
        assert not _begins(search, 1), "a lone row does not start beside a batch that searches three"
        search.release("aa")
        search.release("bb")  # the first batch now searches one row: one waiting row makes a batch beside it
        assert _begins(search, 1), "the free worker starts the waiting row beside the running batch"
        assert search.batches == [["aa", "bb", "cc"], ["dd"]]
        search.release("dd")
        assert lone.result(WAIT_S) == {"dd": "DD"}
        assert not three.done(), "the first batch still searches its third row"
        search.end(0)
        assert three.result(WAIT_S) == {"aa": "AA", "bb": "BB", "cc": "CC"}


def test_one_worker_never_runs_two_batches_at_once() -> None:
    search = ScriptedSearch()
    decoder = scripted_decoder(search, workers=1)
    with asking(decoder) as ask:
        first = ask(["aa", "bb"])
        search.wait_for_batches(1)
        second = ask(["cc", "dd"])  # as many rows as the batch searches: a second worker would start
        assert not _begins(search, 1), "the only worker is searching"
        search.end(0)
        assert _begins(search, 1)
        search.end(1)
        assert first.result(WAIT_S) == {"aa": "AA", "bb": "BB"} and second.result(WAIT_S) == {"cc": "CC", "dd": "DD"}


def test_workers_and_parts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="workers and parts must be at least 1"):
        scripted_decoder(ScriptedSearch(), workers=0)


def _begins(search: ScriptedSearch, count: int, within_s: float = 0.5) -> bool:
    """Whether more than ``count`` batches have begun within ``within_s`` seconds."""
    with search.condition:
        return search.condition.wait_for(lambda: len(search.batches) > count, within_s)
