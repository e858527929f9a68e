"""``"scores": true`` on the shipped default model: every segment listed, its offsets slicing the source and the
translation, translations unchanged by asking, and the shipped calibration in use."""

from __future__ import annotations

import pytest

from handler.api.scores import segment_json
from handler.service import TranslateOptions
from handler.text.markup import lost_runs
from handler.text.spans import has_chinese
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service

pytestmark = pytest.mark.shipped_model


TEXT = (
    "今天天气很好，我们去公园散步吧。\n价格从 1,299 元降到了 999 元。 请访问 https://example.com 了解更多。"
    "\n\nHello 世界"
)


@needs_shipped_bundle
def test_asking_for_scores_changes_no_translation() -> None:
    service = shipped_service()
    texts = [TEXT, "他给我们开了个会。", "No Chinese here."]
    plain = service.translate_many(texts)
    scored = service.translate_detailed(texts, TranslateOptions(scores=True))
    assert [detail.text for detail in scored] == plain
    assert all(detail.segments == () for detail in service.translate_detailed(texts))


@needs_shipped_bundle
def test_every_segment_is_listed_with_offsets_that_slice_source_and_translation() -> None:
    service = shipped_service()
    [detail] = service.translate_detailed([TEXT], TranslateOptions(scores=True))
    sources = [segment.source for segment in detail.segments]
    assert "".join(sources).replace(" ", "") == TEXT.replace("\n", "").replace(" ", "")  # nothing left out
    previous_end = 0
    for segment in detail.segments:
        assert segment.source_span is not None and segment.translation_span is not None
        start, end = segment.source_span
        assert TEXT[start:end] == segment.source and start >= previous_end
        previous_end = end
        start, end = segment.translation_span
        assert detail.text[start:end] == segment.translation
        a = segment.assessment
        assert 0.0 <= a.confidence <= 1.0
        assert a.untranslated == has_chinese(segment.translation)
    # the model saw every segment with Chinese; "Hello" alone would have been kept as it is
    assert all(segment.assessment.model_score is not None for segment in detail.segments if has_chinese(segment.source))


@needs_shipped_bundle
def test_text_without_chinese_is_one_sure_unmodelled_segment() -> None:
    [detail] = shipped_service().translate_detailed(["print('hello')  # 42"], TranslateOptions(scores=True))
    [segment] = detail.segments
    assert segment.assessment.model_score is None and segment.assessment.confidence == 1.0
    assert not segment.assessment.low_confidence


@needs_shipped_bundle
def test_the_shipped_calibration_maps_scores_and_ranks_like_the_model() -> None:
    service = shipped_service()
    assert service.calibration.calibrated and service.info()["confidence_calibrated"] is True
    texts = ["今天天气很好，我们去公园散步吧。", "有什么 有什么 快说", "数据、研究和政策司司长"]
    segments = [d.segments[0] for d in service.translate_detailed(texts, TranslateOptions(scores=True))]
    pairs = sorted((s.assessment.model_score or 0.0, s.assessment.confidence) for s in segments)
    assert [c for _, c in pairs] == sorted(c for _, c in pairs)  # a higher model score is never less confident
    assert all(segment.score is not None for segment in segments)


@needs_shipped_bundle
def test_scores_follow_the_options_that_change_the_output() -> None:
    service = shipped_service()
    text = "他给我们开了个会。"
    greedy = service.translate_detailed([text], TranslateOptions(scores=True, beam_size=1))[0].segments[0]
    beam = service.translate_detailed([text], TranslateOptions(scores=True, beam_size=4))[0].segments[0]
    raw = service.translate_detailed([text], TranslateOptions(scores=True, protect_spans=False))[0].segments[0]
    assert greedy.score is not None and beam.score is not None and raw.score is not None
    assert raw.score.method == "plain"
    # greedy takes the best token each step; the beam may end elsewhere, but both are the model's own scores
    assert greedy.score.hypotheses[0].scored_tokens == len(greedy.score.hypotheses[0].ids) + 1


@needs_shipped_bundle
def test_scores_must_be_a_boolean() -> None:
    from handler.errors import InvalidRequestError

    with pytest.raises(InvalidRequestError, match='scores must be true or false; got "yes"'):
        TranslateOptions.from_mapping({"scores": "yes"})


@needs_shipped_bundle
def test_a_translation_keeping_double_spaces_is_still_located() -> None:
    # protected code keeps its inner whitespace byte for byte; the English offsets must still be found
    text = "请运行 `ls  -la` 命令。"
    [detail] = shipped_service().translate_detailed([text], TranslateOptions(scores=True))
    [segment] = detail.segments
    assert "`ls  -la`" in detail.text
    assert segment.translation_span is not None
    start, end = segment.translation_span
    assert detail.text[start:end] == segment.translation


@pytest.mark.parametrize(
    ("source", "translation", "lost"),
    [
        ("\U000f0000你好\U000f8000，世界", "\U000f0000, you're\U000f8000,", ["，世界"]),  # the example
        ("\U000f0000你好\U000f8000，世界", "\U000f0000Hello\U000f8000, world", []),
        ("请使用\U000f0000微信\U000f8000付款。", "Use \U000f0000WeChat\U000f8000.", ["付款。"]),
        ("你好，世界", "", []),  # no markup: the length ratio speaks for a short output
        ("\U000f0000你好\U000f8000世界", "Hello world", []),  # the markup did not come back in order: not paired
        ("\U000f0000你好\U000f8000 2024", "\U000f0000Hello\U000f8000 ", []),  # no Chinese in the run: kept as is
    ],
)
def test_a_run_of_chinese_dropped_between_markup_is_found(source: str, translation: str, lost: list[str]) -> None:
    assert lost_runs(source, translation) == lost


@needs_shipped_bundle
@pytest.mark.parametrize("stream", [False, True])
def test_a_span_dropped_between_markup_flags_its_segment(stream: bool) -> None:
    """``<p><b>你好</b>，世界</p>`` comes back as ``<p><b>, you're</b>,</p>`` from the default model: 世界 is gone,
    with a confidence over the threshold, so only the lost run can flag it, in the answer and in a stream alike."""
    options = TranslateOptions(format="html", scores=True)
    text = "<p><b>你好</b>，世界</p>"
    if stream:
        units = [u for u in shipped_service().translate_stream([text], options) if hasattr(u, "segments")]
        segments = [segment for unit in units for segment in unit.segments]  # type: ignore[attr-defined]
    else:
        segments = list(shipped_service().translate_detailed([text], options)[0].segments)
    [segment] = segments
    assert "世界" not in segment.translation and "world" not in segment.translation.lower()
    assert segment.assessment.lost_source == ("，世界",)
    assert segment.assessment.low_confidence
    assert any("世界" in reason for reason in segment.assessment.reasons)
    assert segment_json(segment)["flags"]["lost_source"] is True
