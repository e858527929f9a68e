"""CSANMT's beam search: modelscope's ``CsanmtForTranslation.beam_search`` (THUMT's), step for step, over a step model.

modelscope 1.40.2, ``models/nlp/csanmt/translation.py`` (T:514-819), reproduced in float32 arithmetic in the
same order, so the ids and the scores are modelscope's:

* every sentence starts with ``beam_size`` copies of one empty hypothesis, the first with log-probability 0 and
  the others with float32's lowest value (only the first is expanded on the first step);
* at step ``t`` (0-based) the scores are ``(hypothesis log-probability + token log-probability) / lp(t + 1)``
  with the GNMT length penalty ``lp(n) = ((5 + n) / 6) ** alpha`` (``lp_rate``, 0.6);
* the ``2 * beam_size`` best scores over all beams x vocabulary (ties: the lower beam x vocabulary index first,
  as ``tf.nn.top_k``) are the candidates; the ``beam_size`` best that are not the end-of-sentence id 0 continue
  (their log-probability is their score times ``lp(t + 1)``); every candidate that ends (not only the first
  ``beam_size``) competes with the finished hypotheses for the ``beam_size`` finished slots, by score;
* a sentence is done when its worst finished score (over the slots holding a finished hypothesis) is greater
  than its best running log-probability divided by ``lp(max_length)``; the search stops after ``max_length``
  steps in any case, so an output holds at most ``max_length`` tokens, the end-of-sentence id included;
* the result is the finished hypotheses when there is at least one, otherwise the running ones (with their
  scores); modelscope's postprocess takes beam 0 and cuts it at the first 0.

Two differences, neither changing beam 0 (the translation) nor its score: a done sentence leaves the batch at
once (modelscope keeps stepping every sentence until all of them are done, which can only fill the lower finished
slots of a done sentence, never beat its beam 0), and beam size 1 is this same search with one beam, not
argmax greedy (modelscope has no other greedy search: its beam size 1 keeps the best token that does not end as
the running hypothesis while an ending one waits in the finished slot).

The encoder runs on rows of similar length together (``encode_by_width``): a batch that mixes short and long
sentences is encoded in groups, each at its own width (a multiple of ``ENCODER_WIDTH_MULTIPLE``), where that saves
more padded positions than an encoder call costs; the groups' outputs are the ones the whole batch would give (the
masked positions add exact zeros at such widths, ``handler.model.batching.WIDTH_MULTIPLE``).

Two optional rules modelscope does not have (off unless asked for): the repetition guard
(``handler.model.decoding.ban_repetitions``) and a minimum length; both set the banned tokens' log-probabilities to
-inf before the candidates are chosen.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from handler.model.decoding import (
    Hypothesis,
    RepetitionGuard,
    StepModel,
    ban_repetitions,
    candidate_columns,
    reorder_rows,
    take_slots,
    top_k,
)

LOWEST = np.finfo(np.float32).min  # tf.float32.min: the excluded-hypothesis score
EOS_ID = 0
GNMT_BASE = np.float32(5.0)
GNMT_DIVISOR = np.float32(6.0)
# encoder widths are multiples of this (batching.WIDTH_MULTIPLE's reason: a row encodes the same at every such width)
ENCODER_WIDTH_MULTIPLE = 16
# what one more encoder call costs, counted in padded source positions (a call costs a fixed time beyond its
# positions; measured on the full-size CSANMT: docs/decisions.md): a group of rows is encoded apart only where it
# saves more positions than that
ENCODER_CALL_POSITIONS = 48


def gnmt_length_penalty(length: int, alpha: float) -> np.float32:
    """``((5 + length) / 6) ** alpha`` in float32, as modelscope computes it."""
    base = (GNMT_BASE + np.float32(length)) / GNMT_DIVISOR
    return np.float32(np.power(np.float32(base), np.float32(alpha)))


@dataclass(frozen=True)
class CsanmtSearchResult:
    """Per source row: the ``beam_size`` final hypotheses (ids without the end-of-sentence id, best first) and
    their scores, modelscope's ``output_seqs`` and ``output_scores`` (``best`` = what its postprocess takes)."""

    beams: list[list[list[int]]]
    scores: np.ndarray  # float32 [rows, beam_size]
    # per row, beam 0's sum of log-probabilities (score x lp(tokens scored)), tokens scored (the end-of-sentence
    # id included when it ended) and whether the repetition guard changed a choice on its path
    best_sums: tuple[float, ...] = ()
    best_scored: tuple[int, ...] = ()
    best_fired: tuple[bool, ...] = ()

    @property
    def best(self) -> list[list[int]]:
        return [beams[0] for beams in self.beams]

    def n_best_hypotheses(self, n_best: int) -> list[list[Hypothesis]]:
        """Per row, ``best_hypotheses``'s and the next final beams, up to ``n_best`` in all, best first; the others
        carry their ids only (this search keeps beam 0's log-probability sum alone), excluded beams left out."""
        rows = []
        for best, beams, scores in zip(self.best_hypotheses(), self.beams, self.scores, strict=True):
            others = [
                Hypothesis(ids) for ids, score in zip(beams[1:n_best], scores[1:n_best], strict=False) if score > LOWEST
            ]
            rows.append([best, *others])
        return rows

    def best_hypotheses(self) -> list[Hypothesis]:
        return [
            Hypothesis(beams[0], sums, scored, fired)
            for beams, sums, scored, fired in zip(
                self.beams, self.best_sums, self.best_scored, self.best_fired, strict=True
            )
        ]


def _cut(tokens: np.ndarray) -> list[int]:
    ids: list[int] = tokens.tolist()
    return ids[: ids.index(EOS_ID)] if EOS_ID in ids else ids


def _stable_top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest entries of each row, largest first, ties in index order (``tf.nn.top_k``)."""
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def width_groups(lengths: np.ndarray, width: int, call_positions: int = ENCODER_CALL_POSITIONS) -> list[np.ndarray]:
    """The rows of a batch of source ``lengths`` padded to ``width``, grouped for the encoder, widest group first.

    Each row needs its length rounded up to ``ENCODER_WIDTH_MULTIPLE`` (at most ``width``); a group is encoded at
    its widest row's width. The grouping minimizes the padded positions plus ``call_positions`` per group (rows
    of one width never split; groups are runs of consecutive widths, found exactly by dynamic programming).
    """
    needed = np.minimum(-(-lengths // ENCODER_WIDTH_MULTIPLE) * ENCODER_WIDTH_MULTIPLE, width)
    widths = sorted({int(value) for value in needed.tolist()}, reverse=True)
    counts = [int((needed == value).sum()) for value in widths]
    # best[i]: the cheapest cost of the widths from i on; cut[i]: where the group that starts at i ends
    best = [0] * (len(widths) + 1)
    cut = [0] * len(widths)
    for start in range(len(widths) - 1, -1, -1):
        best[start], cut[start] = min(
            (call_positions + widths[start] * sum(counts[start:end]) + best[end], end)
            for end in range(start + 1, len(widths) + 1)
        )
    groups = []
    start = 0
    while start < len(widths):
        end = cut[start]
        groups.append(np.flatnonzero((needed <= widths[start]) & (needed >= widths[end - 1])))
        start = end
    return groups


def encode_by_width(model: StepModel, input_ids: np.ndarray, attention_mask: np.ndarray) -> list[np.ndarray]:
    """``model.encode`` of the batch, with the rows encoded in ``width_groups`` where there is more than one.

    Every group is encoded at its own width, and its cross-attention keys and values ([rows, heads, width,
    head_dim]) are put into zero-filled arrays of the batch's width: the decoder masks those positions, as it
    masks the padding. The family's other per-sentence arrays ([rows, 1, d_model]) do not depend on the width.
    """
    lengths = np.maximum(np.asarray(attention_mask, dtype=np.int64).sum(axis=1), 1)  # a row of padding: width 1+
    width = input_ids.shape[1]
    groups = width_groups(lengths, width)
    if len(groups) <= 1:
        return model.encode(input_ids, attention_mask)
    merged: list[np.ndarray] = []
    for rows in groups:
        group_width = int(min(width, -(-int(lengths[rows].max()) // ENCODER_WIDTH_MULTIPLE) * ENCODER_WIDTH_MULTIPLE))
        outputs = model.encode(input_ids[rows, :group_width], attention_mask[rows, :group_width])
        if not merged:
            merged = [
                np.zeros((input_ids.shape[0], *array.shape[1:2], width, *array.shape[3:]), dtype=array.dtype)
                if array.ndim == 4
                else np.zeros((input_ids.shape[0], *array.shape[1:]), dtype=array.dtype)
                for array in outputs
            ]
        for target, array in zip(merged, outputs, strict=True):
            if array.ndim == 4:
                target[rows, :, :group_width] = array
            else:
                target[rows] = array
    return merged


def _first_step(
    model: StepModel, beams: int, mask: np.ndarray, past: list[np.ndarray], cross: list[np.ndarray]
) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray], np.ndarray]:
    """The first step on one row per sentence, its outputs copied to the sentence's ``beams`` rows: the step's
    log-probabilities and cache, and the cross-attention arrays and source mask expanded to one row per beam."""
    live = mask.shape[0]
    start = np.full((live, 1), EOS_ID, dtype=np.int64)  # modelscope's decoder input before any token
    log_probs, present = model.step(start, mask, past, cross)
    expand = np.repeat(np.arange(live), beams)
    return (
        np.asarray(log_probs, dtype=np.float32)[expand],
        [array[expand] for array in present],
        [array[expand] for array in cross],
        mask[expand],
    )


# a sentence's result: its final hypotheses' tokens and scores, whether they are finished ones, and whether the
# repetition guard changed a choice on beam 0's path
_Final = tuple[np.ndarray, np.ndarray, bool, bool]


@dataclass
class _SearchState:
    """The hypotheses of the sentences still searching (first axis), ``beams`` per sentence, in modelscope's
    names."""

    items: np.ndarray  # the original row of each sentence
    max_length: np.ndarray  # its maximum length
    max_penalty: np.ndarray  # the length penalty at its maximum length (its stopping rule's bound)
    seqs: np.ndarray  # [items, beams, time]: the running hypotheses' tokens
    log_probs: np.ndarray  # their log-probabilities (LOWEST: excluded)
    alive_scores: np.ndarray  # their scores (log-probability / length penalty)
    alive_fired: np.ndarray  # the guard changed a choice on this hypothesis' path
    fin_flags: np.ndarray  # the finished slot holds a hypothesis
    fin_seqs: np.ndarray  # [items, beams, time]: the finished hypotheses' tokens (0-padded)
    fin_scores: np.ndarray
    fin_fired: np.ndarray

    @classmethod
    def start(cls, max_length: np.ndarray, beams: int, alpha: float) -> _SearchState:
        batch = max_length.shape[0]
        log_probs = np.full((batch, beams), LOWEST, dtype=np.float32)
        log_probs[:, 0] = 0.0
        return cls(
            items=np.arange(batch),
            max_length=max_length,
            max_penalty=np.array([gnmt_length_penalty(int(n), alpha) for n in max_length], dtype=np.float32),
            seqs=np.zeros((batch, beams, 0), dtype=np.int64),
            log_probs=log_probs,
            alive_scores=np.zeros((batch, beams), dtype=np.float32),
            alive_fired=np.zeros((batch, beams), dtype=bool),
            fin_flags=np.zeros((batch, beams), dtype=bool),
            fin_seqs=np.zeros((batch, beams, 0), dtype=np.int64),
            fin_scores=np.full((batch, beams), LOWEST, dtype=np.float32),
            fin_fired=np.zeros((batch, beams), dtype=bool),
        )

    def done(self, time: int) -> np.ndarray:
        """modelscope's loop condition, per sentence: done when no running hypothesis can still get in, or after
        its maximum length of steps."""
        worst_finished = np.min(self.fin_scores * self.fin_flags.astype(np.float32), axis=1)
        worst_finished = worst_finished + LOWEST * (~self.fin_flags.any(axis=1)).astype(np.float32)
        done: np.ndarray = (worst_finished > self.log_probs[:, 0] / self.max_penalty) | (self.max_length <= time)
        return done

    def keep(self, positions: np.ndarray) -> None:
        """Only the sentences at ``positions`` go on searching."""
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name)[positions])

    def final(self, position: int) -> _Final:
        """A sentence's result: its finished hypotheses when it has one, otherwise its running ones."""
        if self.fin_flags[position].any():
            return self.fin_seqs[position], self.fin_scores[position], True, bool(self.fin_fired[position, 0])
        return self.seqs[position], self.alive_scores[position], False, bool(self.alive_fired[position, 0])

    def advance(self, step_log_probs: np.ndarray, banned: np.ndarray | None, time: int, alpha: float) -> np.ndarray:
        """Step ``time`` with its log-probabilities ([items * beams, vocabulary]): the candidates, the running
        hypotheses that continue and the finished slots; the parent beam of each new running hypothesis."""
        live, beams = self.log_probs.shape
        vocab = step_log_probs.shape[1]
        penalty = gnmt_length_penalty(time + 1, alpha)
        scores = self.log_probs.reshape(-1, 1) + step_log_probs  # [live * beams, vocab]
        scores /= penalty  # in place: (a + b) / penalty's float32 values, one [rows, vocab] array fewer
        scores = scores.reshape(live, beams * vocab)

        columns = candidate_columns(scores, 2 * beams)
        top = top_k(np.take_along_axis(scores, columns, axis=1), 2 * beams, ties=columns)
        top_indices = np.take_along_axis(columns, top, axis=1)
        top_scores = np.take_along_axis(scores, top_indices, axis=1)
        beam_indices, symbols = top_indices // vocab, top_indices % vocab
        candidate_seqs = np.concatenate([take_slots(self.seqs, beam_indices), symbols[:, :, None]], axis=2)
        flags = symbols == EOS_ID
        candidate_fired = take_slots(self.alive_fired, beam_indices)
        if banned is not None:  # the guard banned a token the parent preferred to this one
            parent_flat = np.arange(live)[:, None] * beams + beam_indices
            candidate_fired = candidate_fired | (banned[parent_flat] > step_log_probs[parent_flat, symbols])

        # the best candidates that do not end continue
        suppressed = top_scores + flags.astype(np.float32) * LOWEST
        alive = _stable_top(suppressed, beams)
        self.alive_scores = np.take_along_axis(suppressed, alive, axis=1)
        self.alive_fired = np.take_along_axis(candidate_fired, alive, axis=1)
        self.seqs = take_slots(candidate_seqs, alive)
        self.log_probs = self.alive_scores * penalty

        # every candidate that ends competes with the finished hypotheses
        step_fin_scores = top_scores + (np.float32(1.0) - flags.astype(np.float32)) * LOWEST
        merged_scores = np.concatenate([self.fin_scores, step_fin_scores], axis=1)
        chosen = _stable_top(merged_scores, beams)
        self.fin_scores = np.take_along_axis(merged_scores, chosen, axis=1)
        self.fin_flags = np.take_along_axis(np.concatenate([self.fin_flags, flags], axis=1), chosen, axis=1)
        self.fin_fired = np.take_along_axis(np.concatenate([self.fin_fired, candidate_fired], axis=1), chosen, axis=1)
        padded = np.concatenate([self.fin_seqs, np.zeros((live, beams, 1), dtype=np.int64)], axis=2)
        self.fin_seqs = take_slots(np.concatenate([padded, candidate_seqs], axis=1), chosen)
        parents: np.ndarray = np.take_along_axis(beam_indices, alive, axis=1)
        return parents


def csanmt_beam_search(
    model: StepModel,
    input_ids: np.ndarray,
    attention_mask: np.ndarray,
    *,
    beam_size: int,
    max_length: int | np.ndarray,
    alpha: float = 0.6,
    repetition_guard: RepetitionGuard | None = None,
    min_length: int = 0,
) -> CsanmtSearchResult:
    """modelscope's beam search on every row of the padded source batch (see the module docstring).

    ``max_length`` is one for every row or one per row (``decoding.row_limits``: a row's output never depends on
    its batch); each row stops, and its stopping rule bounds its scores, at its own.
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be at least 1; got {beam_size}")
    item_lengths = np.broadcast_to(np.asarray(max_length, dtype=np.int64), (input_ids.shape[0],)).copy()
    if item_lengths.size and item_lengths.min() < 1:
        raise ValueError(
            f"max_length must be at least 1 (it counts the end-of-sentence token); got {int(item_lengths.min())}"
        )
    if min_length < 0:
        raise ValueError(f"min_length must be at least 0; got {min_length}")
    beams = beam_size
    batch = input_ids.shape[0]
    cross = encode_by_width(model, input_ids, attention_mask)
    mask = np.asarray(attention_mask, dtype=np.int64)
    # every beam of a sentence starts as the same empty hypothesis: the first step decodes one row per sentence and
    # copies its outputs to the sentence's beams (a row decodes the same in any batch); the per-sentence arrays
    # are expanded to one row per beam after it
    expanded = False
    past = model.empty_past(batch)
    state = _SearchState.start(item_lengths, beams, alpha)
    results: dict[int, _Final] = {}  # by original row

    with np.errstate(over="ignore"):  # float32's lowest plus a negative score is -inf, as in TensorFlow
        for time in range(int(item_lengths.max()) if batch else 0):
            done = state.done(time)
            if done.any():
                for position in np.flatnonzero(done).tolist():
                    results[int(state.items[position])] = state.final(position)
                keep = np.flatnonzero(~done)
                if keep.size == 0:
                    break
                state.keep(keep)
                index = (keep[:, None] * beams + np.arange(beams)).reshape(-1) if expanded else keep
                past = [array[index] for array in past]
                cross = [array[index] for array in cross]
                mask = mask[index]
            live = state.items.shape[0]
            flat_seqs = state.seqs.reshape(live * beams, time)
            if expanded:
                step_log_probs, present = model.step(flat_seqs[:, -1:], mask, past, cross)
                step_log_probs = np.asarray(step_log_probs, dtype=np.float32)  # the session's buffer, changed in place
            else:
                step_log_probs, present, cross, mask = _first_step(model, beams, mask, past, cross)
                expanded = True
            past = []  # freed now: between steps only one cache is held (decoding.beam_search measures why)
            if time < min_length:
                step_log_probs[:, EOS_ID] = -np.inf
            banned = (
                ban_repetitions(step_log_probs, flat_seqs, time, repetition_guard)
                if repetition_guard is not None
                else None
            )
            parents = state.advance(step_log_probs, banned, time, alpha)
            past = reorder_rows(present, (np.arange(live)[:, None] * beams + parents).reshape(-1))
            del present
        else:
            for position in range(state.items.shape[0]):
                results[int(state.items[position])] = state.final(position)

    finals = [results[row] for row in range(batch)]
    beams_out = [[_cut(row) for row in sequences] for sequences, _, _, _ in finals]
    scored = [len(rows[0]) + int(ended) for rows, (_, _, ended, _) in zip(beams_out, finals, strict=True)]
    return CsanmtSearchResult(
        beams=beams_out,
        scores=np.stack([np.asarray(scores, dtype=np.float32) for _, scores, _, _ in finals]),
        best_sums=tuple(
            float(scores[0]) * float(gnmt_length_penalty(count, alpha)) if count else 0.0
            for (_, scores, _, _), count in zip(finals, scored, strict=True)
        ),
        best_scored=tuple(scored),
        best_fired=tuple(bool(fired) for _, _, _, fired in finals),
    )
