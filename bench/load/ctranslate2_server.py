"""CTranslate2 serving a bundle's model the way LibreTranslate serves its models: the serving benchmark's third server.

    python -m handler.adapters.gunicorn_server --source bench/load/ctranslate2_server.py --target serve

(``bench.load.serving`` starts it so, behind the same functions-framework gunicorn server, keep-alive, workers and
threads as ``make run``'s.) It answers ``POST /translate`` ``{"text": ...}`` with ``{"translation": ...}`` and
``GET /healthz`` with its settings once its model is loaded; anything else is 404/405.

One ``ctranslate2.Translator`` per worker process, loaded on the worker's first request (``GET /healthz``, which
the benchmark sends before it measures): CTranslate2's thread pools would not survive gunicorn's fork, so nothing
is loaded in the arbiter. Each request is one ``translate_batch`` call from the gunicorn thread that received it,
as LibreTranslate (argos-translate) calls it: the request's sentences in one call, ``max_batch_size`` 32, no
batching across requests. CTranslate2's documentation for concurrent callers (docs/parallel.md, docs/performance.md:
parallel execution needs batches submitted from several Python threads, which release the GIL; prefer raising
``inter_threads`` over ``intra_threads``, and keep ``inter_threads * intra_threads`` within the physical cores)
gives ``inter_threads`` = the CPUs this process may use, ``intra_threads`` = 1 (``BENCH_CT2_INTER_THREADS`` and
``BENCH_CT2_INTRA_THREADS`` set others).

What the model needs around it is this runtime's, so that both servers translate the same segments: the bundle's
input normalisation (its manifest: NFKC for the default), the request cut into sentence-sized segments by
``handler.text.segmentation.split_document`` with the runtime's budget (half the model's positions), SentencePiece
pieces plus ``</s>`` in, the target SentencePiece model's text out (``▁`` as spaces), joined back by
``Document.join``. The search: beam 4 (``BENCH_CT2_BEAM_SIZE``), length penalty 1 (the runtime's Marian default),
``<pad>`` never emitted (the decoder starts from its trained row), at most 2 x the longest segment's tokens + 10
output tokens (the runtime's cap, per row there; one figure per call here). Not reproduced: the runtime's repetition
guard, span protection, markup, glossaries and translation memory. Requests over ``BENCH_CT2_MAX_CHARS`` (20,000,
the runtime's default limit) are 413.
"""

from __future__ import annotations

import json
import os
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_MODEL_DIR = "BENCH_CT2_MODEL_DIR"  # the converted model (bench.pipeline.ctranslate2_model)
ENV_BUNDLE_DIR = "BENCH_CT2_BUNDLE_DIR"  # the runtime's bundle of the same model: its manifest's normalisation
ENV_INTER_THREADS = "BENCH_CT2_INTER_THREADS"
ENV_INTRA_THREADS = "BENCH_CT2_INTRA_THREADS"
ENV_BEAM_SIZE = "BENCH_CT2_BEAM_SIZE"
ENV_MAX_CHARS = "BENCH_CT2_MAX_CHARS"
MAX_BATCH_SIZE = 32  # argos-translate's translate_batch(max_batch_size=32)
LENGTH_RATIO, EXTRA_TOKENS = 2.0, 10  # the runtime's default output cap: ratio x source tokens + 10
END, PAD = "</s>", "<pad>"
SPIECE_UNDERLINE = "\u2581"


def available_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@dataclass(frozen=True)
class Settings:
    model_dir: Path
    bundle_dir: Path
    inter_threads: int
    intra_threads: int
    beam_size: int
    max_chars: int

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)
        return cls(
            model_dir=Path(env[ENV_MODEL_DIR]),
            bundle_dir=Path(env[ENV_BUNDLE_DIR]),
            inter_threads=int(env.get(ENV_INTER_THREADS) or available_cpus()),
            intra_threads=int(env.get(ENV_INTRA_THREADS) or 1),
            beam_size=int(env.get(ENV_BEAM_SIZE) or 4),
            max_chars=int(env.get(ENV_MAX_CHARS) or 20_000),
        )


class Engine:
    """The translator, its SentencePiece models and the runtime's segmentation around them."""

    def __init__(self, settings: Settings) -> None:
        import ctranslate2
        import sentencepiece

        self.settings = settings
        self.version = str(ctranslate2.__version__)
        manifest = json.loads((settings.bundle_dir / "manifest.json").read_text(encoding="utf-8"))
        self.nfkc = manifest.get("normalization") == "nfkc"
        self.max_positions = int(manifest["model"]["max_positions"])
        self.translator = ctranslate2.Translator(
            str(settings.model_dir),
            device="cpu",
            compute_type="int8",
            inter_threads=settings.inter_threads,
            intra_threads=settings.intra_threads,
        )
        folder = settings.model_dir
        vocabulary = json.loads((folder / "shared_vocabulary.json").read_text(encoding="utf-8"))
        # a decoder started from the trained <pad> row must never emit it (bench.pipeline.ctranslate2_model)
        self.suppress = [[PAD]] if PAD in vocabulary else None
        self.source = sentencepiece.SentencePieceProcessor(model_file=str(folder / "source.spm"))
        target = folder / "target.spm"  # absent for a joint vocabulary (bench.pipeline.ctranslate2_model)
        self.target = sentencepiece.SentencePieceProcessor(model_file=str(target)) if target.is_file() else self.source

    def pieces(self, text: str) -> list[str]:
        normalized = unicodedata.normalize("NFKC", text) if self.nfkc else text
        return [*self.source.encode(normalized, out_type=str), END]

    def translate(self, text: str) -> str:
        from handler.text.segmentation import split_document

        budget = max(8, self.max_positions // 2)  # the runtime's TranslationService.max_source_tokens
        document = split_document(text, lambda segment: len(self.pieces(segment)), budget)
        batch = [self.pieces(segment) for segment in document.texts]
        if not batch:
            return document.join([])
        longest = max(len(pieces) for pieces in batch)
        results = self.translator.translate_batch(
            batch,
            beam_size=self.settings.beam_size,
            max_batch_size=MAX_BATCH_SIZE,
            max_decoding_length=max(1, min(int(LENGTH_RATIO * longest) + EXTRA_TOKENS, self.max_positions - 1)),
            num_hypotheses=1,
            suppress_sequences=self.suppress,
        )
        english = [self.decode(result.hypotheses[0]) for result in results]
        return document.join(english)

    def decode(self, pieces: list[str]) -> str:
        if not pieces:
            return ""
        return str(self.target.decode_pieces(pieces)).replace(SPIECE_UNDERLINE, " ").strip()


_ENGINE: Engine | None = None
_LOADING = threading.Lock()


def engine(load: Callable[[], Engine] = lambda: Engine(Settings.from_env())) -> Engine:
    """This worker's engine, loaded by the first request that needs it (never in gunicorn's arbiter)."""
    global _ENGINE
    with _LOADING:
        if _ENGINE is None:
            _ENGINE = load()
        return _ENGINE


def answer(method: str, path: str, body: Any, translate: Callable[[str], str], max_chars: int) -> tuple[Any, int]:
    """(JSON answer, status) of one request; the routing, apart from functions-framework so that it can be tested."""
    route = path.rstrip("/") or "/"
    if route not in ("/translate", "/healthz"):
        return {"error": {"code": "not_found"}}, 404
    if route == "/healthz":
        return (None, 200) if method == "GET" else ({"error": {"code": "method_not_allowed"}}, 405)
    if method != "POST":
        return {"error": {"code": "method_not_allowed"}}, 405
    text = body.get("text") if isinstance(body, dict) else None
    if not isinstance(text, str) or not text.strip():
        return {"error": {"code": "invalid_request", "message": "give text, a non-empty string"}}, 400
    if len(text) > max_chars:
        return {"error": {"code": "request_too_large", "message": f"more than {max_chars:,} characters"}}, 413
    return {"translation": translate(text)}, 200


def serve(request: Any) -> tuple[str, int, dict[str, str]]:
    """functions-framework's entry point (an HTTP function: a Flask request in, a response out)."""
    loaded = engine()
    body = request.get_json(silent=True) if request.method == "POST" else None
    result, status = answer(request.method, request.path, body, loaded.translate, loaded.settings.max_chars)
    if result is None:  # GET /healthz
        settings = loaded.settings
        result = {
            "warm": True,
            "engine": "ctranslate2",
            "ctranslate2": loaded.version,
            "model_dir": str(settings.model_dir),
            "inter_threads": settings.inter_threads,
            "intra_threads": settings.intra_threads,
            "beam_size": settings.beam_size,
            "limits": {"max_chars": settings.max_chars, "default_beam_size": settings.beam_size},
        }
    return json.dumps(result, ensure_ascii=False), status, {"Content-Type": "application/json"}
