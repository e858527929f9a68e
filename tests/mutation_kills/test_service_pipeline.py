"""``TranslationService`` on the shipped bundle, without torch: info, options reaching the search, spans, documents,
progress and deadlines (what only the torch-built ``tests/runtime/test_service.py`` reached before).

Each test builds a fresh service on the bundle loaded once per process (``tests/fuzz/shipped.py``); a
``CountingDecoding`` wraps the bundle's real decoding protocol to count the batches a request decoded, so a
refusal "before work" can be checked. The document has three Chinese lines (one batch each at
``batch_tokens=64`` and the default beam of 4) and one line without Chinese, which never reaches the model.
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Any

import pytest

from handler.errors import DeadlineExceededError, InvalidRequestError
from handler.service import ThroughputMeter, TranslateOptions, TranslationService
from handler.text.glossary import Glossary
from tests.fuzz.shipped import needs_shipped_bundle, shipped_config, shipped_model, shipped_service, shipped_tokenizer
from tests.runtime.decoder_hooks import after_each_batch

CHINESE_LINES = (
    "今天天气很好，我们一起去公园散步，然后在湖边吃午饭。",  # 26 characters: the longest, the first batch
    "他们正在讨论明年的计划和预算问题。",  # 17
    "这个城市的交通非常拥挤。",  # 12
)
ENGLISH_LINE = "Plain text, kept as it is."
DOCUMENT = "\n".join((CHINESE_LINES[0], ENGLISH_LINE, *CHINESE_LINES[1:])) + "\n"
BATCHES = len(CHINESE_LINES)


class CountingDecoding:
    """The bundle's decoding protocol, counting the batches it decodes and the rows (segments) of each."""

    def __init__(self, decoding: Any) -> None:
        self._decoding = decoding
        self.rows: list[int] = []

    @property
    def batches(self) -> int:
        return len(self.rows)

    def search(self, model: Any, input_ids: Any, *args: Any, **kwargs: Any) -> Any:
        self.rows.append(len(input_ids))
        return self._decoding.search(model, input_ids, *args, **kwargs)


def counting_service(**overrides: object) -> tuple[TranslationService, CountingDecoding]:
    """A service whose batches are counted; without the translation memory unless asked (these tests count what
    the pipeline decodes; what the memory saves is tested in tests/runtime_text/test_translation_memory.py)."""
    loaded = shipped_model()
    counting = CountingDecoding(loaded.decoding)
    config = shipped_config(**{"memory_bytes": 0, **overrides})
    service = TranslationService(dataclasses.replace(loaded, decoding=counting), config)
    return service, counting


# --- information and options ----------------------------------------------------------------------------------


@needs_shipped_bundle
def test_info_names_the_bundle_its_threads_and_the_default_beam() -> None:
    service = shipped_service(beam_size=2)
    manifest = shipped_model().manifest
    info = service.info()
    assert info == {
        "model": manifest.name,
        "source_model": manifest.source_model,
        "family": manifest.family,
        "bundle_hash": manifest.bundle_hash(),
        "format_version": manifest.format_version,
        "threads": 1,
        "default_beam_size": 2,
        "confidence_calibrated": True,  # the shipped manifest carries its calibration (build.calibrate)
        "translation_memory": {
            "hits": 0,
            "misses": 0,
            "entries": 0,
            "bytes": 0,
            "max_bytes": 16 * 1024 * 1024,
            "evictions": 0,
        },
        "timings": shipped_model().timings,
    }
    assert re.fullmatch(r"[0-9a-f]{16}", str(info["bundle_hash"]))
    assert set(info["timings"]) == {"check_s", "tokenizer_s", "sessions_s", "warmup_s", "load_s"}  # type: ignore[arg-type]


@needs_shipped_bundle
def test_a_string_instead_of_a_list_is_refused_naming_its_type() -> None:
    with pytest.raises(InvalidRequestError, match=r"^texts must be a list of strings; got str$"):
        shipped_service().translate_many("你好。")  # type: ignore[arg-type]


@needs_shipped_bundle
def test_the_request_glossary_reaches_translate_many_and_is_reported_as_a_span() -> None:
    service = shipped_service(beam_size=1)
    options = TranslateOptions(glossary={"模型": "Frobnicator"})
    assert "Frobnicator" in service.translate_many(["这个模型很好。"], options)[0]
    detailed = service.translate_detailed(["这个模型很好。"], options)[0]
    assert "Frobnicator" in detailed.text
    assert [(span.source, span.target) for span in detailed.spans] == [("模型", "Frobnicator")]
    assert "Frobnicator" not in service.translate("这个模型很好。")


@needs_shipped_bundle
def test_protected_spans_are_reported_and_markup_is_not() -> None:
    service = shipped_service(beam_size=1)
    [text] = service.translate_detailed(["请访问 https://example.com/a 获取信息。"])
    assert "https://example.com/a" in text.text
    assert [(span.kind.value, span.source) for span in text.spans] == [("url", "https://example.com/a")]
    page = '<p>请访问 <a href="https://example.com/a">这里</a>。</p>'
    [html] = service.translate_detailed([page], TranslateOptions(format="html"))
    assert 'href="https://example.com/a"' in html.text
    assert html.spans == ()


@needs_shipped_bundle
def test_a_lower_length_penalty_prefers_shorter_translations() -> None:
    # beam search with exponent 0 ranks by the sum of log-probabilities, which favours short outputs
    service = shipped_service()
    for sentence in ("这个城市的交通非常拥挤。", "好。"):
        short = service.translate(sentence, TranslateOptions(beam_size=4, length_penalty=0.0))
        long = service.translate(sentence, TranslateOptions(beam_size=4, length_penalty=2.0))
        assert len(short) < len(long), (sentence, short, long)


@needs_shipped_bundle
def test_output_length_follows_the_ratio_and_stays_below_the_model_positions() -> None:
    service = shipped_service()
    positions = shipped_model().spec.max_positions
    assert service.max_new_tokens(10, TranslateOptions()) == 30
    assert service.max_new_tokens(10, TranslateOptions(max_length_ratio=1.0)) == 20
    assert service.max_new_tokens(positions, TranslateOptions(max_length_ratio=4.0)) == positions - 1


@needs_shipped_bundle
def test_a_glossary_given_to_the_service_replaces_the_deployments() -> None:
    glossary = Glossary.from_mapping({"模型": "Frobnicator"})
    service = TranslationService(shipped_model(), shipped_config(beam_size=1), glossary=glossary)
    assert "Frobnicator" in service.translate("这个模型很好。")


@needs_shipped_bundle
def test_without_protect_spans_the_model_translates_the_raw_text_and_no_span_is_reported() -> None:
    service, counting = counting_service(beam_size=1)
    raw = TranslateOptions(protect_spans=False)
    [url, plain, blank] = service.translate_detailed(["请访问 https://example.com/a 获取信息。", "你好。", "  "], raw)
    assert url.spans == () and plain.spans == () and blank.text == "  "
    assert re.search(r"[A-Za-z]{3}", url.text) and not re.search(r"[\u4e00-\u9fff]", url.text + plain.text)
    assert plain.text == service.translate("你好。")  # a text without spans gives the same either way
    assert counting.rows[0] == 2  # both texts in one batch, the blank one never reaches the model


@needs_shipped_bundle
def test_the_repetition_guard_stops_a_degenerate_loop_and_can_be_turned_off() -> None:
    service = shipped_service(beam_size=1)
    laughter = "哈" * 20
    guarded = service.translate(laughter)
    unguarded = service.translate(laughter, TranslateOptions(repetition_guard=False))
    assert "hahahahahahahahahaha" in unguarded.lower()
    assert "hahahahahahahahahaha" not in guarded.lower() and len(guarded) < len(unguarded)


@needs_shipped_bundle
def test_a_sentence_of_up_to_half_the_model_positions_is_one_segment() -> None:
    # the source gets at most half the positions (512 // 2 = 256 tokens): a 200-256 token run without any clause
    # mark or space reaches the model whole, as one row
    phrase = "我们明天早上去公园散步然后去图书馆看书"
    text = phrase
    while shipped_tokenizer().count_tokens(text + phrase) <= shipped_model().spec.max_positions // 2:
        text += phrase
    assert shipped_tokenizer().count_tokens(text) > 200
    service, counting = counting_service(beam_size=1)
    assert service.translate(text, TranslateOptions(max_length_ratio=1.0)).strip()
    assert counting.rows == [1]


# --- messages for what cannot be translated --------------------------------------------------------------------


def test_option_values_are_shown_as_sent() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        TranslateOptions(format="纯文本")
    assert str(caught.value) == 'format must be one of text, html, markdown; got "纯文本"'
    with pytest.raises(InvalidRequestError) as caught:
        TranslateOptions(beam_size={2})  # type: ignore[arg-type]  # not JSON: shown as Python writes it
    assert str(caught.value) == "beam_size must be an integer from 1 to 8; got {2}"
    with pytest.raises(InvalidRequestError) as caught:
        TranslateOptions.from_mapping(["beam_size"])  # type: ignore[arg-type]
    assert str(caught.value) == (
        "options must be an object with the keys beam_size, length_penalty, max_length_ratio, repetition_guard, "
        "format, glossary, protect_spans, source, scores"
    )


@needs_shipped_bundle
def test_a_text_that_is_not_a_string_or_not_unicode_is_refused_naming_it() -> None:
    service = shipped_service()
    cases: list[tuple[Any, str]] = [
        (lambda: service.translate_many(["你好", 5]), "texts[1] is int; every text must be a string"),
        (
            lambda: service.translate_many(["你好", "a\ud800"]),
            "texts[1] holds an unpaired UTF-16 surrogate at character 1; send valid Unicode text",
        ),
        (lambda: service.translate_document(b"abc"), "the document must be a string; got bytes"),
        (
            lambda: service.translate_document("你\udfff"),
            "the document holds an unpaired UTF-16 surrogate at character 1; send valid Unicode text",
        ),
    ]
    for send, message in cases:
        with pytest.raises(InvalidRequestError) as caught:
            send()
        assert str(caught.value) == message


# --- documents and progress -----------------------------------------------------------------------------------


@needs_shipped_bundle
def test_a_document_keeps_its_lines_and_progress_counts_finished_characters() -> None:
    service, counting = counting_service(batch_tokens=64)
    calls: list[tuple[int, int]] = []
    english = service.translate_document(DOCUMENT, progress=lambda done, total: calls.append((done, total)))
    lines = english.split("\n")
    assert len(lines) == len(DOCUMENT.split("\n")) and lines[-1] == ""
    assert lines[1] == ENGLISH_LINE
    assert all(re.search(r"[A-Za-z]{3}", line) and not re.search(r"[\u4e00-\u9fff]", line) for line in lines[:-1])
    assert lines[0] == service.translate(CHINESE_LINES[0]) and lines[3] == service.translate(CHINESE_LINES[2])
    assert counting.batches == BATCHES + 2  # three batches, then one for each single line above
    # the total counts every segment; the model's share (the Chinese lines) is scaled to it after each batch
    total = sum(len(line) for line in (*CHINESE_LINES, ENGLISH_LINE))
    model_chars = sum(len(line) for line in CHINESE_LINES)
    finished = [26, 26 + 17, 26 + 17 + 12]  # the batches go longest first
    assert calls == [(chars * total // model_chars, total) for chars in finished] + [(total, total)]
    assert all(type(done) is int for done, _ in calls)


@needs_shipped_bundle
def test_a_repeated_line_is_translated_once_and_counts_twice_in_progress() -> None:
    service, counting = counting_service(batch_tokens=64)
    document = "\n".join((CHINESE_LINES[0], CHINESE_LINES[1], CHINESE_LINES[0]))
    calls: list[tuple[int, int]] = []
    english = service.translate_document(document, progress=lambda done, total: calls.append((done, total)))
    first, _, again = english.split("\n")
    assert first == again and counting.batches == 2
    # the first batch finished both occurrences of the longest line
    assert calls == [(2 * 26, 2 * 26 + 17), (2 * 26 + 17, 2 * 26 + 17), (2 * 26 + 17, 2 * 26 + 17)]


@needs_shipped_bundle
def test_a_one_character_document_reports_it_done() -> None:
    calls: list[tuple[int, int]] = []
    assert shipped_service().translate_document("好", progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 1), (1, 1)]


@needs_shipped_bundle
def test_progress_follows_the_first_round_only_when_spans_are_stitched() -> None:
    # numbers, an amount and a name the model does not keep as placeholders: the segment is translated again in
    # pieces around them (a second round), which progress does not report again
    service, counting = counting_service(beam_size=1)
    text = "他在2023年3月15日花了¥1,234.56买了Apple iPhone。"
    calls: list[tuple[int, int]] = []
    assert "1,234.56" in service.translate_document(text, progress=lambda done, total: calls.append((done, total)))
    assert counting.batches > 1  # the segment, then its pieces
    assert calls == [(len(text), len(text)), (len(text), len(text))]


@needs_shipped_bundle
def test_a_document_with_a_distant_deadline_is_translated_in_full_and_again() -> None:
    plain = shipped_service(batch_tokens=64).translate_document(DOCUMENT)
    service, counting = counting_service(batch_tokens=64)
    # the first document: no speed measured before its first batch, then a projection before each further one
    assert service.translate_document(DOCUMENT, deadline=time.monotonic() + 60) == plain
    # the second: the speed measured on the first projects the whole document before any work
    assert service.translate_document(DOCUMENT, deadline=time.monotonic() + 60) == plain
    assert counting.batches == 2 * BATCHES


# --- deadlines ------------------------------------------------------------------------------------------------


@needs_shipped_bundle
def test_a_deadline_already_passed_raises_before_any_work() -> None:
    service, counting = counting_service()
    with pytest.raises(DeadlineExceededError) as caught:
        service.translate_document("你好。", deadline=time.monotonic() - 1)
    assert str(caught.value) == "the deadline passed before the translation began; nothing was translated"
    assert counting.batches == 0


def _seconds_in(pattern: str, message: str) -> tuple[float, float]:
    """The (needed, left) seconds of a deadline message that matches ``pattern`` whole."""
    found = re.fullmatch(pattern, message)
    assert found, message
    needed, left = (float(number.replace(",", "")) for number in found.groups())
    return needed, left


@needs_shipped_bundle
def test_a_document_that_cannot_finish_in_time_is_refused_before_work() -> None:
    service, counting = counting_service(batch_tokens=64)
    service.throughput.record(seconds=10.0, work=1.0)  # measured: 10 s per source token and beam
    with pytest.raises(DeadlineExceededError) as caught:
        service.translate_document(DOCUMENT, deadline=time.monotonic() + 60)
    needed, left = _seconds_in(
        r"the document needs about ([\d,.]+) s at the measured speed, but only ([\d.]+) s are left before the "
        r"deadline; nothing was translated",
        str(caught.value),
    )
    # every Chinese line is at least 8 tokens, decoded with 4 beams: more than 3 x 8 x 4 x 10 s
    assert needed > BATCHES * 8 * 4 * 10 and 59 < left <= 60
    assert counting.batches == 0


@needs_shipped_bundle
def test_a_deadline_passing_between_batches_stops_the_work() -> None:
    service, counting = counting_service(batch_tokens=64)
    deadline = time.monotonic() + 1.0
    after_each_batch(service, lambda rows: time.sleep(max(0.0, deadline - time.monotonic()) + 0.01))
    with pytest.raises(DeadlineExceededError) as caught:
        service.translate_document(DOCUMENT, deadline=deadline)
    assert re.fullmatch(
        r"the deadline passed before batch 2 of the document; 1 batches done \(([\d,]+) of ([\d,]+) characters\)",
        str(caught.value),
    ), str(caught.value)
    assert counting.batches == 1


@needs_shipped_bundle
def test_a_batch_that_would_overrun_is_not_started() -> None:
    service, counting = counting_service(batch_tokens=64)
    # from the first batch on, the measured speed is about 1,000 s per token
    after_each_batch(service, lambda rows: service.throughput.record(seconds=1e6, work=1.0))
    with pytest.raises(DeadlineExceededError) as caught:
        service.translate_document(DOCUMENT, deadline=time.monotonic() + 3600)
    needed, left = _seconds_in(
        r"batch 2 of the document needs about ([\d,.]+) s at the measured speed, but only ([\d,.]+) s are left "
        r"before the deadline; 1 batches done \([\d,]+ of [\d,]+ characters\)",
        str(caught.value),
    )
    assert needed > left > 3500
    assert counting.batches == 1


def test_the_throughput_meter_projects_from_recent_batches() -> None:
    meter = ThroughputMeter(memory=0.5)
    assert meter.seconds_for(100) is None
    meter.record(seconds=1.0, work=100)
    assert meter.seconds_for(50) == pytest.approx(0.5)
    meter.record(seconds=3.0, work=100)  # slower now: (0.5 * 1 + 3) / (0.5 * 100 + 100)
    assert meter.seconds_for(150) == pytest.approx(3.5)
