"""The test suite's own zh–en sentences: ``tests/fixtures/pairs.zh-en.tsv``.

500 pairs of the repository's licence-clean dev set (every third pair: UN v1.0 dev/test, TICO-19 and
XDailyDialog; licences in ``data/corpus/SOURCES.md``). The tiny test models' tokenizers are trained on them and
the tokenizer and segmentation tests read them, so no test depends on where the full corpus lives.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from build.corpus import Pair, read_pairs

FIXTURE_PAIRS_FILE = Path(__file__).resolve().parent / "fixtures" / "pairs.zh-en.tsv"


@cache
def fixture_pairs() -> tuple[Pair, ...]:
    return tuple(read_pairs(FIXTURE_PAIRS_FILE))
