"""Characters per second of a realistic workload through the service: ``python -m bench.pipeline.workload JOB.json``.

One fresh process loads the bundle as a cold start does (``handler.coldstart.get_service``), translates one
untimed request, then sends the job's news-length Chinese sentences (from the repository's dev set) in requests
of ``request_texts`` texts through ``TranslationService.translate_many`` with the service's default options
(beam 4, repetition guard, protected spans) and its own splitting and batching, and prints one JSON line:
source characters, seconds, characters/s, and this process's peak RSS (``VmHWM``).

A random model never chooses the end of sentence early, so on the random opus-mt-sized bundle every sentence
runs to the service's length limit (2 x source tokens + 10): more decoding per character than a trained model.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.pipeline.memory import peak_rss_mb

NEWS_LENGTH = (30, 120)  # characters of a news sentence


def news_sentences(count: int) -> list[str]:
    """The first ``count`` dev-set sentences of news length, in the dev set's order."""
    from build import corpus

    low, high = NEWS_LENGTH
    chosen = [pair.zh for pair in corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR) if low <= len(pair.zh) <= high]
    if len(chosen) < count:
        raise RuntimeError(f"the dev set has {len(chosen)} sentences of {low}-{high} characters; {count} are needed")
    return chosen[:count]


def measure(job: dict[str, Any]) -> dict[str, Any]:
    from handler import coldstart
    from handler.config import RuntimeConfig

    # without the translation memory: the untimed first request must not answer part of the timed ones, and this
    # measures decoding (what the memory saves is bench.pipeline.memory_bench's)
    config = RuntimeConfig(bundle_dir=Path(job["bundle_dir"]), threads=job["threads"], memory_bytes=0)
    service = coldstart.get_service(config)
    sentences: list[str] = job["sentences"]
    service.translate_many(sentences[:2])  # untimed
    size = job["request_texts"]
    began = time.perf_counter()
    for start in range(0, len(sentences), size):
        outputs = service.translate_many(sentences[start : start + size])
        if len(outputs) != len(sentences[start : start + size]) or not all(outputs):
            raise RuntimeError("the service returned an empty or missing translation")
    seconds = time.perf_counter() - began
    characters = sum(len(sentence) for sentence in sentences)
    return {
        "sentences": len(sentences),
        "characters": characters,
        "seconds": seconds,
        "chars_per_s": characters / seconds,
        "peak_rss_mb": peak_rss_mb(),
        "beam_size": service.config.beam_size,
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        usage = "usage: python -m bench.pipeline.workload JOB.json (written by bench.pipeline.runtime_bench)"
        print(usage, file=sys.stderr)
        return 2
    print(json.dumps(measure(json.loads(Path(args[0]).read_text(encoding="utf-8")))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
