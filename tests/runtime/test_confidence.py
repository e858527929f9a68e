"""Per-segment confidence: the searches' scores and guard flags, the calibration, and the assessment's flags.

The scores are checked against an independent computation: the chosen output fed back through the same step
model (teacher forcing), its tokens' log-probabilities summed by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from handler.errors import BundleError
from handler.model.confidence import Calibration, SegmentScore, assess, fit_knots, locate, percentile
from handler.model.decoding import Hypothesis, beam_hypotheses, greedy_hypotheses
from handler.model.families.csanmt.beam_search import csanmt_beam_search, gnmt_length_penalty
from tests.runtime.step_models import LoopingModel, PrefixModel, synthetic_spec


def marian_prefix_model(table: dict[tuple[int, ...], dict[int, float]]) -> PrefixModel:
    """A ``PrefixModel`` with Marian's ids: the pad (also the decoder start) is the last id, ``</s>`` is 0."""
    model = PrefixModel(table)
    model.spec = synthetic_spec(model.vocab, pad_id=model.vocab - 1, unk_id=1, decoder_start_id=model.vocab - 1)
    return model


def looping_batch() -> tuple[np.ndarray, np.ndarray]:
    ids = np.array([[5, 6, 0], [7, 0, 23]], np.int64)
    return ids, np.array([[1, 1, 1], [1, 1, 0]], np.int64)


def forced_log_prob(model: object, source: tuple[np.ndarray, np.ndarray], row: int, ids: list[int], eos: bool) -> float:
    """The summed log-probability of ``ids`` (then ``</s>`` if ``eos``) for one source row, step by step."""
    spec = model.spec  # type: ignore[attr-defined]
    input_ids, mask = source[0][row : row + 1], source[1][row : row + 1]
    cross = model.encode(input_ids, mask)  # type: ignore[attr-defined]
    past = model.empty_past(1)  # type: ignore[attr-defined]
    previous = spec.decoder_start_id
    total = 0.0
    for token in [*ids, spec.eos_id] if eos else ids:
        log_probs, past = model.step(np.array([[previous]]), mask, past, cross)  # type: ignore[attr-defined]
        total += float(log_probs[0, token])
        previous = token
    return total


def test_greedy_scores_are_the_chosen_tokens_log_probabilities() -> None:
    # GIVEN a model that prefers 2, then 3, then </s>
    model = marian_prefix_model({(): {2: 0.7}, (2,): {3: 0.6}, (2, 3): {0: 0.9}})
    source = (np.array([[1, 2]], np.int64), np.array([[1, 1]], np.int64))
    # WHEN it is searched greedily
    [found] = greedy_hypotheses(model, *source, 10)
    # THEN the output ended with </s> and its score is the sum over its tokens and the </s>
    assert found.ids == [2, 3]
    assert found.scored_tokens == 3
    assert found.log_prob == pytest.approx(math.log(0.7) + math.log(0.6) + math.log(0.9), abs=1e-5)
    assert found.mean_log_prob == pytest.approx(found.log_prob / 3)
    assert not found.guard_fired


def test_an_output_cut_at_the_length_limit_scores_its_tokens_and_a_free_end() -> None:
    model = LoopingModel({token: 7 for token in range(24)})
    source = looping_batch()
    hypotheses = greedy_hypotheses(model, *source, 6)
    for row, found in enumerate(hypotheses):
        assert found.ids == [7] * 5
        assert found.scored_tokens == 6  # five tokens and the forced </s>, which scores 0
        assert found.log_prob == pytest.approx(forced_log_prob(model, source, row, found.ids, eos=False), abs=1e-4)


def test_beam_scores_match_teacher_forcing() -> None:
    model = marian_prefix_model({(): {2: 0.5, 3: 0.4}, (2,): {0: 0.2, 4: 0.5}, (3,): {0: 0.9}, (2, 4): {0: 0.8}})
    source = (np.array([[1, 2]], np.int64), np.array([[1, 1]], np.int64))
    [found] = beam_hypotheses(model, *source, 8, beam_size=3, repetition_guard=False)
    assert found.ids == [3]  # 0.4 x 0.9 = 0.36 per 2 tokens beats 0.5 x 0.5 x 0.8 = 0.2 per 3
    assert found.scored_tokens == 2
    assert found.log_prob == pytest.approx(math.log(0.4) + math.log(0.9), abs=1e-5)
    assert found.log_prob == pytest.approx(forced_log_prob(model, source, 0, found.ids, eos=True), abs=1e-5)


@pytest.mark.parametrize("search", ["greedy", "beam", "csanmt"])
def test_guard_fired_says_whether_the_guard_changed_the_choice(search: str) -> None:
    looping = LoopingModel({token: 7 for token in range(24)})  # 7 7 7 7 ...: the guard must step in
    calm_table: dict[tuple[int, ...], dict[int, float]] = {(): {2: 0.9}, (2,): {0: 0.9}}  # "2 </s>": nothing to ban
    calm = PrefixModel(calm_table) if search == "csanmt" else marian_prefix_model(calm_table)

    def run(model: object, guard: bool) -> list[Hypothesis]:
        source = looping_batch() if model is looping else (np.array([[1]], np.int64), np.array([[1]], np.int64))
        if search == "greedy":
            return greedy_hypotheses(model, *source, 10, repetition_guard=guard)  # type: ignore[arg-type]
        if search == "beam":
            return beam_hypotheses(model, *source, 10, beam_size=2, repetition_guard=guard)  # type: ignore[arg-type]
        from handler.model.decoding import DEFAULT_GUARD

        result = csanmt_beam_search(
            model,  # type: ignore[arg-type]
            *source,
            beam_size=2,
            max_length=10,
            repetition_guard=DEFAULT_GUARD if guard else None,
        )
        return result.best_hypotheses()

    assert all(h.guard_fired for h in run(looping, True))
    assert not any(h.guard_fired for h in run(looping, False))
    assert not any(h.guard_fired for h in run(calm, True))


def test_csanmt_scores_undo_the_gnmt_length_penalty() -> None:
    model = PrefixModel({(): {2: 0.7}, (2,): {0: 0.8}})
    source = (np.array([[1]], np.int64), np.array([[1]], np.int64))
    result = csanmt_beam_search(model, *source, beam_size=2, max_length=6, alpha=0.6)
    [found] = result.best_hypotheses()
    assert found.ids == [2] and found.scored_tokens == 2
    assert found.log_prob == pytest.approx(math.log(0.7) + math.log(0.8), abs=1e-5)
    assert float(result.scores[0, 0]) == pytest.approx(found.log_prob / float(gnmt_length_penalty(2, 0.6)), abs=1e-5)


# --- calibration ----------------------------------------------------------------------------------------------


def test_knots_are_pooled_until_they_never_fall() -> None:
    # six bins of two sentences each (a bin holds at least two); the third bin's mean falls, so does the last's
    scores = [-3.1, -2.9, -2.6, -2.4, -2.1, -1.9, -1.6, -1.4, -1.1, -0.9, -0.6, -0.4]
    quality = [0.1, 0.3, 0.4, 0.4, 0.2, 0.4, 0.5, 0.5, 0.6, 0.6, 0.5, 0.6]
    knots = fit_knots(scores, quality, bins=6)
    assert len(fit_knots(scores[:6], quality[:6], bins=6)) <= 3
    values = [value for _, value in knots]
    assert values == sorted(values)
    assert knots[0] == pytest.approx((-3.0, 0.2))
    assert knots[1] == pytest.approx((-2.25, 0.35))  # (0.4 + 0.3) / 2: the fall was pooled
    assert knots[-1] == pytest.approx((-0.75, 0.575))


def test_a_score_that_predicts_nothing_gives_a_flat_valid_calibration() -> None:
    knots = fit_knots([-3.0, -2.0, -1.0, -0.5] * 5, [0.4, 0.3, 0.2, 0.1] * 5, bins=4)
    assert len(knots) == 2 and knots[0][1] == knots[1][1] == pytest.approx(0.25)
    calibration = Calibration(knots, 0.1, (0.5, 2.0))
    assert Calibration.from_manifest(calibration.to_dict(), "m") == calibration


def test_confidence_interpolates_between_knots_and_holds_at_the_ends() -> None:
    calibration = Calibration(((-2.0, 0.2), (-1.0, 0.4), (0.0, 0.8)), 0.3, (0.5, 2.0))
    assert calibration.calibrated
    assert calibration.confidence(-5.0) == pytest.approx(0.2)
    assert calibration.confidence(-1.5) == pytest.approx(0.3)
    assert calibration.confidence(-0.25) == pytest.approx(0.7)
    assert calibration.confidence(1.0) == pytest.approx(0.8)
    assert calibration.confidence(float("-inf")) == 0.0


def test_an_uncalibrated_bundle_gets_the_geometric_mean_probability() -> None:
    calibration = Calibration()
    assert not calibration.calibrated
    assert calibration.confidence(math.log(0.5)) == pytest.approx(0.5)
    assert calibration.confidence(0.0) == 1.0


def test_calibration_round_trips_through_the_manifest_and_refuses_nonsense() -> None:
    calibration = Calibration(((-2.0, 0.2), (-1.0, 0.4)), 0.25, (0.6, 2.5))
    assert Calibration.from_manifest(calibration.to_dict(), "m") == calibration
    assert Calibration.from_manifest({}, "m") == Calibration()
    for broken in (
        {"knots": [[-1.0, 0.4], [-2.0, 0.2]], "threshold": 0.2, "length_ratio": [0.5, 2]},  # scores fall
        {"knots": [[-2.0, 0.4], [-1.0, 0.2]], "threshold": 0.2, "length_ratio": [0.5, 2]},  # confidences fall
        {"knots": [[-2.0, 0.2]], "threshold": 0.2, "length_ratio": [0.5, 2]},  # one knot
        {"knots": [[-2.0, 0.2], [-1.0, 1.4]], "threshold": 0.2, "length_ratio": [0.5, 2]},  # over 1
        {"knots": [[-2.0, 0.2], [-1.0, 0.4]], "threshold": 0.2, "length_ratio": [2, 0.5]},  # low > high
        {"knots": "none", "threshold": 0.2, "length_ratio": [0.5, 2]},
        {"threshold": 0.2},
    ):
        with pytest.raises(BundleError, match="python -m build.calibrate"):
            Calibration.from_manifest(broken, "m")


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.1) == 10.0
    assert percentile(values, 0.02) == 2.0
    assert percentile(values, 1.0) == 100.0
    assert percentile([5.0], 0.5) == 5.0


# --- assessment -----------------------------------------------------------------------------------------------

CALIBRATION = Calibration(((-2.0, 0.2), (-0.5, 0.6)), 0.3, (0.5, 2.0))


def score(
    mean: float, *, tokens: int = 10, source: int = 10, fired: bool = False, method: str = "plain"
) -> SegmentScore:
    return SegmentScore((Hypothesis(list(range(tokens)), mean * (tokens + 1), tokens + 1, fired),), source, method)


def test_a_sure_segment_of_usual_length_is_not_flagged() -> None:
    a = assess(score(-0.6), False, CALIBRATION)
    assert a.confidence > 0.3 and not a.low_confidence and a.reasons == ()
    assert a.model_score == pytest.approx(-0.6)
    assert a.length_ratio == 1.0 and not a.length_ratio_out_of_range


@pytest.mark.parametrize(
    ("kwargs", "has_chinese", "reason"),
    [
        ({"mean": -1.9}, False, "the model was unsure"),
        ({"mean": -0.6}, True, "Chinese is left"),
        ({"mean": -0.6, "fired": True}, False, "repetition guard"),
        ({"mean": -0.6, "tokens": 2}, False, "short for its source"),
        ({"mean": -0.6, "tokens": 30}, False, "long for its source"),
    ],
)
def test_each_reason_flags_the_segment(kwargs: dict[str, object], has_chinese: bool, reason: str) -> None:
    a = assess(score(**kwargs), has_chinese, CALIBRATION)  # type: ignore[arg-type]
    assert a.low_confidence
    assert len(a.reasons) == 1 and reason in a.reasons[0]


def test_a_recovered_span_is_reported_but_flags_nothing() -> None:
    for method in ("placeholders", "stitched"):
        a = assess(score(-0.6, method=method), False, CALIBRATION)
        assert a.span_recovered and not a.low_confidence
    assert not assess(score(-0.6, method="as is"), False, CALIBRATION).span_recovered


def test_a_stitched_segment_pools_its_pieces_by_tokens() -> None:
    pieces = SegmentScore((Hypothesis([1, 2, 3], -3.0, 4), Hypothesis([4], -3.0, 2)), 6, "stitched")
    assert pieces.mean_log_prob == pytest.approx(-1.0)
    assert pieces.output_tokens == 4


def test_text_the_model_never_saw_is_sure_unless_chinese_is_left() -> None:
    kept = assess(None, False, CALIBRATION)
    assert kept.confidence == 1.0 and not kept.low_confidence and kept.model_score is None
    assert assess(None, True, CALIBRATION).untranslated


def test_locate_finds_a_part_at_or_after_the_cursor() -> None:
    assert locate("ab ab", "ab", 0) == (0, 2)
    assert locate("ab ab", "ab", 1) == (3, 5)
    assert locate("ab", "cd", 0) is None
    assert locate("ab", "", 0) is None
