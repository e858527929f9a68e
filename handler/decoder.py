"""One decoder for every request of a process: the requests' segments batched together, fairly, with back-pressure.

A request hands ``Decoder.decode`` the model inputs it needs (after splitting, the translation memory and its own
de-duplication) with a ``Job``: its search settings, priority and deadline. Inputs the translation memory holds are
answered at once; the rest wait in one queue shared by every request of the process, and decoding threads take
batches from it. Each batch holds inputs whose search settings match (``SearchKey``: whatever changes a row's
search), chosen by the planner (``handler.model.batching``: token and cache budgets) from everything waiting with
those settings, so concurrent requests fill each other's batches. Each row goes back to every request that asked
for it as soon as the search has finished it (a sentence leaves its batch when done), not when the batch's longest
row ends; the same input asked by two requests at once is decoded once. Outputs do not depend on the batch a row is
in (``handler.model.decoding``: each row's own length limit, its own beams), so a request gets byte for byte what
it would get alone.

**Several batches at once.** Up to ``workers`` batches are searched at once, each on a thread of its own (the
service gives one per core; a bundle that opens lean, the full-size CSANMT, one). A batch that starts alone is
searched in ``parts`` (``handler.model.parallel_search``: its Python overlaps the other part's model call); one
that starts beside another runs whole, the cores being taken. A free thread does not start a lone row beside a
batch that still searches many (a small batch costs almost a full one's step): it starts when at least as many
inputs wait as the batches under way still search. So as a batch's short rows finish and their requests come back
with their next sentences, the next batch forms beside its long rows instead of after them: the cores stay busy
with batches of useful size, which is where serving many users gains on decoding each request alone.

**Policy.** Each batch is built around one request's oldest waiting input, the *head*: requests take turns
(round-robin, in the order they arrived), interactive requests (the HTTP APIs) before bulk work (documents, file
events, fan-out parts), except that bulk work that has waited ``BULK_AGE_BOUND_S`` gets the next turn, so neither
starves. The planner then fills the head's batch with the inputs of similar length from every waiting request of
the same settings. A short request arriving while a long document decodes therefore waits at most for a batch
under way to end and is in the next one.

**Back-pressure.** The decoder measures its speed on finished batches (``ThroughputMeter``; time counted once while
batches overlap) and knows the work queued. The work ahead of a new request is what the turns decode before it ends:
the batches under way, and of each waiting request its remaining work, but no more than the new request's own plus a
batch (a long document queued delays a short request by about a batch, not by its whole length). A request whose own
work and the work ahead cannot end before its deadline is refused at once (``DeadlineExceededError``, as before:
naming the ways out); when the work ahead holds more than ``max_queue_s`` seconds at the measured speed, a request
is refused with ``ServerBusyError`` (429, with the seconds after which to retry). A request that stops waiting (a
client that hung up, a closed stream, an error) takes its waiting inputs out of the queue, unless another request
waits for them too.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from handler.errors import DeadlineExceededError, ServerBusyError
from handler.model.batching import Batch
from handler.model.decoding import Hypothesis, RowDone
from handler.model.memory import release_free_heap
from handler.translation_memory import MemoryKey, Remembered, TranslationMemory, WorkCounts, current_work

logger = logging.getLogger(__name__)

_FORKED = threading.Lock()  # one thread of a forked worker resets its decoder's queue
SPEED_MEMORY = 0.8  # weight of earlier batches in the measured decoding speed
BULK_AGE_BOUND_S = 2.0  # bulk work that has waited this long takes the next turn, ahead of interactive requests
DEFAULT_MAX_QUEUE_S = 30.0  # past this much queued work (at the measured speed) a request is refused: 429
GATHER_S = 0.01  # after a batch, how long a small queue waits for the requests it answered to come back
GATHER_ROWS = 4
IDLE_EXIT_S = 30.0  # the decoding thread ends after this long with nothing to do (the next request starts one)
EXIT_WAIT_S = 30.0  # at the process's exit, how long the batches under way may take to end


class Priority(IntEnum):
    INTERACTIVE = 0  # the HTTP APIs: someone waits for the answer
    BULK = 1  # documents, file events, fan-out parts


@dataclass(frozen=True)
class SearchKey:
    """Whatever changes a row's search: rows of one batch share it."""

    beam_size: int
    length_penalty: float | None
    max_length_ratio: float
    repetition_guard: bool


class ThroughputMeter:
    """Decoding speed measured on finished batches, recent batches weighing more; projects future work.

    Work is counted in source tokens times beams (a batch's output length follows its source length).
    """

    def __init__(self, memory: float = SPEED_MEMORY) -> None:
        self._memory = memory
        self._seconds = 0.0
        self._work = 0.0

    def record(self, seconds: float, work: float) -> None:
        self._seconds = self._memory * self._seconds + seconds
        self._work = self._memory * self._work + work

    def seconds_for(self, work: float) -> float | None:
        """Projected seconds for ``work``; None before anything was measured."""
        return work * self._seconds / self._work if self._work else None


@dataclass
class Job:
    """One request's share of the decoder: its settings, priority and deadline, and what it has decoded so far
    (model input -> its decoding; the translation memory's answers included)."""

    key: SearchKey
    priority: Priority = Priority.INTERACTIVE
    deadline: float | None = None  # a time.monotonic() value
    # True: refused at once when all its work, behind the queue, cannot end before the deadline; False
    # (streaming): a batch of its is not begun when it would end past the deadline, so what is done in time goes out
    refuse_early: bool = True
    noun: str = "the text"  # what the deadline's messages call the request's text
    decoded: dict[str, Remembered] = field(default_factory=dict)


@dataclass
class _Waiting:
    """A model input in the queue: its token ids and the jobs waiting for it."""

    text: str
    ids: list[int]
    key: SearchKey
    jobs: list[_Ticket]


@dataclass
class _Ticket:
    """A job's wait in the queue: what it still waits for, what came back, and its place in the turns."""

    job: Job
    number: int  # arrival order: the round-robin's order
    arrived: float
    characters: dict[str, int]  # each input's characters, every occurrence (progress counts them all)
    waiting: dict[str, _Waiting] = field(default_factory=dict)
    finished: list[int] = field(default_factory=list)  # characters of each batch that answered some of it
    failure: BaseException | None = None
    began: float | None = None  # when its first batch began: the end of its queue wait (handler.metrics)
    work: WorkCounts | None = field(default_factory=current_work.get)  # the request's figures, where it has them
    batch_numbers: set[int] = field(default_factory=set)  # the batches that answered some of its inputs

    @property
    def batches(self) -> int:
        return len(self.batch_numbers)


class Answers:
    """A job's answers from the decoder (``Decoder.decode``): iterate for the characters each batch answered;
    ``close`` (or the end of a ``with``) takes what still waits out of the queue."""

    def __init__(self, decoder: Decoder, ticket: _Ticket | None) -> None:
        self._decoder = decoder
        self._ticket = ticket

    def __iter__(self) -> Iterator[int]:
        return self

    def __next__(self) -> int:
        if self._ticket is None:
            raise StopIteration
        answered = self._decoder._next_answer(self._ticket)
        if answered is None:
            self.close()
            raise StopIteration
        return answered

    def close(self) -> None:
        if self._ticket is not None:
            self._decoder._leave(self._ticket)
            self._ticket = None

    def __enter__(self) -> Answers:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Decoder:
    """The process's one decoder (``TranslationService.decoder``). ``search(rows, key, on_row, parts)`` runs one
    batch of token rows in up to ``parts`` parts, handing each row's hypothesis to ``on_row(index, hypothesis)`` as
    soon as it is done; ``plan(lengths, key)`` cuts waiting inputs into batches; ``finish(ids)`` turns a
    hypothesis's ids into cleaned English; ``memory_key(text, key)`` names an input in the translation memory."""

    def __init__(
        self,
        search: Callable[[list[list[int]], SearchKey, RowDone, int], list[Hypothesis]],
        plan: Callable[[list[int], SearchKey], list[Batch]],
        encode: Callable[[list[str]], list[list[int]]],
        finish: Callable[[Sequence[int]], str],
        memory: TranslationMemory,
        memory_key: Callable[[str, SearchKey], MemoryKey],
        max_queue_s: float = DEFAULT_MAX_QUEUE_S,
        workers: int = 1,
        parts: int = 1,
    ) -> None:
        if workers < 1 or parts < 1:
            raise ValueError(f"workers and parts must be at least 1; got {workers} and {parts}")
        self._search, self._plan, self._encode, self._finish = search, plan, encode, finish
        self.memory = memory
        self._memory_key = memory_key
        self.max_queue_s = max_queue_s
        self.workers = workers  # batches under way at once, each on a thread of its own
        self.parts = parts  # the parts a batch under way alone is searched in (a batch beside another: one)
        self.throughput = ThroughputMeter()
        self.batches = 0  # batches decoded since the start (tests, the serving benchmark)
        self.rows = 0  # rows decoded since the start
        self._reset()

    def _reset(self) -> None:
        """A queue of its own for this process: a forked worker inherits its parent's objects, not its threads."""
        self._pid = os.getpid()
        self._condition = threading.Condition()
        self._queue: dict[tuple[SearchKey, str], _Waiting] = {}  # insertion order: first asked, first in the queue
        self._decoding: dict[tuple[SearchKey, str], _Waiting] = {}  # the batch under way: a new asker joins it
        self._tickets: list[_Ticket] = []  # jobs with inputs in the queue, in arrival order
        self._numbers = itertools.count()
        self._batch_numbers = itertools.count()
        self._turn = -1  # the number of the last ticket whose input headed a batch
        self._threads = 0  # decoding threads alive (at most ``workers``)
        self._idle = 0  # of them, those waiting for work
        self._under_way = 0  # batches being searched
        self._live = 0  # rows of the batches under way not yet answered
        self._charged_until = 0.0  # time.perf_counter() up to which decoding time is in the throughput meter
        self._batch_work = 0.0  # a batch's work, recent batches weighing more (SPEED_MEMORY): a turn's length
        self._last_batch_end = 0.0  # time.monotonic() when the last batch ended
        self._last_batch_jobs = 0  # how many requests it answered
        self._closing = False  # the process exits: no batch starts
        _DECODERS.add(self)

    # --- a request's side --------------------------------------------------------------------------------------

    def decode(self, inputs: Sequence[str], job: Job, *, in_source_order: bool = False) -> Answers:
        """Start decoding the ``inputs`` ``job`` has not decoded yet into ``job.decoded``: the translation memory's
        answers are there when this returns, the rest are queued. The returned ``Answers`` yields the characters
        (every occurrence) of its inputs each batch answered, as the batches end, and raises what failed the job
        (``DeadlineExceededError``, the model's error); closing it (or leaving its ``with``) takes the job's inputs
        still waiting out of the queue. ``in_source_order``: the job's inputs head batches in the order given (a
        stream needs its units in order); otherwise longest first, as the planner takes them. Refusals
        (``ServerBusyError``, a deadline the work cannot meet) are raised here, before anything is queued."""
        if self._pid != os.getpid():
            with _FORKED:
                if self._pid != os.getpid():
                    self._reset()
        fresh = self._fresh(inputs, job)
        if not fresh:
            return Answers(self, None)
        characters: dict[str, int] = {}
        for text in fresh:
            characters[text] = characters.get(text, 0) + len(text)
        distinct = list(characters)
        ids = self._encode(distinct)
        return Answers(self, self._enqueue(job, distinct, ids, characters, in_source_order))

    def _fresh(self, inputs: Sequence[str], job: Job) -> list[str]:
        """The ``inputs`` neither the job nor the translation memory has translated yet, every occurrence (the
        memory's answers go into ``job.decoded``); counted in the request's work (from memory, decoded)."""
        fresh: set[str] = set()
        from_memory = 0
        for text in dict.fromkeys(inputs):
            if text in job.decoded:
                continue
            remembered = self.memory.get(self._memory_key(text, job.key))
            if remembered is None:
                fresh.add(text)
            else:
                job.decoded[text] = remembered
                from_memory += 1
        work = current_work.get()
        if work is not None:
            work.from_memory += from_memory
            work.decoded += len(fresh)
        return [text for text in inputs if text in fresh]

    def _enqueue(
        self,
        job: Job,
        texts: list[str],
        ids: list[list[int]],
        characters: dict[str, int],
        in_source_order: bool,
    ) -> _Ticket:
        order = range(len(texts)) if in_source_order else sorted(range(len(texts)), key=lambda i: -len(ids[i]))
        with self._condition:
            self._admit(job, sum(job.key.beam_size * len(row) for row in ids))
            ticket = _Ticket(job, next(self._numbers), time.monotonic(), characters)
            for index in order:
                text = texts[index]
                waiting = self._queue.get((job.key, text)) or self._decoding.get((job.key, text))
                if waiting is None:
                    waiting = _Waiting(text, ids[index], job.key, [])
                    self._queue[(job.key, text)] = waiting
                waiting.jobs.append(ticket)
                ticket.waiting[text] = waiting
            self._tickets.append(ticket)
            self._start()
            self._condition.notify_all()
        return ticket

    def check_capacity(self) -> None:
        """``ServerBusyError`` when the queue holds more than its budget (a stream calls it before its answer
        begins, so that it is refused with a status, not an error line)."""
        with self._condition:
            self._refuse_when_full()

    def _refuse_when_full(self, work: float = 0.0) -> float | None:
        """The seconds of other work decoded before a new job of ``work`` ends (``_work_ahead``; None before any
        batch was measured); ``ServerBusyError`` past the queue's budget (called with the condition held)."""
        ahead = self.throughput.seconds_for(self._work_ahead(work))
        if ahead is not None and ahead > self.max_queue_s:
            retry = max(1, round(ahead - self.max_queue_s))
            raise ServerBusyError(
                f"the translator is busy: {ahead:,.1f} s of work are queued ahead, more than its "
                f"{self.max_queue_s:g} s queue; retry in about {retry} s",
                retry_after_s=retry,
            )
        return ahead

    def _admit(self, job: Job, work: float) -> None:
        """Refuse at once what cannot be done: the work ahead past the queue's budget (429), or the job's own work
        and the work ahead of it past its deadline (called with the condition held)."""
        ahead = self._refuse_when_full(work)
        if job.deadline is None or not job.refuse_early:
            return
        left = job.deadline - time.monotonic()
        if left <= 0:
            raise DeadlineExceededError("the deadline passed before the translation began; nothing was translated")
        needed = self.throughput.seconds_for(self._work_ahead(work) + work)
        if needed is not None and needed > left:
            queued = f" (with the {ahead:,.1f} s of work queued ahead of it)" if ahead else ""
            raise DeadlineExceededError(
                f"{job.noun} needs about {needed:,.1f} s at the measured speed{queued}, but only {left:,.1f} s are "
                "left before the deadline; nothing was translated"
            )

    def _work_ahead(self, work: float) -> float:
        """The work the decoder does before a new job of ``work`` (source tokens times beams) ends, besides that
        job's own, as the turns share it out: the batches under way, and of each waiting job its remaining work, but
        no more than the new job's own plus a batch (requests take turns batch by batch, so a long document queued
        delays a short request by about a batch, not by the whole document). Counting the whole queue instead
        refused every short request while one long one waited."""
        under_way = sum(w.key.beam_size * len(w.ids) for w in self._decoding.values())
        share = work + self._batch_work
        ahead = float(under_way)
        for ticket in self._tickets:
            queued = [w for w in ticket.waiting.values() if (w.key, w.text) in self._queue]
            ahead += min(float(sum(w.key.beam_size * len(w.ids) for w in queued)), share)
        return ahead

    def _next_answer(self, ticket: _Ticket) -> int | None:
        """The characters the next batch answered for the ticket, waiting for it; None when it has all its inputs;
        raises what failed it."""
        with self._condition:
            while not ticket.finished and ticket.failure is None and ticket.waiting:
                self._condition.wait()
            if ticket.finished:  # every row answered since the last call, at once
                answered = sum(ticket.finished)
                ticket.finished.clear()
                return answered
            if ticket.failure is not None:
                raise ticket.failure
            return None

    def _leave(self, ticket: _Ticket) -> None:
        """The ticket's inputs no other job waits for leave the queue (a closed stream, a failure)."""
        with self._condition:
            self._drop(ticket)
            if ticket in self._tickets:
                self._tickets.remove(ticket)
        if ticket.work is not None:  # the request's queue wait and decoding time (handler.metrics)
            ticket.work.decoder_done(ticket.arrived, ticket.began, time.monotonic())

    # --- the decoding thread -----------------------------------------------------------------------------------

    def _start(self) -> None:
        """Another decoding thread, when work arrives, none waits for it and fewer than ``workers`` run (called with
        the condition held)."""
        if self._idle == 0 and self._threads < self.workers:
            self._threads += 1
            threading.Thread(target=self._run, name="decoder", daemon=True).start()

    def _run(self) -> None:
        while True:
            with self._condition:
                chosen = self._wait_for_batch()
                if chosen is None:
                    self._threads -= 1  # idle: the next request starts another
                    return
                if not self._under_way:
                    self._charged_until = time.perf_counter()  # busy from now: the meter counts from here
                self._under_way += 1
                self._live += len(chosen)
                parts = self.parts if self._under_way == 1 else 1  # beside another batch the cores are taken
                for waiting in chosen:  # under way: out of the queue, still joinable
                    self._decoding[(waiting.key, waiting.text)] = self._queue.pop((waiting.key, waiting.text))
                    for ticket in waiting.jobs:
                        ticket.began = ticket.began or time.monotonic()
            self._decode(chosen, parts)

    def _wait_for_batch(self) -> list[_Waiting] | None:
        """The inputs of the next batch, once it may start; None after ``IDLE_EXIT_S`` without work (called with
        the condition held)."""
        while True:
            if self._queue and not self._closing and self._may_start():
                try:
                    self._gather()
                    chosen = self._next_batch()
                except Exception as error:  # a fault of the decoder itself: every waiting request hears it, none hangs
                    logger.exception("the decoder could not choose a batch")
                    for ticket in list(self._tickets):
                        ticket.failure = error
                        self._drop(ticket)
                    continue
                if chosen:
                    return chosen
                continue
            self._idle += 1
            woken = self._condition.wait(timeout=IDLE_EXIT_S)
            self._idle -= 1
            if not woken and not self._queue and not self._under_way:
                return None

    def _may_start(self) -> bool:
        """A batch starts when none is under way, or when at least as many inputs wait as the batches under way
        still search: a free thread does not take a lone row beside a full batch (a small batch costs almost a
        full one's step), but starts as soon as the running batches' finished rows have made room."""
        return not self._under_way or len(self._queue) >= self._live

    def _gather(self) -> None:
        """Right after a batch that answered several requests, they are making their next ones: when fewer than
        ``GATHER_ROWS`` inputs wait and no batch is under way, wait up to ``GATHER_S`` for more to share the batch
        (called with the condition held). A request that finds the decoder idle, or alone, starts at once."""
        if self._under_way or self._last_batch_jobs < 2 or time.monotonic() - self._last_batch_end > GATHER_S:
            return  # one request at a time (or none lately): nothing to wait for
        until = self._last_batch_end + GATHER_S
        while len(self._queue) < GATHER_ROWS and (left := until - time.monotonic()) > 0:
            self._condition.wait(timeout=left)

    def _next_batch(self) -> list[_Waiting]:
        """The inputs of the next batch (called with the condition held): the head's batch as the planner cuts
        everything waiting with the head's settings; jobs past their deadline are failed first."""
        self._expire()
        head = self._head()
        if head is None:
            return []
        # its companions: inputs of the same settings and of the head's class (an interactive head's batch holds no
        # bulk work, which would take interactive rows' places; a bulk head's takes any)
        priority = _priority(head)
        pool = [w for w in self._queue.values() if w.key == head.key and _priority(w) <= priority]
        pool.sort(key=lambda waiting: waiting is not head)  # the head first: the planner's ties keep it in front
        for batch in self._plan([len(waiting.ids) for waiting in pool], head.key):
            if 0 in batch.indices:
                return [pool[index] for index in batch.indices]
        return [head]

    def _head(self) -> _Waiting | None:
        """The oldest waiting input of the job whose turn it is (``Priority`` first, round-robin within it; bulk
        work waiting past ``BULK_AGE_BOUND_S`` takes the turn)."""
        waiting = [ticket for ticket in self._tickets if ticket.waiting]
        if not waiting:
            return None
        now = time.monotonic()
        overdue = [t for t in waiting if t.job.priority is Priority.BULK and now - t.arrived > BULK_AGE_BOUND_S]
        urgent = min(t.job.priority for t in waiting)
        candidates = overdue or [t for t in waiting if t.job.priority == urgent]
        after = [t for t in candidates if t.number > self._turn]
        ticket = min(after or candidates, key=lambda t: t.number)
        self._turn = ticket.number
        if overdue:
            ticket.arrived = now  # its age counts again from this turn
        return next(iter(ticket.waiting.values()))

    def _expire(self) -> None:
        """Fail the jobs whose next batch could not end before their deadline: past it already, or projected past
        it at the measured speed (called with the condition held; a batch under way is never cut short)."""
        now = time.monotonic()
        for ticket in list(self._tickets):
            deadline = ticket.job.deadline
            if deadline is None or not ticket.waiting or ticket.failure is not None:
                continue
            batch = f"batch {ticket.batches + 1} of {ticket.job.noun}"
            needed = self.throughput.seconds_for(self._next_batch_work(ticket))
            if now >= deadline:
                problem = f"the deadline passed before {batch}"
            elif needed is not None and needed > deadline - now:
                left = deadline - now
                problem = f"{batch} needs about {needed:,.1f} s at the measured speed, but only {left:,.1f} s are left"
                problem += " before the deadline"
            else:
                continue
            done = sum(ticket.characters.values()) - sum(ticket.characters[text] for text in ticket.waiting)
            progress = f"{ticket.batches} batches done" if ticket.batches else "nothing was translated"
            if ticket.batches:
                progress += f" ({done:,} of {sum(ticket.characters.values()):,} characters)"
            ticket.failure = DeadlineExceededError(f"{problem}; {progress}")
            self._drop(ticket)

    def _next_batch_work(self, ticket: _Ticket) -> float:
        """The work of the ticket's next batch, as the planner would cut its waiting inputs alone."""
        waiting = list(ticket.waiting.values())
        batches = self._plan([len(w.ids) for w in waiting], ticket.job.key)
        first = next((batch for batch in batches if 0 in batch.indices), None)
        rows = [waiting[index] for index in first.indices] if first else waiting[:1]
        return float(ticket.job.key.beam_size * sum(len(w.ids) for w in rows))

    def _drop(self, ticket: _Ticket) -> None:
        """The ticket stops waiting: its inputs nobody else waits for leave the queue (one under way ends anyway)."""
        for text, waiting in ticket.waiting.items():
            waiting.jobs.remove(ticket)
            if not waiting.jobs:
                self._queue.pop((waiting.key, text), None)
        ticket.waiting.clear()
        self._condition.notify_all()

    def _decode(self, chosen: list[_Waiting], parts: int) -> None:
        """Search one batch; each row goes to the requests waiting for it as soon as the search has it."""
        key = chosen[0].key
        number = next(self._batch_numbers)
        answered: set[int] = set()  # rows handed back
        asked: dict[int, _Ticket] = {}  # the requests it answered

        def on_row(index: int, hypothesis: Hypothesis) -> None:
            entry = Remembered(self._finish(hypothesis.ids), hypothesis, len(chosen[index].ids))
            with self._condition:
                if index not in answered:
                    answered.add(index)
                    asked.update((id(ticket), ticket) for ticket in chosen[index].jobs)
                    self._answer(chosen[index], entry, number)

        try:
            hypotheses = self._search([waiting.ids for waiting in chosen], key, on_row, parts)
            for index, hypothesis in enumerate(hypotheses):
                on_row(index, hypothesis)  # a row the search did not hand back on its own
        except BaseException as error:  # the batch failed: every job waiting for a row not answered hears it
            with self._condition:
                for index, waiting in enumerate(chosen):
                    if index not in answered:
                        self._fail_row(waiting, error)
                self._end_batch(None, 0.0, 0)
            return
        finally:
            release_free_heap()  # a batch's freed caches, before the next batch grows the heap again
        with self._condition:
            self._end_batch(key, float(key.beam_size * sum(len(waiting.ids) for waiting in chosen)), len(asked))

    def _answer(self, waiting: _Waiting, entry: Remembered, batch: int) -> None:
        """A row's translation to every job waiting for it, and to the translation memory (condition held)."""
        self._live -= 1
        self.rows += 1
        self.memory.put(self._memory_key(waiting.text, waiting.key), entry)
        self._decoding.pop((waiting.key, waiting.text), None)
        for ticket in waiting.jobs:
            ticket.job.decoded[waiting.text] = entry
            ticket.waiting.pop(waiting.text, None)
            ticket.batch_numbers.add(batch)
            ticket.finished.append(ticket.characters[waiting.text])
            if not ticket.waiting and ticket in self._tickets:
                self._tickets.remove(ticket)
        self._condition.notify_all()

    def _fail_row(self, waiting: _Waiting, error: BaseException) -> None:
        """A row of a failed batch: the jobs waiting for it hear the error (condition held)."""
        self._live -= 1
        self._decoding.pop((waiting.key, waiting.text), None)
        for ticket in list(waiting.jobs):
            if ticket.failure is None:
                ticket.failure = error
                self._drop(ticket)

    def _end_batch(self, key: SearchKey | None, work: float, jobs: int) -> None:
        """A batch is over: its decoding time (counted once while batches overlap) and ``work`` go into the meter
        when it succeeded (``key`` given); the threads waiting for room hear it (condition held)."""
        self._under_way -= 1
        now = time.perf_counter()
        if key is not None:
            self.throughput.record(max(0.0, now - self._charged_until), work)
            self._batch_work = work if not self.batches else SPEED_MEMORY * self._batch_work + (1 - SPEED_MEMORY) * work
            self.batches += 1
            self._last_batch_end = time.monotonic()
            self._last_batch_jobs = jobs
        self._charged_until = now
        self._condition.notify_all()

    def close(self, timeout_s: float) -> bool:
        """No batch starts from now on; wait up to ``timeout_s`` for those under way to end. True when none is."""
        with self._condition:
            self._closing = True
            return self._condition.wait_for(lambda: not self._under_way, timeout_s)

    def idle(self) -> bool:
        """Nothing waits in the queue (a batch under way may still end)."""
        with self._condition:
            return not self._queue


_DECODERS: weakref.WeakSet[Decoder] = weakref.WeakSet()


@atexit.register
def _end_batches_at_exit() -> None:
    """At the process's exit, the batches under way end before Python finalizes. A decoding thread is a daemon, and
    a request is answered while its batch still runs (a row is handed back as soon as it is done): the thread may be
    inside ONNX Runtime or another call that let go of the interpreter when the main thread exits, and a daemon
    thread that comes back after finalization began is ended inside that C++ code, which aborts the process
    ("terminate called without an active exception", exit 134, after the CLI had written its translation)."""
    for decoder in list(_DECODERS):
        if decoder._pid == os.getpid():
            decoder.close(EXIT_WAIT_S)


def _priority(waiting: _Waiting) -> Priority:
    """An input's class: the most urgent of the jobs waiting for it."""
    return min(ticket.job.priority for ticket in waiting.jobs)
