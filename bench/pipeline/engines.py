"""One engine measured in one fresh process: ``python -m bench.pipeline.engines JOB.json`` prints one JSON line of
figures.

The parent (``bench.pipeline.side_by_side``) writes the job: the engine (``runtime``, ``ctranslate2`` or
``transformers``), its model folder, the thread count, one sentence for the cold start, and the token ids every
engine decodes (the same ids for all of them, made by this runtime's tokenizer of the bundle), plus
``BENCH_SPAWNED_AT``, the parent's ``time.time()`` just before it started this process. The process then measures,
in this order:

* ``cold_start_s``: process start -> the first translation done (import the engine, load the model, translate
  the cold-start sentence from text to text with the engine's own tokenizer, beam 4, ``forced_tokens`` tokens);
* ``rss_after_load_mb``: ``VmRSS`` of this process right after that first translation;
* ``b1_greedy_ms`` / ``b1_beam4_ms``: the median latency of one sentence (each of the batch-1 sentences,
  ``repeats`` times, after one untimed call), greedy and beam 4;
* ``batch_greedy_tok_s`` / ``batch_beam4_tok_s``: output tokens/s of the batch (16 sentences; fewer in quick
  mode), the median of ``repeats`` calls after one untimed call;
* ``peak_rss_mb``: ``VmHWM`` of this process at the end (its own high-water mark, ``bench/pipeline/memory.py``).

A job with ``"floor": true`` measures the engine's floor instead (``bench.pipeline.floor``): the process imports the
libraries the engine cannot translate without (``FLOOR_LIBRARIES``), and no model, then prints ``import_s`` (process
start -> imported, as the cold start counts it) and ``rss_mb`` (``VmRSS`` then).

Every output has exactly ``forced_tokens`` tokens, checked after every call: the end of sentence is banned before
that many tokens and the length is capped there (this runtime: ``min_new_tokens`` = ``max_new_tokens`` =
tokens + 1, the last one the forced ``</s>``, which costs no decoder step; CSANMT's search: both = tokens;
CTranslate2: ``min_decoding_length`` =
``max_decoding_length``; transformers: ``min_new_tokens`` = ``max_new_tokens``). So every engine runs
``forced_tokens`` decoder steps per hypothesis. No repetition guard or penalty anywhere: the same search.

Only the standard library is imported at module level, so that the cold start counts each engine's own imports.
"""

from __future__ import annotations

import importlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.pipeline.memory import current_rss_mb, peak_rss_mb

SPAWNED_AT = "BENCH_SPAWNED_AT"
# this runtime: onnxruntime (which imports numpy: sessions take and return numpy arrays) and a Marian bundle's
# tokenizer; CTranslate2: what its process below imports
FLOOR_LIBRARIES = {"runtime": ("onnxruntime", "sentencepiece"), "ctranslate2": ("ctranslate2", "sentencepiece")}
FIGURES = (
    "cold_start_s",
    "rss_after_load_mb",
    "b1_greedy_ms",
    "b1_beam4_ms",
    "batch_greedy_tok_s",
    "batch_beam4_tok_s",
    "peak_rss_mb",
)

# decode(batch of token-id lists, beam size) -> output token-id lists; translate(text) -> text
Decode = Callable[[Sequence[Sequence[int]], int], list[list[int]]]


class WrongLength(RuntimeError):
    """An engine returned an output of another length than the forced one: its figures would not compare."""


def _checked(outputs: list[list[int]], rows: int, tokens: int, engine: str) -> list[list[int]]:
    lengths = sorted({len(output) for output in outputs})
    if len(outputs) != rows or lengths != [tokens]:
        raise WrongLength(f"{engine} returned {len(outputs)} outputs of lengths {lengths}; expected {rows} x {tokens}")
    return outputs


# --- the three engines: load -> (translate one text, decode ids) ---------------------------------------------


def _runtime(job: dict[str, Any]) -> tuple[Callable[[str], str], Decode]:
    from handler import coldstart
    from handler.config import RuntimeConfig
    from handler.model import memory
    from handler.model.families.base import SearchRequest

    service = coldstart.get_service(RuntimeConfig(bundle_dir=Path(job["model_dir"]), threads=job["threads"]))
    loaded = service.model
    # Marian: the tokens, then the forced </s> (no decoder step); CSANMT's search counts the tokens it produces
    extra = 0 if loaded.manifest.family == "csanmt" else 1
    steps = job["forced_tokens"] + extra

    def decode(batch: Sequence[Sequence[int]], beam_size: int) -> list[list[int]]:
        request = SearchRequest(beam_size=beam_size, max_new_tokens=steps, repetition_guard=False, min_new_tokens=steps)
        return [hypothesis.ids for hypothesis in loaded.search(batch, request)]

    def translate(text: str) -> str:
        ids = loaded.tokenizer.encode_batch([text])
        output = _checked(decode(ids, job["beam_size"]), 1, job["forced_tokens"], "runtime")
        english = loaded.tokenizer.decode(output[0])
        memory.release_free_heap()  # as the service does at the end of every request (handler.model.memory)
        return english

    # the cold start by parts, as the loader timed them (the sha256 check, the tokenizer and the sessions overlap)
    report = coldstart.cold_start_report()
    PARTS.update({"import_s": report["import_s"], **loaded.timings})
    return translate, decode


PARTS: dict[str, Any] = {}  # the runtime's cold start by parts (``_runtime``); other engines have none


def _ctranslate2(job: dict[str, Any]) -> tuple[Callable[[str], str], Decode]:
    import ctranslate2
    import sentencepiece

    folder = Path(job["model_dir"])
    translator = ctranslate2.Translator(
        str(folder), device="cpu", compute_type="int8", intra_threads=job["threads"], inter_threads=1
    )
    vocabulary: list[str] = json.loads((folder / "shared_vocabulary.json").read_text(encoding="utf-8"))
    index = {token: position for position, token in enumerate(vocabulary)}
    source = sentencepiece.SentencePieceProcessor(model_file=str(folder / "source.spm"))
    joint = not (folder / "target.spm").is_file()  # one file for both sides (bench.pipeline.ctranslate2_model)
    target = source if joint else sentencepiece.SentencePieceProcessor(model_file=str(folder / "target.spm"))
    tokens = job["forced_tokens"]

    def run(batch: list[list[str]], beam_size: int) -> list[list[str]]:
        results = translator.translate_batch(
            batch, beam_size=beam_size, max_decoding_length=tokens, min_decoding_length=tokens, num_hypotheses=1
        )
        return [result.hypotheses[0] for result in results]

    def decode(batch: Sequence[Sequence[int]], beam_size: int) -> list[list[int]]:
        pieces = [[vocabulary[token] for token in row] for row in batch]
        return [[index[piece] for piece in output] for output in run(pieces, beam_size)]

    def translate(text: str) -> str:
        pieces = source.encode(text, out_type=str) + ["</s>"]
        output = run([pieces], job["beam_size"])[0]
        if len(output) != tokens:
            raise WrongLength(f"ctranslate2 returned {len(output)} tokens; expected {tokens}")
        return str(target.decode_pieces(output))

    return translate, decode


def _transformers(job: dict[str, Any]) -> tuple[Callable[[str], str], Decode]:
    import torch
    from transformers import MarianMTModel, MarianTokenizer

    torch.set_num_threads(job["threads"])
    torch.set_num_interop_threads(1)
    folder = str(job["model_dir"])
    model = MarianMTModel.from_pretrained(folder).eval()
    tokenizer = MarianTokenizer.from_pretrained(folder)
    pad_id = model.config.pad_token_id
    tokens = job["forced_tokens"]
    settings = {"do_sample": False, "max_new_tokens": tokens, "min_new_tokens": tokens, "forced_eos_token_id": None}

    def generate(inputs: dict[str, Any], beam_size: int) -> list[list[int]]:
        with torch.inference_mode():
            output = model.generate(**inputs, num_beams=beam_size, num_return_sequences=1, **settings)
        return [row[1:] for row in output.tolist()]  # without the decoder start token

    def decode(batch: Sequence[Sequence[int]], beam_size: int) -> list[list[int]]:
        width = max(len(row) for row in batch)
        ids = torch.tensor([list(row) + [pad_id] * (width - len(row)) for row in batch], dtype=torch.long)
        mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in batch], dtype=torch.long)
        return generate({"input_ids": ids, "attention_mask": mask}, beam_size)

    def translate(text: str) -> str:
        output = generate(dict(tokenizer([text], return_tensors="pt")), job["beam_size"])
        output = _checked(output, 1, tokens, "transformers")
        return str(tokenizer.decode(output[0], skip_special_tokens=True))

    return translate, decode


LOADERS = {"runtime": _runtime, "ctranslate2": _ctranslate2, "transformers": _transformers}


# --- the measurement ------------------------------------------------------------------------------------------


def _median_seconds(call: Callable[[], object], times: int) -> float:
    call()  # untimed: first calls of a shape allocate
    seconds = []
    for _ in range(times):
        began = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - began)
    return statistics.median(seconds)


def measure(job: dict[str, Any], spawned_at: float) -> dict[str, Any]:
    engine = job["engine"]
    translate, decode = LOADERS[engine](job)
    first = translate(job["cold_text"])
    cold_start = time.time() - spawned_at
    rss_after_load = current_rss_mb()
    tokens, beam, repeats = job["forced_tokens"], job["beam_size"], job["repeats"]

    def run(batch: Sequence[Sequence[int]], beam_size: int) -> None:
        _checked(decode(batch, beam_size), len(batch), tokens, engine)

    singles: list[Sequence[Sequence[int]]] = [[ids] for ids in job["batch1"]]

    def latency(beam_size: int) -> float:
        run(singles[0], beam_size)  # untimed
        seconds = []
        for _ in range(repeats):
            for single in singles:
                began = time.perf_counter()
                run(single, beam_size)
                seconds.append(time.perf_counter() - began)
        return 1000 * statistics.median(seconds)

    big = job["batch"]
    figures: dict[str, Any] = {
        "cold_start_s": cold_start,
        "rss_after_load_mb": rss_after_load,
        "b1_greedy_ms": latency(1),
        "b1_beam4_ms": latency(beam),
        "batch_greedy_tok_s": len(big) * tokens / _median_seconds(lambda: run(big, 1), repeats),
        "batch_beam4_tok_s": len(big) * tokens / _median_seconds(lambda: run(big, beam), repeats),
    }
    figures["peak_rss_mb"] = peak_rss_mb()
    figures["first_translation"] = first[:80]
    figures.update({f"cold_start_part_{name}": value for name, value in PARTS.items()})
    return figures


def measure_floor(job: dict[str, Any], spawned_at: float) -> dict[str, Any]:
    """The engine's libraries imported, nothing else: the seconds since the process started and the RSS then."""
    libraries = FLOOR_LIBRARIES[job["engine"]]
    for library in libraries:
        importlib.import_module(library)
    return {"import_s": time.time() - spawned_at, "rss_mb": current_rss_mb(), "libraries": list(libraries)}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        usage = "usage: python -m bench.pipeline.engines JOB.json (written by bench.pipeline.side_by_side)"
        print(usage, file=sys.stderr)
        return 2
    spawned_at = float(os.environ.get(SPAWNED_AT, "nan"))
    job = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    known = FLOOR_LIBRARIES if job.get("floor") else LOADERS
    if job["engine"] not in known:
        print(f"unknown engine {job['engine']!r}; one of {', '.join(known)}", file=sys.stderr)
        return 2
    if spawned_at != spawned_at:
        print(
            f"{SPAWNED_AT} is not set: the parent sets it to time.time() before starting this process", file=sys.stderr
        )
        return 2
    print(json.dumps(measure_floor(job, spawned_at) if job.get("floor") else measure(job, spawned_at)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
