"""Verification thresholds and the messages of a failed check."""

from __future__ import annotations

import pytest

from build.verify import VERIFY_SENTENCES, Figures, VerificationError, VerifyThresholds, check, merged


def test_the_fixed_sentence_set_is_varied_chinese() -> None:
    assert len(VERIFY_SENTENCES) == 20 == len(set(VERIFY_SENTENCES))
    assert any("http" in s for s in VERIFY_SENTENCES) and any(c.isdigit() for s in VERIFY_SENTENCES for c in s)
    assert min(map(len, VERIFY_SENTENCES)) <= 3 and max(map(len, VERIFY_SENTENCES)) >= 40


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fp32_max_abs_log_prob_diff": 0.0}, r"fp32_max_abs_log_prob_diff must be positive; got 0.0"),
        ({"int8_top1_agreement": 1.5}, r"int8_top1_agreement is a share between 0 and 1; got 1.5"),
        ({"int8_greedy_exact_match": -0.1}, r"int8_greedy_exact_match is a share between 0 and 1; got -0.1"),
    ],
)
def test_thresholds_are_validated(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        VerifyThresholds(**kwargs)


def test_figures_within_thresholds_pass() -> None:
    check(
        Figures(sentences=20, fp32_max_abs_log_prob_diff=2e-5, fp32_greedy_exact_match=1.0),
        VerifyThresholds(),
    )
    check(Figures(sentences=20, int8_top1_agreement=0.95, int8_greedy_exact_match=0.5), VerifyThresholds())


def test_a_log_prob_difference_over_the_limit_says_by_how_much() -> None:
    figures = Figures(sentences=20, fp32_max_abs_log_prob_diff=0.0035, fp32_greedy_exact_match=1.0)
    with pytest.raises(
        VerificationError,
        match=r"FP32 ONNX vs PyTorch: max \|Δ log-prob\| is 0.0035; the limit is 0.001 \(exceeded by 0.0025\) "
        r"over 20 sentences",
    ):
        check(figures, VerifyThresholds())


def test_a_rate_under_the_minimum_says_by_how_much() -> None:
    figures = Figures(sentences=20, int8_top1_agreement=0.97, int8_greedy_exact_match=0.35)
    with pytest.raises(
        VerificationError,
        match=r"INT8 vs FP32: greedy exact-match rate is 35.0%; the minimum is 50.0% \(short by 15.0%\) over 20",
    ):
        check(figures, VerifyThresholds())


def test_nan_never_passes() -> None:
    with pytest.raises(VerificationError, match=r"max \|Δ log-prob\| is nan"):
        check(Figures(sentences=1, fp32_max_abs_log_prob_diff=float("nan")), VerifyThresholds())


def test_merged_figures_hold_both_comparisons() -> None:
    first = Figures(sentences=20, fp32_max_abs_log_prob_diff=1e-5, fp32_greedy_exact_match=1.0)
    second = Figures(sentences=20, int8_top1_agreement=0.9, int8_greedy_exact_match=0.6, int8_max_abs_log_prob_diff=0.3)
    assert merged(first, second).to_dict() == {
        "sentences": 20,
        "fp32_max_abs_log_prob_diff": 1e-5,
        "fp32_greedy_exact_match": 1.0,
        "int8_top1_agreement": 0.9,
        "int8_greedy_exact_match": 0.6,
        "int8_max_abs_log_prob_diff": 0.3,
    }
