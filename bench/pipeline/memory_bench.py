"""What the sentence translation memory saves: ``python -m bench.pipeline.memory_bench JOB.json`` (``make bench``).

One fresh process loads the bundle once and builds two services on it: one with the memory
(``TRANSLATE_MEMORY_BYTES``' default) and one without (``memory_bytes=0``), so every figure below compares the same
model, threads and text. Three situations, each timed with ``time.perf_counter`` and repeated ``repeats`` times
(medians), the memory emptied before each repeat:

* **as you type**: a text of about 2,000 characters of dev-set news sentences is translated (the first request),
  then the same text with its last sentence edited (the page re-sends the whole text after every pause). Reported:
  the second request's latency, as a ratio of translating the edited sentence alone (goal <= 1.3) and of the
  first request. Each repeat edits a different sentence, so the edited one is never in memory.
* **subtitles**: a subtitle-like file of short dialogue lines with the natural repeats of subtitles (a few dozen
  stock lines such as 好的。 and 谢谢。 among dev-set dialogue), translated as the page and the drop-in clients do,
  in requests of ``lines_per_request`` lines: characters/s with and without the memory. (Within one request the
  service translates a repeated segment once either way; the memory saves the repeats across requests.)
* **a bulk part redelivered**: a part of about ``part_chars`` characters translated, then delivered again (a retry
  after a fault, a duplicate event): the redelivery's time as a share of the first.

Prints one JSON line of figures; ``bench.pipeline.runtime_bench`` turns it into the section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

STOCK_LINES = (
    "好的。",
    "谢谢。",
    "对不起。",
    "是的。",
    "不是。",
    "我知道。",
    "走吧。",
    "什么？",
    "没关系。",
    "你好。",
    "再见。",
    "为什么？",
    "真的吗？",
    "我不知道。",
    "快点。",
    "等一下。",
    "没事。",
    "当然。",
    "你在干什么？",
    "我们走吧。",
    "别担心。",
    "太好了。",
    "我爱你。",
    "救命！",
)
SEED = 20261201


def _dev_sentences(low: int, high: int, source: str | None = None) -> list[str]:
    from build import corpus

    return [
        pair.zh
        for pair in corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR)
        if low <= len(pair.zh) <= high and (source is None or pair.source == source)
    ]


def typing_text(sentences: list[str], characters: int) -> list[str]:
    """Sentences from ``sentences`` until they hold ``characters`` characters together."""
    chosen: list[str] = []
    for sentence in sentences:
        if sum(len(s) for s in chosen) >= characters:
            break
        chosen.append(sentence if sentence.endswith(("。", "？", "！")) else sentence + "。")
    return chosen


def subtitle_lines(count: int, stock_share: float) -> list[str]:
    """``count`` dialogue lines, about ``stock_share`` of them stock lines, the rest dev-set dialogue."""
    generator = random.Random(SEED)
    dialogue = _dev_sentences(2, 30, "xdailydialog") or _dev_sentences(2, 30)
    return [
        generator.choice(STOCK_LINES) if generator.random() < stock_share else generator.choice(dialogue)
        for _ in range(count)
    ]


def _timed(call: Any, *args: Any) -> float:
    began = time.perf_counter()
    call(*args)
    return time.perf_counter() - began


def measure(job: dict[str, Any]) -> dict[str, Any]:
    from handler.config import RuntimeConfig
    from handler.model.loader import load_model
    from handler.service import TranslationService

    config = RuntimeConfig(bundle_dir=Path(job["bundle_dir"]), threads=job["threads"], max_chars=10**6, max_texts=10**4)
    loaded = load_model(config)
    remembering = TranslationService(loaded, config)
    forgetting = TranslationService(loaded, config.with_overrides(memory_bytes=0))
    forgetting.translate("今天天气很好。")  # untimed: the first call's one-off costs

    # as you type
    news = _dev_sentences(30, 120)
    repeats = job["repeats"]
    first, second, alone = [], [], []
    for repeat in range(repeats):
        remembering.memory = type(remembering.memory)(config.memory_bytes)
        sentences = typing_text(news[repeat * 5 :], job["typing_chars"])
        text = "".join(sentences)
        edited_sentence = sentences[-1][:-1] + "，我们明天再谈。"
        edited = "".join(sentences[:-1]) + edited_sentence
        first.append(_timed(remembering.translate, text))
        second.append(_timed(remembering.translate, edited))
        alone.append(_timed(forgetting.translate, edited_sentence))
    typing = {
        "text_chars": len(text),
        "sentences": len(sentences),
        "first_s": statistics.median(first),
        "edited_s": statistics.median(second),
        "sentence_alone_s": statistics.median(alone),
    }
    typing["edited_over_alone"] = typing["edited_s"] / typing["sentence_alone_s"]
    typing["edited_over_first"] = typing["edited_s"] / typing["first_s"]

    # subtitles, in requests of a few lines
    lines = subtitle_lines(job["subtitle_lines"], job["stock_share"])
    per_request = job["lines_per_request"]
    requests = [lines[i : i + per_request] for i in range(0, len(lines), per_request)]
    characters = sum(len(line) for line in lines)

    def subtitles(service: TranslationService) -> float:
        return _timed(lambda: [service.translate_many(request) for request in requests])

    with_memory, without_memory = [], []
    for _ in range(repeats):
        remembering.memory = type(remembering.memory)(config.memory_bytes)
        with_memory.append(subtitles(remembering))
        without_memory.append(subtitles(forgetting))
    subtitle = {
        "lines": len(lines),
        "distinct_lines": len(set(lines)),
        "characters": characters,
        "lines_per_request": per_request,
        "with_memory_chars_per_s": characters / statistics.median(with_memory),
        "without_memory_chars_per_s": characters / statistics.median(without_memory),
    }
    subtitle["speedup"] = subtitle["with_memory_chars_per_s"] / subtitle["without_memory_chars_per_s"]

    # a bulk part delivered twice
    part = "\n".join(typing_text(news[200:], job["part_chars"]))
    delivered, redelivered = [], []
    for _ in range(repeats):
        remembering.memory = type(remembering.memory)(config.memory_bytes)
        delivered.append(_timed(remembering.translate_document, part))
        redelivered.append(_timed(remembering.translate_document, part))
    bulk = {
        "part_chars": len(part),
        "first_s": statistics.median(delivered),
        "redelivered_s": statistics.median(redelivered),
    }
    bulk["redelivered_over_first"] = bulk["redelivered_s"] / bulk["first_s"]
    return {
        "typing": typing,
        "subtitles": subtitle,
        "bulk": bulk,
        "repeats": repeats,
        "memory_bytes": config.memory_bytes,
        "memory_after": remembering.memory.stats(),
    }


def lines(figures: dict[str, Any], title: str) -> list[str]:
    """The Markdown section of ``docs/benchmarks.md``."""
    t, s, b = figures["typing"], figures["subtitles"], figures["bulk"]
    return [
        f"## The sentence translation memory ({title})",
        "",
        "One process, one loaded bundle, two services on it: with the memory (TRANSLATE_MEMORY_BYTES, "
        f"{figures['memory_bytes'] / 2**20:.0f} MiB) and without; medians of {figures['repeats']} repeats, the "
        "memory emptied before each (`bench.pipeline.memory_bench`).",
        "",
        "| situation | without memory | with memory | ratio |",
        "|---|---:|---:|---:|",
        f"| as you type: a {t['text_chars']:,}-character text ({t['sentences']} sentences), then its last sentence "
        f"edited | first request {t['first_s'] * 1000:,.0f} ms; the edited sentence alone "
        f"{t['sentence_alone_s'] * 1000:,.0f} ms | second request {t['edited_s'] * 1000:,.0f} ms | "
        f"{t['edited_over_alone']:.2f}x the sentence alone (goal <= 1.3), {t['edited_over_first']:.3f}x the first |",
        f"| subtitles: {s['lines']} lines ({s['distinct_lines']} distinct), {s['lines_per_request']} per request | "
        f"{s['without_memory_chars_per_s']:,.0f} chars/s | {s['with_memory_chars_per_s']:,.0f} chars/s | "
        f"{s['speedup']:.2f}x |",
        f"| a bulk part of {b['part_chars']:,} characters delivered again | {b['first_s']:,.2f} s the first time | "
        f"{b['redelivered_s'] * 1000:,.1f} ms the second | {b['redelivered_over_first']:.4f}x |",
        "",
    ]


if __name__ == "__main__":
    from bench.pipeline.side_by_side import serve_job

    sys.exit(serve_job(measure, sys.argv[1:]))
