"""The translation service: option and limit validation, the text pipeline, documents and deadlines."""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Any

import pytest

from handler.config import RuntimeConfig
from handler.errors import ConfigurationError, DeadlineExceededError, InvalidRequestError, RequestTooLargeError
from handler.model.loader import LoadedModel
from handler.service import OPTION_NAMES, TranslateOptions, TranslationService
from handler.text.segmentation import split_document
from tests.runtime.conftest import SENTENCES
from tests.runtime.decoder_hooks import after_each_batch
from tests.runtime.step_models import CountingModel

PARAGRAPHS = (
    "  " + "".join(SENTENCES[:4]) + "\n" + "".join(SENTENCES[4:6]) + "\n\n\n"
    "\t" + "".join(SENTENCES[6:9]) + "\r\n\n" + "".join(SENTENCES[9:]) + "\n"
)


def counting_service(loaded: LoadedModel, config: RuntimeConfig) -> tuple[TranslationService, CountingModel]:
    counting = CountingModel(loaded.model)
    return TranslationService(dataclasses.replace(loaded, model=counting), config), counting  # type: ignore[arg-type]


@pytest.fixture
def service(tiny_loaded: LoadedModel, tiny_config: RuntimeConfig) -> TranslationService:
    return TranslationService(tiny_loaded, tiny_config)


# --- options --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"beam_size": 12}, "beam_size must be an integer from 1 to 8; got 12"),
        ({"beam_size": 0}, "beam_size must be an integer from 1 to 8; got 0"),
        ({"beam_size": "4"}, 'beam_size must be an integer from 1 to 8; got "4"'),
        ({"beam_size": True}, "beam_size must be an integer from 1 to 8; got true"),
        ({"beam_size": 2.0}, "beam_size must be an integer from 1 to 8; got 2.0"),
        ({"length_penalty": 3}, "length_penalty must be a number from 0.0 to 2.0; got 3"),
        ({"length_penalty": float("nan")}, "length_penalty must be a number from 0.0 to 2.0; got NaN"),
        ({"max_length_ratio": 0.5}, "max_length_ratio must be a number from 1.0 to 4.0; got 0.5"),
        ({"max_length_ratio": [2]}, r"max_length_ratio must be a number from 1.0 to 4.0; got \[2\]"),
        ({"repetition_guard": "yes"}, 'repetition_guard must be true or false; got "yes"'),
        (
            {"beams": 4, "temperature": 1},
            "unknown options beams, temperature; allowed options: beam_size, length_penalty, max_length_ratio, "
            "repetition_guard, " + ", ".join(OPTION_NAMES[4:]),
        ),
    ],
)
def test_invalid_options_say_what_is_allowed(options: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRequestError, match=f"^{message}$"):
        TranslateOptions.from_mapping(options)


def test_valid_options_and_null_defaults() -> None:
    options = TranslateOptions.from_mapping(
        {"beam_size": 3, "length_penalty": 0, "max_length_ratio": 1.5, "repetition_guard": False}
    )
    assert options == TranslateOptions(beam_size=3, length_penalty=0, max_length_ratio=1.5, repetition_guard=False)
    assert TranslateOptions.from_mapping({"beam_size": None, "repetition_guard": None}) == TranslateOptions()
    with pytest.raises(InvalidRequestError, match="^options must be an object with the keys beam_size, "):
        TranslateOptions.from_mapping([("beam_size", 2)])  # type: ignore[arg-type]


# --- limits ---------------------------------------------------------------------------------------------------


def test_request_limits_name_the_limit_and_the_variable(tiny_loaded: LoadedModel, tiny_config: RuntimeConfig) -> None:
    service, counting = counting_service(tiny_loaded, tiny_config.with_overrides(max_chars=20_000, max_texts=3))
    with pytest.raises(
        RequestTooLargeError, match=r"^text is 48,210 characters; the limit is 20,000 \(TRANSLATE_MAX_CHARS\)$"
    ):
        service.translate("长" * 48_210)
    with pytest.raises(
        RequestTooLargeError, match=r"^texts are 20,001 characters in all; the limit is 20,000 \(TRANSLATE_MAX_CHARS\)$"
    ):
        service.translate_many(["长" * 10_000, "长" * 10_001])
    with pytest.raises(
        RequestTooLargeError, match=r"^the request has 4 texts; the limit is 3 \(TRANSLATE_MAX_TEXTS\)$"
    ):
        service.translate_many(["你好"] * 4)
    with pytest.raises(InvalidRequestError, match=r"^texts\[1\] is int; every text must be a string$"):
        service.translate_many(["你好", 5])  # type: ignore[list-item]
    with pytest.raises(InvalidRequestError, match="^texts must be a list of strings; got str$"):
        service.translate_many("你好")
    assert counting.encoded_rows == []  # nothing reached the model


def test_documents_have_no_character_limit(tiny_loaded: LoadedModel, tiny_config: RuntimeConfig) -> None:
    service = TranslationService(tiny_loaded, tiny_config.with_overrides(max_chars=10))
    text = "你好。谢谢。再见。" * 2
    with pytest.raises(RequestTooLargeError, match="^text is 18 characters; the limit is 10 "):
        service.translate(text)
    assert isinstance(service.translate_document(text), str)


# --- the pipeline ---------------------------------------------------------------------------------------------


def test_empty_and_whitespace_texts_never_reach_the_model(tiny_loaded: LoadedModel, tiny_config: RuntimeConfig) -> None:
    service, counting = counting_service(tiny_loaded, tiny_config)
    assert service.translate("") == ""
    assert service.translate_many(["", " \n\n\t", "\u3000"]) == ["", " \n\n\t", "\u3000"]
    assert service.translate_document("\n\n") == "\n\n"
    assert counting.encoded_rows == []


def test_a_long_text_keeps_its_lines_and_translates_every_segment(
    tiny_loaded: LoadedModel, tiny_config: RuntimeConfig
) -> None:
    # GIVEN a text of several paragraphs with blank lines, indentation and CRLF, and one over-long sentence
    long_sentence = "，".join(SENTENCES[5].rstrip("。") for _ in range(8)) + "。"  # one sentence, many clauses
    text = PARAGRAPHS + long_sentence + "\n"
    service, counting = counting_service(tiny_loaded, tiny_config)
    document = split_document(text, tiny_loaded.tokenizer.count_tokens, service.max_source_tokens)
    # WHEN it is translated (without span protection, whose stitching would add a second round)
    translation = service.translate_document(text, TranslateOptions(protect_spans=False))
    # THEN every distinct segment went through the model once, none longer than the source budget
    assert sum(counting.encoded_rows) == len(set(document.texts))
    assert all(tiny_loaded.tokenizer.count_tokens(part) <= service.max_source_tokens for part in document.texts)
    assert len(document.segments) > len(SENTENCES)  # sentences were split, the long one at its commas
    # AND the output has the input's line structure: same line breaks, blank lines and leading whitespace
    assert re.sub(r"[^\n]", "", translation) == re.sub(r"[^\n]", "", text)
    assert translation.startswith("  ") and "\n\n\n\t" in translation and "\r\n\n" in translation
    assert "\n\n\n" in translation and translation.endswith("\n")
    lines = zip(translation.split("\n"), text.split("\n"), strict=True)
    assert all(line.strip() for line, source in lines if source.strip())


def test_identical_segments_are_translated_once(tiny_loaded: LoadedModel, tiny_config: RuntimeConfig) -> None:
    service, counting = counting_service(tiny_loaded, tiny_config)
    results = service.translate_many(["你好。", "谢谢。你好。", "你好。"])
    assert sum(counting.encoded_rows) == 2
    assert results[0] == results[2] and results[1].endswith(results[0])


def test_translate_many_keeps_the_order(service: TranslationService) -> None:
    texts = list(SENTENCES)
    forward = service.translate_many(texts)
    backward = service.translate_many(texts[::-1])
    assert backward == forward[::-1]
    assert len(set(forward)) > len(texts) // 2  # different sentences, different translations


def test_beam_size_chooses_the_search(tiny_loaded: LoadedModel, tiny_config: RuntimeConfig) -> None:
    service, counting = counting_service(tiny_loaded, tiny_config.with_overrides(beam_size=3))
    service.translate("我明天早上八点去机场接你。")
    assert counting.step_rows[0] == 3  # the configured default: 3 beams
    counting.step_rows.clear()
    service.translate("我明天早上八点去机场接你。", TranslateOptions(beam_size=1))
    assert set(counting.step_rows) == {1}


def test_output_length_follows_the_ratio_and_the_model_limit(service: TranslationService) -> None:
    assert service.max_new_tokens(10, TranslateOptions()) == 30
    assert service.max_new_tokens(10, TranslateOptions(max_length_ratio=1.0)) == 20
    assert service.max_new_tokens(60, TranslateOptions(max_length_ratio=4.0)) == service.model.spec.max_positions - 1


def test_info_names_the_model_and_bundle(service: TranslationService) -> None:
    info = service.info()
    assert info["model"] == "tiny"
    assert re.fullmatch(r"[0-9a-f]{16}", str(info["bundle_hash"]))
    assert info["family"] == "marian"  # the tiny bundle's manifest names no family
    assert set(info["timings"]) == {"check_s", "tokenizer_s", "sessions_s", "warmup_s", "load_s"}  # type: ignore[arg-type]


# --- documents: progress and deadlines ------------------------------------------------------------------------


def test_progress_counts_characters_up_to_the_total(tiny_loaded: LoadedModel, tiny_config: RuntimeConfig) -> None:
    service = TranslationService(tiny_loaded, tiny_config.with_overrides(batch_tokens=64))
    calls: list[tuple[int, int]] = []
    service.translate_document(PARAGRAPHS, progress=lambda done, total: calls.append((done, total)))
    document = split_document(PARAGRAPHS, tiny_loaded.tokenizer.count_tokens, service.max_source_tokens)
    total = sum(len(segment) for segment in document.texts)
    assert len(calls) > 1
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert {total_seen for _, total_seen in calls} == {total}
    assert calls[-1][0] == total


def test_a_deadline_already_passed_raises_before_any_work(tiny_loaded: LoadedModel, tiny_config: RuntimeConfig) -> None:
    service, counting = counting_service(tiny_loaded, tiny_config)
    with pytest.raises(
        DeadlineExceededError, match=r"^the deadline passed before the translation began; nothing was translated$"
    ):
        service.translate_document("你好。", deadline=time.monotonic() - 1)
    assert counting.encoded_rows == []


def test_a_document_that_cannot_finish_in_time_is_refused_before_work(
    tiny_loaded: LoadedModel, tiny_config: RuntimeConfig
) -> None:
    service, counting = counting_service(tiny_loaded, tiny_config)
    service.throughput.record(seconds=10.0, work=1.0)  # measured: 10 s per source token and beam
    with pytest.raises(
        DeadlineExceededError,
        match=r"^the document needs about [\d,.]+ s at the measured speed, but only [\d.]+ s are left before the "
        r"deadline; nothing was translated$",
    ):
        service.translate_document(PARAGRAPHS, deadline=time.monotonic() + 60)
    assert counting.encoded_rows == []


def test_a_deadline_passing_between_batches_stops_the_work(
    tiny_loaded: LoadedModel, tiny_config: RuntimeConfig
) -> None:
    service, counting = counting_service(tiny_loaded, tiny_config.with_overrides(batch_tokens=64))
    deadline = time.monotonic() + 2.0
    after_each_batch(service, lambda rows: time.sleep(max(0.0, deadline - time.monotonic()) + 0.01))
    with pytest.raises(
        DeadlineExceededError,
        match=r"^the deadline passed before batch 2 of the document; 1 batches done \([\d,]+ of [\d,]+ characters\)$",
    ):
        service.translate_document(PARAGRAPHS, deadline=deadline)
    assert len(counting.encoded_rows) == 1


def test_a_batch_that_would_overrun_is_not_started(tiny_loaded: LoadedModel, tiny_config: RuntimeConfig) -> None:
    service, counting = counting_service(tiny_loaded, tiny_config.with_overrides(batch_tokens=64))
    # from the first batch on, the measured speed is 1,000 s per token
    after_each_batch(service, lambda rows: service.throughput.record(seconds=1e6, work=1.0))
    with pytest.raises(
        DeadlineExceededError,
        match=r"^batch 2 of the document needs about [\d,.]+ s at the measured speed, but only [\d,.]+ s are left "
        r"before the deadline; 1 batches done \([\d,]+ of [\d,]+ characters\)$",
    ):
        service.translate_document(PARAGRAPHS, deadline=time.monotonic() + 3600)
    assert len(counting.encoded_rows) == 1


def test_the_deployment_glossary_applies_and_a_request_term_wins(
    tiny_loaded: LoadedModel, tiny_config: RuntimeConfig, tmp_path: Any
) -> None:
    # GIVEN a deployment glossary file (TRANSLATE_GLOSSARY_FILE) WHEN texts hold its terms
    terms = tmp_path / "terms.tsv"
    terms.write_text("人工智能\tartificial intelligence\n芯片\tchip\n", encoding="utf-8")
    config = dataclasses.replace(tiny_config, glossary_file=terms)
    service = TranslationService(tiny_loaded, config)
    plain, override = service.translate_many(["人工智能和芯片。"], TranslateOptions()) + service.translate_many(
        ["人工智能和芯片。"], TranslateOptions(glossary={"芯片": "microchip"})
    )
    # THEN every occurrence yields the target term (the random tiny model reaches it by stitching), and the
    # request's own term replaces the deployment's
    assert "rtificial intelligence" in plain and "chip" in plain
    assert "microchip" in override and "rtificial intelligence" in override
    # and a bad file stops the start, naming the variable
    terms.write_text("no tab\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"^TRANSLATE_GLOSSARY_FILE=.*line 1 has no tab"):
        TranslationService(tiny_loaded, config)


def test_protected_spans_survive_the_tiny_model_and_text_without_chinese_is_kept(service: TranslationService) -> None:
    texts = ["请访问 https://example.com/a?b=1 获取 `pip install x` 信息。", "Plain English, 42."]
    detailed = service.translate_detailed(texts)
    assert "https://example.com/a?b=1" in detailed[0].text and "`pip install x`" in detailed[0].text
    assert [span.kind.value for span in detailed[0].spans] == ["url", "code"]
    assert detailed[1].text == "Plain English, 42."


def test_a_lean_models_batches_keep_to_the_smaller_decoder_cache_budget(
    tiny_loaded: LoadedModel, tiny_config: RuntimeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a full-size CSANMT opens lean (its graphs are over 300 MB); its longest request peaked at 1,106 MB with the
    # full budget and 969 MB with half (bench.pipeline.csanmt_bench, 3,000 characters)
    from handler import service as service_module
    from handler.model.batching import KV_CACHE_BUDGET_BYTES, LARGE_MODEL_KV_CACHE_BUDGET_BYTES

    budgets: list[int] = []
    plan = service_module.plan_batches

    def recording_plan(*args: Any, **kwargs: Any) -> Any:
        budgets.append(kwargs["max_bytes"])
        return plan(*args, **kwargs)

    monkeypatch.setattr(service_module, "plan_batches", recording_plan)
    service = TranslationService(tiny_loaded, tiny_config)
    service.translate(SENTENCES[0])
    small = set(budgets)
    budgets.clear()
    monkeypatch.setattr(tiny_loaded.model, "lean", True)
    lean = TranslationService(tiny_loaded, tiny_config)
    lean.translate(SENTENCES[1])
    # the batches under way at once share the budget: a lean bundle's decoder runs one
    assert service.decoder.workers == tiny_loaded.streams and lean.decoder.workers == 1
    assert small == {KV_CACHE_BUDGET_BYTES // service.decoder.workers}
    assert set(budgets) == {LARGE_MODEL_KV_CACHE_BUDGET_BYTES}
