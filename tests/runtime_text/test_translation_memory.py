"""The sentence translation memory: bounded, thread-safe, exact (a dev-set run with it equals one without it, byte
for byte, with the glossary and format varied), and visible in /healthz and the access log."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest

from build import corpus
from handler.api.messages import HttpRequest
from handler.api.router import HttpApi
from handler.coldstart import Startup
from handler.config import RuntimeConfig
from handler.errors import ConfigurationError
from handler.model.decoding import Hypothesis
from handler.service import TranslateOptions, TranslationService
from handler.text.glossary import Glossary
from handler.translation_memory import (
    ENTRY_OVERHEAD_BYTES,
    MemoryKey,
    Remembered,
    TranslationMemory,
    entry_bytes,
)
from tests.fuzz.shipped import needs_shipped_bundle, shipped_config, shipped_model

DEV_SENTENCES = 120  # enough to hold repeats of every kind; the whole dev set is what make bench's figures use


def key(text: str, beam_size: int = 4) -> MemoryKey:
    return MemoryKey("hash", beam_size, None, 2.0, True, text)


def entry(english: str, tokens: int = 3) -> Remembered:
    return Remembered(english, Hypothesis(list(range(tokens)), -1.0, tokens + 1), tokens)


# --- the memory alone ---------------------------------------------------------------------------------------


def test_least_recently_used_entries_go_first_once_the_bound_is_passed() -> None:
    size = entry_bytes(key("句0"), entry("a"))  # every key below is as long
    memory = TranslationMemory(10 * size)  # room for ten such entries
    for number in range(10):
        assert memory.put(key(f"句{number}"), entry("a"))
    assert memory.get(key("句0")) is not None  # "句0" is now the most recently used
    assert memory.put(key("句X"), entry("a"))  # the eleventh: the least recently used ("句1") leaves
    assert memory.get(key("句1")) is None and memory.get(key("句0")) is not None
    stats = memory.stats()
    assert stats["entries"] == 10 and stats["bytes"] == 10 * size <= stats["max_bytes"]
    assert stats["evictions"] == 1 and stats["hits"] == 2 and stats["misses"] == 1


def test_filling_far_past_the_bound_keeps_it() -> None:
    memory = TranslationMemory(64 * 1024)
    for number in range(5_000):
        memory.put(key(f"句子{number}"), entry(f"sentence {number}", tokens=number % 40))
        assert memory.stats()["bytes"] <= 64 * 1024
    assert 0 < len(memory) < 5_000 and memory.stats()["evictions"] == 5_000 - len(memory)


def test_an_entry_charged_its_text_ids_and_overhead() -> None:
    assert entry_bytes(key("你好"), entry("hello", tokens=5)) == ENTRY_OVERHEAD_BYTES + 6 + 5 + 8 * 5


def test_an_entry_over_an_eighth_of_the_bound_is_not_kept_and_evicts_nothing() -> None:
    memory = TranslationMemory(8 * 1024)
    memory.put(key("小"), entry("small"))
    assert not memory.put(key("大" * 400), entry("big"))  # 1,200 bytes of Chinese + overhead > 1,024
    assert memory.get(key("小")) is not None and len(memory) == 1


def test_replacing_an_entry_charges_it_once() -> None:
    memory = TranslationMemory(1024 * 1024)
    memory.put(key("同"), entry("same"))
    memory.put(key("同"), entry("same again"))
    assert len(memory) == 1 and memory.stats()["bytes"] == entry_bytes(key("同"), entry("same again"))
    assert memory.get(key("同")) == entry("same again")


def test_a_zero_bound_turns_it_off() -> None:
    memory = TranslationMemory(0)
    assert not memory.enabled and not memory.put(key("你"), entry("you"))
    assert memory.get(key("你")) is None and memory.stats()["misses"] == 0
    with pytest.raises(ValueError, match="at least 0"):
        TranslationMemory(-1)


def test_the_key_holds_every_decoding_option() -> None:
    memory = TranslationMemory(1024 * 1024)
    memory.put(key("你好", beam_size=4), entry("hello"))
    assert memory.get(key("你好", beam_size=1)) is None
    assert memory.get(MemoryKey("other-bundle", 4, None, 2.0, True, "你好")) is None
    assert memory.get(MemoryKey("hash", 4, 1.0, 2.0, True, "你好")) is None
    assert memory.get(MemoryKey("hash", 4, None, 3.0, True, "你好")) is None
    assert memory.get(MemoryKey("hash", 4, None, 2.0, False, "你好")) is None
    assert memory.get(key("你好", beam_size=4)) == entry("hello")


def test_concurrent_use_keeps_the_books_straight() -> None:
    memory = TranslationMemory(256 * 1024)
    failures: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for number in range(2_000):
                memory.put(key(f"{worker}-{number % 300}"), entry("x", tokens=number % 7))
                memory.get(key(f"{(worker + 1) % 4}-{number % 300}"))
        except BaseException as error:  # pragma: no cover - reported below
            failures.append(error)

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    stats = memory.stats()
    assert stats["hits"] + stats["misses"] == 8_000
    assert stats["bytes"] == sum(entry_bytes(k, e) for k, (e, _) in memory._entries.items())  # noqa: SLF001


def test_the_bound_is_a_setting() -> None:
    assert RuntimeConfig().memory_bytes == 16 * 1024 * 1024
    assert RuntimeConfig.from_env({"TRANSLATE_MEMORY_BYTES": "0"}).memory_bytes == 0
    with pytest.raises(ConfigurationError, match="TRANSLATE_MEMORY_BYTES"):
        RuntimeConfig.from_env({"TRANSLATE_MEMORY_BYTES": "-5"})


# --- in the service, on the shipped model ---------------------------------------------------------------------


def service(memory_bytes: int = 16 * 1024 * 1024) -> TranslationService:
    config = shipped_config(max_texts=64, max_chars=10**6, memory_bytes=memory_bytes)
    return TranslationService(shipped_model(), config)


class CountingDecoding:
    """The bundle's decoding protocol, counting the rows it decodes."""

    def __init__(self, decoding: Any) -> None:
        self._decoding = decoding
        self.rows = 0

    def search(self, model: Any, input_ids: Any, *args: Any, **kwargs: Any) -> Any:
        self.rows += len(input_ids)
        return self._decoding.search(model, input_ids, *args, **kwargs)


def dev_texts() -> list[str]:
    texts = [pair.zh for pair in corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR)[:DEV_SENTENCES]]
    # the dev set, then again in another order and in pairs: other batch companions, every segment remembered
    return texts + texts[::-1] + ["".join(texts[i : i + 2]) for i in range(0, len(texts), 2)]


OPTION_SETS = [
    TranslateOptions(),
    TranslateOptions(beam_size=1),
    TranslateOptions(glossary=Glossary.from_mapping({"发展": "growth", "联合国": "the UN"})),
    TranslateOptions(format="html"),
    TranslateOptions(protect_spans=False, repetition_guard=False),
]


@needs_shipped_bundle
def test_the_memory_changes_no_byte_of_a_dev_set_translation() -> None:
    # one warm service with a memory serves every option set in turn (so an option missing from the key would
    # hand one set's translations to another); a service without memory translates each afresh
    with_memory = service()
    for options in OPTION_SETS:
        texts = dev_texts()
        if options.format == "html":
            texts = [f"<p>{text}</p><p><b>{text[:4]}</b></p>" for text in texts]
        without = service(memory_bytes=0)
        expected = [without.translate_many(texts[i : i + 64], options) for i in range(0, len(texts), 64)]
        found = [with_memory.translate_many(texts[i : i + 64], options) for i in range(0, len(texts), 64)]
        assert found == expected, options
    stats = with_memory.memory.stats()
    assert stats["hits"] > stats["misses"] > 0


@needs_shipped_bundle
def test_scores_from_memory_equal_the_decoded_ones() -> None:
    texts = dev_texts()[:40]
    fresh = service(memory_bytes=0).translate_detailed(texts, TranslateOptions(scores=True))
    remembering = service()
    remembering.translate_many(texts)
    again = remembering.translate_detailed(texts, TranslateOptions(scores=True))
    assert [d.segments for d in again] == [d.segments for d in fresh]


@needs_shipped_bundle
def test_only_what_changed_reaches_the_model() -> None:
    # GIVEN a text typed so far, translated once
    remembering = service()
    counting = CountingDecoding(remembering.model.decoding)
    remembering.model = type(remembering.model)(**{**vars(remembering.model), "decoding": counting})
    text = "今天天气很好。我们去公园散步吧。他们正在讨论明年的计划。"
    remembering.translate(text)
    decoded = counting.rows
    assert decoded == 3
    # WHEN the same text comes again with one sentence edited at the end
    edited = text[:-1] + "和预算。"
    remembering.translate(edited)
    # THEN only the edited sentence was decoded
    assert counting.rows == decoded + 1


@needs_shipped_bundle
def test_healthz_reports_the_memory_and_the_access_log_counts_segments(caplog: pytest.LogCaptureFixture) -> None:
    settings = shipped_config(memory_bytes=1024 * 1024)
    api = HttpApi(Startup(settings, TranslationService(shipped_model(), settings), None, 0.0))
    body = json.dumps({"texts": ["今天天气很好。", "谢谢。"]}).encode()
    headers = {"Content-Type": "application/json"}
    with caplog.at_level(logging.INFO, logger="handler.access"):
        api.handle(HttpRequest.create("POST", "/translate", headers, body))
        api.handle(HttpRequest.create("POST", "/translate", headers, body))
        api.handle(HttpRequest.create("GET", "/healthz", {}, b""))
    lines = [record for record in caplog.records if record.name == "handler.access"]
    first, second, health = (vars(record) for record in lines)
    assert (first["segments_from_memory"], first["segments_decoded"]) == (0, 2)
    assert (second["segments_from_memory"], second["segments_decoded"]) == (2, 0)
    assert "segments_decoded" not in health  # no translation: no counts
    assert "今天" not in json.dumps({k: str(v) for k, v in first.items()})  # never the text
    report = json.loads(api.handle(HttpRequest.create("GET", "/healthz", {}, b"")).body)
    memory = report["translation_memory"]
    assert (memory["hits"], memory["misses"], memory["entries"]) == (2, 2, 2)
    assert 0 < memory["bytes"] <= memory["max_bytes"] == 1024 * 1024
