"""build.calibrate's pieces on made-up dev sentences: the repetition check, the fit's thresholds, and the
separation figures (which must tell a calibration that ranks bad sentences low from one that does not)."""

from __future__ import annotations

import pytest

from build.calibrate import Scored, fit, has_repetition, separation
from handler.model.confidence import SegmentScore
from handler.model.decoding import Hypothesis


@pytest.mark.parametrize(
    ("english", "repeated"),
    [
        ("the the the end", True),
        ("I think so, I think so, I think", True),  # a word 3-gram twice
        ("I'm sorry, I'm late.", False),  # a 1-gram recurring is normal
        ("One two three. Four five six.", False),
        ("", False),
    ],
)
def test_has_repetition(english: str, repeated: bool) -> None:
    assert has_repetition(english) is repeated


def sentence(mean: float, chrf: float, english: str = "a fine sentence", tokens: int = 10) -> Scored:
    hypothesis = Hypothesis(list(range(tokens)), mean * (tokens + 1), tokens + 1)
    return Scored(SegmentScore((hypothesis,), 10, "plain"), english, chrf)


def made_up_dev_set() -> list[Scored]:
    """100 sentences whose chrF rises with the model's score; the 10 worst repeat themselves."""
    found = []
    for index in range(100):
        english = "no no no no" if index < 10 else f"sentence number {index}"
        found.append(sentence(-3.0 + index * 0.03, 10.0 + index * 0.5, english))
    return found


def test_fit_flags_the_lowest_decile_and_spans_the_usual_lengths() -> None:
    scored = made_up_dev_set()
    calibration = fit(scored)
    confidences = sorted(calibration.confidence(s.score.mean_log_prob) for s in scored)
    flagged = sum(1 for c in confidences if c < calibration.threshold)
    assert 10 <= flagged <= 20  # the lowest decile (its knots plateau at bin edges: a bin may join it)
    assert calibration.length_ratio[0] == pytest.approx(1.0)  # every made-up sentence: 10 tokens for 10
    assert calibration.length_ratio[1] == pytest.approx(1.5)


def test_separation_reports_what_the_confidence_tells_apart() -> None:
    scored = made_up_dev_set()
    figures = separation(scored, fit(scored))
    assert figures["sentences"] == 100
    assert figures["lowest_10pct_chrf"] < figures["other_90pct_chrf"]
    assert figures["repetition_lowest_10pct"] == 1.0 and figures["repetition_other_90pct"] == 0.0
    assert figures["repetition_flagged"] > figures["repetition_unflagged"]
    assert figures["spearman_confidence_chrf"] == pytest.approx(1.0)


def test_a_score_that_ranks_backwards_shows_no_separation() -> None:
    # the same sentences, but the model scores the worst ones highest: the figures must say so
    backwards = [sentence(-s.score.mean_log_prob - 3.0, s.chrf, s.english) for s in made_up_dev_set()]
    figures = separation(backwards, fit(backwards))
    assert figures["lowest_10pct_chrf"] >= figures["other_90pct_chrf"] - 1.0  # nothing told apart
    assert figures["spearman_confidence_chrf"] <= 0.0
