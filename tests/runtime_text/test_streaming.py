"""Streamed translation (``TranslationService.translate_stream``, ``handler.streaming``): the same bytes as the whole
call on the dev set with every option set the memory test uses, units in source order as soon as they are done,
refusals before anything is yielded, the translation memory answering what it holds, a closed stream decoding no
further batch, and a deadline delivering what was done in time."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from build import corpus
from handler.errors import DeadlineExceededError, InvalidRequestError, RequestTooLargeError
from handler.service import StreamFinished, TranslateOptions, TranslationService
from handler.streaming import MAX_WINDOW_BATCHES, StreamedUnit, StreamProgress, plan_windows
from tests.fuzz.shipped import needs_shipped_bundle, shipped_config, shipped_model
from tests.runtime_text.test_translation_memory import OPTION_SETS, CountingDecoding

SENTENCES_PER_TEXT = 40


def service(memory_bytes: int = 0, **overrides: Any) -> TranslationService:
    config = shipped_config(**{"max_texts": 64, "max_chars": 10**6, "memory_bytes": memory_bytes, **overrides})
    return TranslationService(shipped_model(), config)


def counted(service: TranslationService) -> CountingDecoding:
    counting = CountingDecoding(service.model.decoding)
    service.model = type(service.model)(**{**vars(service.model), "decoding": counting})
    return counting


def dev_documents(count: int = 3) -> list[str]:
    """Texts of 40 dev sentences each: one run on, one a sentence a line, one in paragraphs with indentation."""
    sentences = [pair.zh for pair in corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR)[: count * SENTENCES_PER_TEXT]]
    chunks = [sentences[i : i + SENTENCES_PER_TEXT] for i in range(0, len(sentences), SENTENCES_PER_TEXT)]
    layouts = ["".join, "\n".join, lambda lines: "\n\n  ".join("".join(lines[i : i + 5]) for i in range(0, 40, 5))]
    return [layout(chunk) for layout, chunk in zip(layouts, chunks, strict=False)]


def collect(events: Any) -> tuple[list[StreamedUnit], list[StreamProgress], StreamFinished]:
    units: list[StreamedUnit] = []
    progress: list[StreamProgress] = []
    finished = None
    for event in events:
        assert finished is None, "nothing may follow the finished event"
        if isinstance(event, StreamedUnit):
            units.append(event)
        elif isinstance(event, StreamProgress):
            progress.append(event)
        else:
            finished = event
    assert isinstance(finished, StreamFinished)
    return units, progress, finished


# --- the windows --------------------------------------------------------------------------------------------


def test_windows_start_with_the_first_unit_alone_then_double_up_to_the_cap() -> None:
    windows = plan_windows([10] * 200, batch_source_tokens=50)
    assert windows[0] == range(0, 1)
    sizes = [len(window) for window in windows[1:]]
    # 100, 200, 400 tokens, then the cap of MAX_WINDOW_BATCHES batches
    assert sizes[:5] == [10, 20, 40, 40, 40] and MAX_WINDOW_BATCHES * 50 == 400
    covered = [position for window in windows for position in window]
    assert covered == list(range(200))  # every unit once, in order


def test_a_short_rest_is_one_window() -> None:
    assert plan_windows([10] * 21, batch_source_tokens=50) == [range(0, 1), range(1, 21)]  # 200 tokens: 4 batches
    assert plan_windows([10] * 22, batch_source_tokens=50)[1] == range(1, 11)  # 210: windows of 2 batches and up
    assert plan_windows([7], 50) == [range(0, 1)]


def test_a_unit_longer_than_a_window_gets_a_window_and_nothing_is_empty() -> None:
    assert plan_windows([], 10) == []
    assert plan_windows([500, 3, 900, 2], 10) == [range(0, 1), range(1, 3), range(3, 4)]


# --- the same bytes -----------------------------------------------------------------------------------------


@needs_shipped_bundle
@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda options: repr(options)[16:60])
def test_streamed_and_whole_translations_are_equal_byte_for_byte_on_the_dev_set(options: TranslateOptions) -> None:
    texts = dev_documents()
    if options.format == "html":
        texts = [f"<p>{text}</p><p><b>{text[:4]}</b></p>" for text in texts]
    whole = service().translate_detailed(texts, options)
    units, progress, finished = collect(service().translate_stream(texts, options))
    assert [t.text for t in finished.translations] == [t.text for t in whole]
    assert finished.translations == tuple(whole)  # spans (and scores) too
    assert [unit.index for unit in units] == list(range(len(units))) == list(range(finished.units))
    assert [unit.text for unit in units] == sorted(unit.text for unit in units)  # the texts in order
    for unit in units:
        if unit.source_span is not None:  # where the unit is in the text as given
            start, end = unit.source_span
            assert texts[unit.text][start:end] == unit.source
    if options.format == "text":
        for number in range(len(texts)):  # the units are the text's sentences, and their English is its
            mine = [unit for unit in units if unit.text == number]
            assert all(unit.source_span is not None for unit in mine)
            assert " ".join(u.translation for u in mine if u.translation).split() == whole[number].text.split()
    assert progress[-1].done == progress[-1].total and [p.done for p in progress] == sorted(p.done for p in progress)


@needs_shipped_bundle
def test_streamed_scores_are_the_whole_calls_scores_of_the_same_segments() -> None:
    text = dev_documents(1)[0]
    options = TranslateOptions(scores=True)
    whole = service().translate_detailed([text], options)[0]
    units, _, finished = collect(service().translate_stream([text], options))
    assert finished.translations[0] == whole
    streamed = [segment for unit in units for segment in unit.segments]
    assert [(s.source, s.translation, s.source_span, s.assessment) for s in streamed] == [
        (s.source, s.translation, s.source_span, s.assessment) for s in whole.segments
    ]
    for unit in units:  # each segment's English offsets are within its own event's translation
        for segment in unit.segments:
            assert segment.translation_span is not None
            assert unit.translation[slice(*segment.translation_span)] == segment.translation


MARKUP_TEXTS = {
    "html": '<p><b>你好</b>，<a href="/x" title="链接">世界</a></p><p>今天天气很好。我们去公园散步吧。</p>',
    "markdown": "# 标题\n\n**你好**，[世界](https://example.com) 今天天气很好。\n\n- 第一项 `pip install numpy`\n",
}
PRIVATE_USE = re.compile("[\U000f0000-\U0010fffd]")


@needs_shipped_bundle
@pytest.mark.parametrize("format", sorted(MARKUP_TEXTS))
def test_markup_segments_show_their_tags_and_are_found_in_the_text_as_given(format: str) -> None:
    """A stream's units and every segment's scores show the markup the user sent, never the private-use characters
    the pipeline stands it in with, and a block of markup is found where it is in the text."""
    text = MARKUP_TEXTS[format]
    options = TranslateOptions(format=format, scores=True)
    units, _, finished = collect(service().translate_stream([text], options))
    whole = service().translate_detailed([text], options)[0]
    segments = [s for unit in units for s in unit.segments] + list(finished.translations[0].segments)
    shown = [u.source for u in units] + [u.translation for u in units] + [finished.translations[0].text]
    shown += [part for s in [*segments, *whole.segments] for part in (s.source, s.translation)]
    assert not [part for part in shown if PRIVATE_USE.search(part)], "a private-use character reached the user"
    for unit in units:
        assert unit.source_span is not None, unit
        assert text[slice(*unit.source_span)] == unit.source
    assert any("<" in unit.source for unit in units) or format == "markdown"
    for segment in whole.segments:
        if segment.source_span is not None:
            assert text[slice(*segment.source_span)] == segment.source
    assert sum(s.source_span is not None for s in whole.segments) >= len(whole.segments) - 1


# --- the first unit first, and what the memory holds -----------------------------------------------------------


@needs_shipped_bundle
def test_the_first_unit_is_yielded_after_one_batch_of_one_sentence() -> None:
    streaming = service()
    counting = counted(streaming)
    events = streaming.translate_stream(dev_documents(1))
    assert counting.rows == 0  # nothing is decoded before the first event is asked for
    first_unit = next(event for event in events if isinstance(event, StreamedUnit))
    assert first_unit.index == 0 and first_unit.translation
    assert counting.rows == 1  # one sentence in one batch
    units, _, finished = collect(events)
    assert [unit.index for unit in units] == list(range(1, finished.units))


@needs_shipped_bundle
def test_a_windows_units_come_batch_by_batch_not_when_the_window_ends() -> None:
    # GIVEN a text whose units after the first make one window of several batches
    text = dev_documents(1)[0]
    events = list(service().translate_stream([text]))
    kinds = ["unit" if isinstance(event, StreamedUnit) else type(event).__name__ for event in events]
    last_progress = max(i for i, kind in enumerate(kinds) if kind == "StreamProgress")
    assert kinds.count("StreamProgress") >= 3  # the first unit's batch and at least two of the window's
    # THEN units of the window were sent before its last batch was decoded, and in order
    units = [event for event in events if isinstance(event, StreamedUnit)]
    assert any(isinstance(e, StreamedUnit) and e.index >= 1 for e in events[:last_progress])
    assert [unit.index for unit in units] == list(range(len(units)))


@needs_shipped_bundle
def test_the_translation_memory_answers_the_segments_it_holds() -> None:
    streaming = service(memory_bytes=16 * 1024 * 1024)
    text = dev_documents(1)[0]
    first = collect(streaming.translate_stream([text]))
    counting = counted(streaming)
    again = collect(streaming.translate_stream([text]))
    assert counting.rows == 0 and again[1] == []  # no batch decoded, so no progress event
    assert again[2] == first[2] and [u.translation for u in again[0]] == [u.translation for u in first[0]]


# --- refusals, hang-ups and deadlines ---------------------------------------------------------------------------


@needs_shipped_bundle
def test_every_refusal_comes_before_anything_is_yielded() -> None:
    limited = service(max_chars=50)
    with pytest.raises(RequestTooLargeError):
        limited.translate_stream(["你好。" * 20])
    service().translate_stream(["<b>你好</b>"], TranslateOptions(format="html")).close()  # type: ignore[attr-defined]
    with pytest.raises(InvalidRequestError):  # markup the html format refuses: refused when the call is made
        service().translate_stream(["\U000f0000<b>你好</b>"], TranslateOptions(format="html"))
    with pytest.raises(InvalidRequestError):
        service().translate_stream([b"bytes"])  # type: ignore[list-item]


@needs_shipped_bundle
def test_a_closed_stream_decodes_no_further_batch() -> None:
    streaming = service()
    counting = counted(streaming)
    events = streaming.translate_stream(dev_documents(1))
    next(event for event in events if isinstance(event, StreamedUnit))
    decoded = counting.rows
    events.close()  # type: ignore[attr-defined]  # what an adapter does for a client that hung up
    assert counting.rows == decoded
    with pytest.raises(StopIteration):
        next(events)
    assert streaming.decoder.idle()  # nothing of the closed stream waits in the decoder


@needs_shipped_bundle
def test_a_deadline_delivers_what_was_done_in_time_then_says_how_far_it_got() -> None:
    deadline = time.monotonic() + 5
    events = service().translate_stream(dev_documents(1), deadline=deadline)
    units: list[StreamedUnit] = []
    with pytest.raises(DeadlineExceededError, match=r"^the deadline passed before batch .* characters were translated"):
        for event in events:
            if isinstance(event, StreamedUnit):
                units.append(event)
                time.sleep(max(0.0, deadline - time.monotonic()) + 0.01)  # a slow client: the deadline passes
    assert len(units) == 1 and units[0].index == 0
