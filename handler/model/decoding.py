"""Greedy and beam search with a KV cache over any model that encodes once and decodes one token per step.

Both searches reproduce ``transformers``' ``generate`` for Marian models token for token (greedy: ``num_beams=1,
do_sample=False``; beam: ``num_beams=K`` with its default ``early_stopping=False``), including two settings
every OPUS-MT checkpoint carries:

* the pad token (also the decoder start) is never produced (``bad_words_ids=[[pad]]``);
* ``max_new_tokens`` counts the end-of-sentence token: when a hypothesis reaches it, its last token is forced
  to be ``</s>`` (``forced_eos_token_id``), so an output holds at most ``max_new_tokens - 1`` tokens. That
  forced step needs no model call and none is made.

The repetition guard bans, before each choice, every token that would make a stretch of 2 to ``max_tandem``
tokens repeat itself at once ("a b c a b c"), extend a run of one token beyond ``max_run``, or repeat an n-gram
of ``ngram_size`` tokens already in the hypothesis (``no_repeat_ngram_size``; 4 by default, so phrases of up to
three tokens such as "I'm" may recur; ``TRIGRAM_GUARD`` is the earlier guard, 3).

Returned ids exclude the decoder start token and the final ``</s>``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

import numpy as np

from handler.model.bundle import ModelSpec

# transformers' beam search marks hypotheses that may not be chosen by adding this; keeping the same constant
# keeps the float32 arithmetic (and therefore the choices) identical
EXCLUDED = np.float32(-1.0e9)


class StepModel(Protocol):
    """What the searches need from a model (``handler.model.families.marian.sessions.OnnxMarian`` is one).

    Every array in the ``cross`` and ``past`` lists has the batch row on axis 0.
    """

    spec: ModelSpec

    def encode(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> list[np.ndarray]: ...

    def empty_past(self, batch_size: int) -> list[np.ndarray]: ...

    def step(
        self,
        input_ids: np.ndarray,
        encoder_attention_mask: np.ndarray,
        past: list[np.ndarray],
        cross: list[np.ndarray],
    ) -> tuple[np.ndarray, list[np.ndarray]]: ...


@dataclass(frozen=True)
class RepetitionGuard:
    """Bans continuations that repeat: degenerate loops ("the the the", a phrase again and again).

    The default stops loops only: a short phrase may recur ("I'm sorry, I'm late" repeats the 3 tokens of "I'm"),
    but no stretch repeats right after itself, no 4 tokens occur twice, and one token not more than ``max_run``
    times in a row. Measured on the repository's dev set (``make fidelity FIDELITY_ARGS=--guards``, README):
    fewer outputs with a loop than the 3-gram guard, at a higher BLEU.
    """

    ngram_size: int = 4  # no n-gram of this many tokens occurs twice in an output (0 = no n-gram blocking)
    max_run: int = 3  # no token occurs more than this many times in a row (0 = no limit)
    max_tandem: int = 32  # no stretch of 2..max_tandem tokens is followed at once by itself (0 = allow)

    def __post_init__(self) -> None:
        if self.ngram_size < 0 or self.ngram_size == 1 or self.max_run < 0 or self.max_tandem < 0:
            raise ValueError(f"ngram_size must be 0 or at least 2, max_run and max_tandem at least 0; got {self}")


DEFAULT_GUARD = RepetitionGuard()
TRIGRAM_GUARD = RepetitionGuard(ngram_size=3, max_run=3, max_tandem=0)  # the guard before: no repeated 3-gram


@dataclass(frozen=True)
class Hypothesis:
    """A search's output for one source row and what the model thought of it (``handler.confidence`` reads it).

    ``log_prob`` sums the model's log-probabilities of the chosen tokens, the end-of-sentence token's included
    (a forced one at the length limit adds 0); ``scored_tokens`` is how many tokens that sum covers.
    ``guard_fired``: somewhere on this output's path the repetition guard banned a token the model preferred to
    the one the search took, so the output is not what the model alone would have chosen there.
    """

    ids: list[int]
    log_prob: float = 0.0
    scored_tokens: int = 0
    guard_fired: bool = False

    @property
    def mean_log_prob(self) -> float:
        """The length-normalized score: the mean log-probability per scored token (0.0 when nothing was scored)."""
        return self.log_prob / self.scored_tokens if self.scored_tokens else 0.0


def _guard_from(repetition_guard: bool | RepetitionGuard) -> RepetitionGuard | None:
    if isinstance(repetition_guard, RepetitionGuard):
        return repetition_guard
    return DEFAULT_GUARD if repetition_guard else None


def ban_repetitions(log_probs: np.ndarray, sequences: np.ndarray, length: int, guard: RepetitionGuard) -> np.ndarray:
    """Set to -inf, in place, every next token ``guard`` forbids after ``sequences[:, :length]``.

    ``sequences`` holds one hypothesis per row of ``log_probs``, decoder start token first. Returns, per row, the
    largest log-probability among the tokens it banned (-inf where it banned none): a search that then takes a
    token of lower log-probability took it because of the guard (``Hypothesis.guard_fired``).
    """
    history = sequences[:, :length]
    banned = np.full(log_probs.shape[0], -np.inf, dtype=np.float32)

    def ban(rows: np.ndarray, tokens: np.ndarray) -> None:
        if rows.size:
            np.maximum.at(banned, rows, log_probs[rows, tokens])
            log_probs[rows, tokens] = -np.inf

    n = guard.ngram_size
    if n and length >= n:
        # rows and start positions j where history[j : j + n - 1] equals the last n - 1 tokens
        windows = length - n + 1
        match = np.ones((history.shape[0], windows), dtype=bool)
        for offset in range(n - 1):
            match &= history[:, offset : offset + windows] == history[:, length - n + 1 + offset, None]
        rows, starts = np.nonzero(match)
        ban(rows, history[rows, starts + n - 1])
    # stretches of k tokens about to repeat at once: history[-2k+1:-k] == history[-k+1:], so the token at -k
    # would complete the copy (the decoder start token, position 0, takes no part)
    for k in range(2, min(guard.max_tandem, length // 2) + 1):
        rows = np.flatnonzero(
            (history[:, length - 2 * k + 1 : length - k] == history[:, length - k + 1 : length]).all(axis=1)
        )
        ban(rows, history[rows, length - k])
    run = guard.max_run
    if run and length >= run:
        last = history[:, length - 1]
        rows = np.flatnonzero((history[:, length - run :] == last[:, None]).all(axis=1))
        ban(rows, last[rows])
    return banned


def _restrict(log_probs: np.ndarray, spec: ModelSpec, generated: int, min_new_tokens: int) -> None:
    log_probs[:, spec.pad_id] = -np.inf
    if generated < min_new_tokens:
        log_probs[:, spec.eos_id] = -np.inf


RowLimits = int | Sequence[int] | np.ndarray  # one max_new_tokens for the batch, or one per source row
# called with a source row and its output as soon as the search has finished that row, before the batch ends (the
# process's decoder hands it to the requests waiting for it); a search may also call it for every row at its end
RowDone = Callable[[int, "Hypothesis"], None]


def row_limits(max_new_tokens: RowLimits, rows: int) -> np.ndarray:
    """``max_new_tokens`` as one limit per row (int64 [rows]).

    A limit per row keeps decoding batch invariant: a row's output never depends on which other rows share its
    batch, even when it runs to its limit (a limit set by the batch's longest source would let a short sentence
    run on further in a batch with a long one than alone).
    """
    limits = np.broadcast_to(np.asarray(max_new_tokens, dtype=np.int64), (rows,)).copy()
    if rows and limits.min() < 1:
        raise ValueError(
            f"max_new_tokens must be at least 1 (it counts the end-of-sentence token); got {int(limits.min())}"
        )
    return limits


def _check_lengths(max_new_tokens: int, min_new_tokens: int) -> None:
    if max_new_tokens < 1:
        raise ValueError(
            f"max_new_tokens must be at least 1 (it counts the end-of-sentence token); got {max_new_tokens}"
        )
    if min_new_tokens < 0:
        raise ValueError(f"min_new_tokens must be at least 0; got {min_new_tokens}")


def content_ids(tokens: np.ndarray, spec: ModelSpec) -> list[int]:
    """The ids of a generated row (decoder start token removed) up to, without, the first ``</s>`` or padding."""
    ids: list[int] = tokens.tolist()
    for index, token in enumerate(ids):
        if token == spec.eos_id or token == spec.pad_id:
            return ids[:index]
    return ids


def greedy_search(*args: Any, **kwargs: Any) -> list[list[int]]:
    """The output ids of ``greedy_hypotheses`` (same arguments)."""
    return [hypothesis.ids for hypothesis in greedy_hypotheses(*args, **kwargs)]


def greedy_hypotheses(
    model: StepModel,
    input_ids: np.ndarray,
    attention_mask: np.ndarray,
    max_new_tokens: RowLimits,
    *,
    repetition_guard: bool | RepetitionGuard = False,
    min_new_tokens: int = 0,
    on_row: RowDone | None = None,
) -> list[Hypothesis]:
    """The most probable token at every step, for each row of the padded source batch (each handed to ``on_row``
    as soon as it is done).

    Rows that produce ``</s>`` or reach their limit (``max_new_tokens``: one for all rows or one per row) leave
    the batch (their caches are dropped), so the remaining steps only compute unfinished rows. ``min_new_tokens``
    forbids ``</s>`` before that many tokens (benchmarks force a length).
    """
    batch = input_ids.shape[0]
    limits = row_limits(max_new_tokens, batch)
    _check_lengths(int(limits.max()) if batch else 1, min_new_tokens)
    spec = model.spec
    guard = _guard_from(repetition_guard)
    results: list[Hypothesis] = [Hypothesis([]) for _ in range(batch)]
    if batch == 0:
        return results
    cross = model.encode(input_ids, attention_mask)
    past = model.empty_past(batch)
    mask = np.asarray(attention_mask, dtype=np.int64)
    rows = np.arange(batch)  # original row of each row still decoding
    longest = int(limits.max())
    # decoder start token, then at most limit - 1 tokens (the forced </s> is never stored)
    sequences = np.full((batch, longest), spec.pad_id, dtype=np.int64)
    sequences[:, 0] = spec.decoder_start_id
    sums = np.zeros(batch, dtype=np.float64)  # per row still decoding: its chosen tokens' log-probabilities
    fired = np.zeros(batch, dtype=bool)

    def leave(done: np.ndarray) -> bool:
        """Drop the rows of ``done``; True when none is left."""
        nonlocal rows, sequences, mask, sums, fired, limits, past, cross
        keep = np.flatnonzero(~done)
        rows, sequences, mask, sums, fired, limits = (
            rows[keep],
            sequences[keep],
            mask[keep],
            sums[keep],
            fired[keep],
            limits[keep],
        )
        past = [array[keep] for array in past]
        cross = [array[keep] for array in cross]
        return keep.size == 0

    def found(row: int, hypothesis: Hypothesis) -> None:
        results[row] = hypothesis
        if on_row is not None:
            on_row(row, hypothesis)

    at_limit = limits == 1  # no token fits before the forced </s>: an empty output, scored 0
    if at_limit.any():
        for row in np.flatnonzero(at_limit):
            found(int(rows[row]), Hypothesis([], 0.0, 1, False))
        if leave(at_limit):
            return results
    for step in range(longest - 1):
        log_probs, past = model.step(sequences[:, step : step + 1], mask, past, cross)
        _restrict(log_probs, spec, step, min_new_tokens)
        banned = ban_repetitions(log_probs, sequences, step + 1, guard) if guard is not None else None
        next_tokens = log_probs.argmax(axis=1)
        chosen = log_probs[np.arange(next_tokens.size), next_tokens]
        sums += chosen
        if banned is not None:
            fired |= banned > chosen
        sequences[:, step + 1] = next_tokens
        finished = next_tokens == spec.eos_id
        # a row whose next step would be its forced </s> is done too (that </s> scores 0)
        at_limit = ~finished & (limits == step + 2)
        done = finished | at_limit
        if done.any():
            for row in np.flatnonzero(finished):
                ids = sequences[row, 1 : step + 1].tolist()
                found(int(rows[row]), Hypothesis(ids, float(sums[row]), step + 1, bool(fired[row])))
            for row in np.flatnonzero(at_limit):
                ids = sequences[row, 1 : step + 2].tolist()
                found(int(rows[row]), Hypothesis(ids, float(sums[row]), step + 2, bool(fired[row])))
            if leave(done):
                return results
    return results


def top_k(scores: np.ndarray, k: int, ties: np.ndarray | None = None) -> np.ndarray:
    """Indices of the ``k`` largest entries of each row, largest first; equal scores: smaller ``ties`` first
    (default: the smaller index)."""
    if k < scores.shape[1]:
        candidates = np.argpartition(scores, scores.shape[1] - k, axis=1)[:, scores.shape[1] - k :]
    else:
        candidates = np.broadcast_to(np.arange(scores.shape[1]), scores.shape)
    values = np.take_along_axis(scores, candidates, axis=1)
    secondary = candidates if ties is None else np.take_along_axis(ties, candidates, axis=1)
    order = np.lexsort((secondary, -values), axis=1)
    return np.take_along_axis(candidates, order, axis=1)


CANDIDATE_BLOCK = 256  # vocabulary columns per block when looking for a row's best tokens


def candidate_columns(log_probs: np.ndarray, k: int) -> np.ndarray:
    """Columns of each row that include its ``k`` largest entries: [rows, columns], far fewer than the vocabulary.

    A full top-k over beams x vocabulary (65,001 columns) costs as much as a decoder step. Instead the row is cut
    into blocks of ``CANDIDATE_BLOCK`` columns: a block holding one of the k largest entries has a maximum at
    least as large as the k-th largest entry, and at most k blocks can, so the k blocks with the largest maxima
    (plus the columns after the last whole block) hold all k entries.
    """
    rows, width = log_probs.shape
    blocks = width // CANDIDATE_BLOCK
    if blocks <= k:
        return np.broadcast_to(np.arange(width), (rows, width))
    body = log_probs[:, : blocks * CANDIDATE_BLOCK].reshape(rows, blocks, CANDIDATE_BLOCK)
    # fmax: the maxima max gives (log-probabilities hold no NaN) without its NaN checks, a third faster
    best_blocks = np.argpartition(np.fmax.reduce(body, axis=2), blocks - k, axis=1)[:, blocks - k :]
    columns = (best_blocks[:, :, None] * CANDIDATE_BLOCK + np.arange(CANDIDATE_BLOCK)).reshape(rows, -1)
    tail = np.arange(blocks * CANDIDATE_BLOCK, width)
    if tail.size:
        columns = np.concatenate([columns, np.broadcast_to(tail, (rows, tail.size))], axis=1)
    return columns


def reorder_rows(arrays: list[np.ndarray], parent_rows: np.ndarray) -> list[np.ndarray]:
    """Row ``i`` of every array takes what row ``parent_rows[i]`` holds: a beam's cache follows its parent.

    In place, and only the rows whose parent is another row: most beams continue their own hypothesis, so this
    copies a fraction of the cache instead of all of it into new arrays (the arrays are the decoder step's own
    outputs, which nothing else holds). The changed rows' sources are read into a temporary before any is
    written, so rows that swap or feed each other come out right.
    """
    changed = np.flatnonzero(parent_rows != np.arange(parent_rows.size))
    if changed.size:
        sources = parent_rows[changed]
        for array in arrays:
            array[changed] = array[sources]
    return arrays


def take_slots(array: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``array[b, indices[b, i], ...]`` for arrays shaped [items, beams, ...]."""
    expanded = indices.reshape(indices.shape + (1,) * (array.ndim - 2))
    return np.take_along_axis(array, expanded, axis=1)


def beam_search(*args: Any, **kwargs: Any) -> list[list[int]]:
    """The output ids of ``beam_hypotheses`` (same arguments)."""
    return [hypothesis.ids for hypothesis in beam_hypotheses(*args, **kwargs)]


def beam_hypotheses(
    model: StepModel,
    input_ids: np.ndarray,
    attention_mask: np.ndarray,
    max_new_tokens: RowLimits,
    *,
    beam_size: int,
    length_penalty: float = 1.0,
    repetition_guard: bool | RepetitionGuard = True,
    min_new_tokens: int = 0,
    on_row: RowDone | None = None,
) -> list[Hypothesis]:
    """The best of ``beam_size`` hypotheses per source row (``beam_n_best``'s first; each handed to ``on_row`` as
    soon as its row is done)."""
    found = beam_n_best(
        model,
        input_ids,
        attention_mask,
        max_new_tokens,
        beam_size=beam_size,
        n_best=1,
        length_penalty=length_penalty,
        repetition_guard=repetition_guard,
        min_new_tokens=min_new_tokens,
        on_row=None if on_row is None else lambda row, best: on_row(row, best[0]),
    )
    return [row[0] for row in found]


def beam_n_best(
    model: StepModel,
    input_ids: np.ndarray,
    attention_mask: np.ndarray,
    max_new_tokens: RowLimits,
    *,
    beam_size: int,
    n_best: int,
    length_penalty: float = 1.0,
    repetition_guard: bool | RepetitionGuard = True,
    min_new_tokens: int = 0,
    on_row: Callable[[int, list[Hypothesis]], None] | None = None,
) -> list[list[Hypothesis]]:
    """Per source row, the best ``n_best`` (at most ``beam_size``) of the ``beam_size`` finished hypotheses, best
    first, scored ``sum(log p) / length ** length_penalty``; the first is the search's choice, always there, the
    others only where the search finished them (they need not be distinct once detokenized).

    Follows transformers' beam search step for step: each step keeps the ``2 * beam_size`` best continuations over
    all beams of a sentence; those among the first ``beam_size`` that end (``</s>`` or the length limit) compete for
    the sentence's ``beam_size`` finished slots, the best ``beam_size`` that do not end continue. A sentence is done
    when all its slots are full and its best running beam, divided by its current length ** length_penalty, cannot
    beat the worst finished one (``early_stopping=False``); done sentences leave the batch (and are handed to
    ``on_row`` at once). The length of a finished hypothesis counts its ``</s>``. ``max_new_tokens`` is one limit
    for every row or one per row; a sentence at its limit takes the forced ``</s>`` and is done.
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be at least 1; got {beam_size}")
    if n_best < 1:
        raise ValueError(f"n_best must be at least 1; got {n_best}")
    if beam_size == 1:
        greedy = greedy_hypotheses(
            model,
            input_ids,
            attention_mask,
            max_new_tokens,
            repetition_guard=repetition_guard,
            min_new_tokens=min_new_tokens,
            on_row=None if on_row is None else lambda row, hypothesis: on_row(row, [hypothesis]),
        )
        return [[hypothesis] for hypothesis in greedy]
    batch = input_ids.shape[0]
    limits = row_limits(max_new_tokens, batch)  # per sentence still searching
    _check_lengths(int(limits.max()) if batch else 1, min_new_tokens)
    if batch == 0:
        return []
    spec = model.spec
    guard = _guard_from(repetition_guard)
    beams, kept = beam_size, min(n_best, beam_size)
    state = _BeamState.start(limits, beams, spec)

    cross = model.encode(input_ids, attention_mask)
    expand = np.repeat(np.arange(batch), beams)
    cross = [array[expand] for array in cross]
    mask = np.asarray(attention_mask, dtype=np.int64)[expand]
    past = model.empty_past(batch * beams)
    results: list[list[Hypothesis]] = [[] for _ in range(batch)]

    length = 1  # tokens in every running hypothesis, decoder start included
    while True:
        live = state.items.shape[0]
        flat = state.running.reshape(live * beams, -1)
        last_step = state.limits == length  # per sentence: this step is its forced </s>
        if last_step.all():  # forced </s> everywhere: no model call; </s> adds nothing to the score
            log_probs = np.full((live * beams, spec.vocab_size), -np.inf, dtype=np.float32)
            log_probs[:, spec.eos_id] = 0.0
            present = past
            banned = None
        else:
            log_probs, present = model.step(flat[:, length - 1 : length], mask, past, cross)
            past = []  # the step's input cache: freed now, not after the reorder below has copied `present`
            _restrict(log_probs, spec, length - 1, min_new_tokens)
            banned = ban_repetitions(log_probs, flat, length, guard) if guard is not None else None
            if last_step.any():  # those sentences' beams take the forced </s>
                _force_eos(log_probs, banned, np.repeat(last_step, beams), spec)
        running_parents, ends = state.advance(log_probs, banned, length, last_step, length_penalty, spec)
        length += 1
        if ends.all() or not state.improvable.any():
            break

        parent_rows = (np.arange(live)[:, None] * beams + running_parents).reshape(-1)
        past = reorder_rows(present, parent_rows)
        # between steps only `past` holds the cache: a step runs with two copies of it, not three (docs/decisions.md)
        del present
        if not state.improvable.all():
            for done in np.flatnonzero(~state.improvable).tolist():
                results[state.items[done]] = state.best_of(done, kept, spec)
                if on_row is not None:
                    on_row(int(state.items[done]), results[state.items[done]])
            keep = np.flatnonzero(state.improvable)
            state.keep(keep)
            rows = (keep[:, None] * beams + np.arange(beams)).reshape(-1)
            past = [array[rows] for array in past]
            cross = [array[rows] for array in cross]
            mask = mask[rows]

    for position, original in enumerate(state.items.tolist()):
        results[original] = state.best_of(position, kept, spec)
        if on_row is not None:
            on_row(original, results[original])
    return results


def _force_eos(log_probs: np.ndarray, banned: np.ndarray | None, rows: np.ndarray, spec: ModelSpec) -> None:
    """``rows`` (a mask) take the forced ``</s>``: its log-probability 0, every other token's -inf."""
    log_probs[rows] = -np.inf
    log_probs[rows, spec.eos_id] = 0.0
    if banned is not None:
        banned[rows] = -np.inf


@dataclass
class _BeamState:
    """``beam_n_best``'s hypotheses, one entry per sentence still searching (first axis), ``beams`` per sentence."""

    items: np.ndarray  # the original row of each sentence
    limits: np.ndarray  # its max_new_tokens
    running: np.ndarray  # [items, beams, width]: decoder start, then the tokens chosen so far, then padding
    running_scores: np.ndarray  # sum of log-probabilities, EXCLUDED where a beam may not be chosen
    running_fired: np.ndarray  # the repetition guard changed a choice on this hypothesis' path
    finished: np.ndarray  # [items, beams, width]: the finished slots
    finished_scores: np.ndarray  # normalized: sum / length ** length_penalty
    finished_sums: np.ndarray  # sum of log-probabilities
    finished_fired: np.ndarray
    is_finished: np.ndarray  # the slot holds a finished hypothesis
    improvable: np.ndarray  # per sentence: a running beam can still beat its worst finished slot

    @classmethod
    def start(cls, limits: np.ndarray, beams: int, spec: ModelSpec) -> _BeamState:
        batch = limits.shape[0]
        width = int(limits.max()) + 1  # decoder start token + max_new_tokens tokens, the last one </s>
        running = np.full((batch, beams, width), spec.pad_id, dtype=np.int64)
        running[:, :, 0] = spec.decoder_start_id
        running_scores = np.zeros((batch, beams), dtype=np.float32)
        running_scores[:, 1:] = EXCLUDED  # all beams start equal: expand only the first one
        return cls(
            items=np.arange(batch),
            limits=limits,
            running=running,
            running_scores=running_scores,
            running_fired=np.zeros((batch, beams), dtype=bool),
            finished=running.copy(),
            finished_scores=np.full((batch, beams), EXCLUDED, dtype=np.float32),
            finished_sums=np.zeros((batch, beams), dtype=np.float32),
            finished_fired=np.zeros((batch, beams), dtype=bool),
            is_finished=np.zeros((batch, beams), dtype=bool),
            improvable=np.ones(batch, dtype=bool),
        )

    def advance(
        self,
        log_probs: np.ndarray,
        banned: np.ndarray | None,
        length: int,
        last_step: np.ndarray,
        length_penalty: float,
        spec: ModelSpec,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One step of the search with the step's ``log_probs`` ([items * beams, vocabulary]); the parent beam of
        each new running beam and, per candidate, whether it ended."""
        live, beams = self.running_scores.shape
        # the 2 x beams best continuations of each sentence: (log-probability + beam score), over all its beams
        vocab = log_probs.shape[1]
        columns = candidate_columns(log_probs, 2 * beams)  # [live * beams, candidates]
        scores = np.take_along_axis(log_probs, columns, axis=1) + self.running_scores.reshape(-1, 1)
        flat_ids = columns.reshape(live, beams, -1) + (np.arange(beams) * vocab)[None, :, None]
        flat_ids, scores = flat_ids.reshape(live, -1), scores.reshape(live, -1)
        top = top_k(scores, 2 * beams, ties=flat_ids)
        top_scores = np.take_along_axis(scores, top, axis=1)
        top_ids = np.take_along_axis(flat_ids, top, axis=1)
        parents, tokens = top_ids // vocab, top_ids % vocab
        candidates = take_slots(self.running, parents)
        candidates[:, :, length] = tokens
        candidates_fired = take_slots(self.running_fired, parents)
        if banned is not None:  # the guard banned a token its parent preferred to this one
            parent_flat = np.arange(live)[:, None] * beams + parents
            candidates_fired = candidates_fired | (banned[parent_flat] > log_probs[parent_flat, tokens])
        ends = (tokens == spec.eos_id) | last_step[:, None]

        # the best candidates that do not end continue
        continuing = top_scores + ends.astype(np.float32) * EXCLUDED
        chosen = top_k(continuing, beams)
        self.running = take_slots(candidates, chosen)
        self.running_scores = np.take_along_axis(continuing, chosen, axis=1)
        self.running_fired = np.take_along_axis(candidates_fired, chosen, axis=1)
        running_parents = np.take_along_axis(parents, chosen, axis=1)

        # candidates among the first `beams` that end compete with the finished hypotheses
        just_finished = ends & (np.arange(2 * beams) < beams)[None, :]
        normalized = top_scores / (float(length) ** length_penalty)
        normalized = normalized + (~self.improvable)[:, None].astype(np.float32) * EXCLUDED
        normalized = normalized + (~just_finished).astype(np.float32) * EXCLUDED
        merged_scores = np.concatenate([self.finished_scores, normalized], axis=1)
        best = top_k(merged_scores, beams)

        def merged(kept: np.ndarray, new: np.ndarray) -> np.ndarray:
            return take_slots(np.concatenate([kept, new], axis=1), best)

        self.finished = merged(self.finished, candidates)
        self.finished_scores = np.take_along_axis(merged_scores, best, axis=1)
        self.finished_sums = merged(self.finished_sums, top_scores)
        self.finished_fired = merged(self.finished_fired, candidates_fired)
        self.is_finished = merged(self.is_finished, just_finished)

        best_running = self.running_scores[:, 0] / (float(length) ** length_penalty)
        worst_finished = np.where(self.is_finished, self.finished_scores.min(axis=1, keepdims=True), EXCLUDED)
        self.improvable &= (best_running[:, None] > worst_finished).any(axis=1)
        self.improvable &= ~last_step  # a sentence that took its forced </s> is done
        return running_parents, ends

    def keep(self, positions: np.ndarray) -> None:
        """Only the sentences at ``positions`` go on searching."""
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name)[positions])

    def best_of(self, position: int, kept: int, spec: ModelSpec) -> list[Hypothesis]:
        """Slot 0 (the search's choice) and the next finished slots, up to ``kept``."""
        found = []
        for slot in range(kept):
            if slot and not self.is_finished[position, slot]:
                break
            ids = content_ids(self.finished[position, slot, 1:], spec)
            sums, fired = float(self.finished_sums[position, slot]), bool(self.finished_fired[position, slot])
            found.append(Hypothesis(ids, sums, len(ids) + 1, fired))
        return found
