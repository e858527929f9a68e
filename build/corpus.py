"""The shared zh–en corpus: which sources we may train on, and reading them.

Each line of ``../shared/corpus/*.tsv.gz`` is ``zh<TAB>en<TAB>source``. Only sources whose terms allow
redistributing a model trained on them are used (see ``SOURCES.md`` beside the corpus).
"""

from __future__ import annotations

import gzip
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CORPUS_DIR_ENV = "TRANSLATE_CORPUS_DIR"
TRAIN_FILE = "train.zh-en.tsv.gz"
DEV_FILE = "dev.zh-en.tsv.gz"


@dataclass(frozen=True)
class Source:
    name: str
    licence: str
    non_commercial: bool


# Sources whose licence allows redistributing a trained model. Everything else in the corpus is left out:
# tvsub (CC BY-NC-ND, research only), youdao_dict_examples (crawled, no licence), nyt_rss_mt (copyrighted
# news, machine-translated source side), and the sources whose licence is not stated (aic_valid,
# crashcourse_cs, coursera_ml_srt, 3b1b_reviewed, udacity_subs).
ALLOWED_SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        Source("tatoeba_cmn", "CC BY 2.0 FR (Tatoeba)", False),
        Source("tatoeba_test", "CC BY 2.0 FR (Tatoeba Challenge test set)", False),
        Source("tico19", "CC0 (TICO-19)", False),
        Source("un_dev_test", "UN Parallel Corpus v1.0 terms (free use with UN disclaimer)", False),
        Source("xdailydialog", "CC BY-NC-SA 4.0 (DailyDialog; XDailyDialog repo Apache-2.0)", True),
        Source("3am", "MIT (3AM repository)", False),
        Source("msctd", "MIT (MSCTD repository)", False),
        Source("bourshevik_subs", "CC BY-NC-SA 4.0", True),
        Source("python_docs", "PSF documentation licence (python-docs-zh-cn)", False),
    )
}


@dataclass(frozen=True)
class Pair:
    zh: str
    en: str
    source: str


def corpus_dir() -> Path:
    """The shared corpus folder: ``$TRANSLATE_CORPUS_DIR`` or ``../shared/corpus`` beside the checkout."""
    configured = os.environ.get(CORPUS_DIR_ENV)
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def read_pairs(path: Path, sources: set[str] | None = None) -> Iterator[Pair]:
    """Yield the pairs of a ``zh<TAB>en<TAB>source`` file (gzip or plain), optionally only from ``sources``."""
    if not path.exists():
        raise FileNotFoundError(
            f"corpus file {path} not found; set {CORPUS_DIR_ENV} to the folder holding {TRAIN_FILE}"
        )
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3:
                raise ValueError(f"{path}:{line_number}: expected zh<TAB>en<TAB>source, got {len(fields)} fields")
            zh, en, source = fields
            if sources is None or source in sources:
                yield Pair(zh, en, source)


def training_pairs(directory: Path | None = None) -> list[Pair]:
    return list(read_pairs((directory or corpus_dir()) / TRAIN_FILE, set(ALLOWED_SOURCES)))


def dev_pairs(directory: Path | None = None) -> list[Pair]:
    """The whole shared dev set (all sources: it is evaluation data, never trained on)."""
    return list(read_pairs((directory or corpus_dir()) / DEV_FILE))


def source_counts(pairs: list[Pair]) -> dict[str, int]:
    return dict(sorted(Counter(p.source for p in pairs).items(), key=lambda kv: -kv[1]))
