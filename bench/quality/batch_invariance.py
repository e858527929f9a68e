"""Batch invariance on a dev set: does any sentence translate differently alone and in a batch? (a script)

    python -m bench.quality.batch_invariance [--bundle model_artifacts/default] [--batch 16] [--pairs N]

Translates every dev sentence (``build.corpus.dev_pairs``: the repository's set, or ``TRANSLATE_CORPUS_DIR``'s)
through the real service once alone and once in consecutive batches of ``--batch``, and prints how many differ,
with the first few, and the time each way. Exits 1 when any sentence differs.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from build import corpus
from handler.config import DEFAULT_BUNDLE_DIR, RuntimeConfig
from handler.model.loader import load_model
from handler.service import TranslationService


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.quality.batch_invariance", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--bundle", type=Path, default=DEFAULT_BUNDLE_DIR)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--pairs", type=int, default=0, help="only the first N dev sentences (default: all)")
    args = parser.parse_args(argv)
    pairs = corpus.dev_pairs()
    chinese = [pair.zh for pair in (pairs[: args.pairs] if args.pairs else pairs)]
    config = RuntimeConfig(bundle_dir=args.bundle)
    service = TranslationService(load_model(config), config)
    started = time.perf_counter()
    alone = [service.translate(text) for text in chinese]
    alone_s = time.perf_counter() - started
    started = time.perf_counter()
    together: list[str] = []
    for start in range(0, len(chinese), args.batch):
        together += service.translate_many(chinese[start : start + args.batch])
    together_s = time.perf_counter() - started
    differ = [index for index, (one, other) in enumerate(zip(alone, together, strict=True)) if one != other]
    print(
        f"{args.bundle} on {corpus.describe_dev_set(pairs)}: {len(differ)} of {len(chinese)} sentences translate "
        f"differently alone and in batches of {args.batch} (alone {alone_s:.1f} s, batched {together_s:.1f} s)"
    )
    for index in differ[:10]:
        print(f"  {chinese[index]!r}\n    alone:   {alone[index]!r}\n    batched: {together[index]!r}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
