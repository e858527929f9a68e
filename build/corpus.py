"""The zh–en corpus: which sources we may train on, which data set is read, and reading it.

Each line of a corpus file (``train.zh-en.tsv.gz`` or its shards, ``dev.zh-en.tsv.gz``) is ``zh<TAB>en<TAB>source``. The
repository ships the licence-clean part in ``data/corpus/`` (see ``data/corpus/SOURCES.md``): the training pairs
of the default model and a dev set made only of licence-clean sources, so a clone alone can train, evaluate and
benchmark. ``$TRANSLATE_CORPUS_DIR`` names another folder with the same two files (for example the full corpus
with its 2,000-pair dev set, which includes sources we may not redistribute); the readers then read that folder.
Only sources whose terms allow redistributing a model trained on them are trained on, whatever the folder.
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
TRAIN_SHARDS = "train-[0-9][0-9].zh-en.tsv.gz"  # the repository's training file, split in order


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


# the licence-clean corpus committed with the repository
REPOSITORY_CORPUS_DIR = Path(__file__).resolve().parent.parent / "data" / "corpus"


def corpus_dir() -> Path:
    """The corpus folder: ``$TRANSLATE_CORPUS_DIR`` if set, else the repository's ``data/corpus``."""
    configured = os.environ.get(CORPUS_DIR_ENV)
    if configured:
        return Path(configured)
    return REPOSITORY_CORPUS_DIR


def describe_dev_set(pairs: list[Pair], directory: Path | None = None) -> str:
    """Which dev set ``pairs`` came from, for reports: the folder, the file and its size by source."""
    folder = (directory or corpus_dir()).resolve()
    where = "the repository's licence-clean dev set" if folder == REPOSITORY_CORPUS_DIR else f"{CORPUS_DIR_ENV}"
    by_source = ", ".join(f"{name} {count}" for name, count in source_counts(pairs).items())
    return f"{where} ({folder / DEV_FILE}): {len(pairs)} pairs ({by_source})"


def read_pairs(path: Path, sources: set[str] | None = None) -> Iterator[Pair]:
    """Yield the pairs of a ``zh<TAB>en<TAB>source`` file (gzip or plain), optionally only from ``sources``."""
    if not path.exists():
        raise FileNotFoundError(
            f"corpus file {path} not found; unset {CORPUS_DIR_ENV} to read the repository's {REPOSITORY_CORPUS_DIR}, "
            f"or set it to a folder holding {TRAIN_FILE} and {DEV_FILE}"
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


def training_files(directory: Path | None = None) -> list[Path]:
    """``train.zh-en.tsv.gz``, or where it is split in shards (the repository's: git keeps files small), the shards
    ``train-00.zh-en.tsv.gz``, ``train-01...`` in order, which together hold its lines in the same order."""
    folder = directory or corpus_dir()
    whole = folder / TRAIN_FILE
    shards = sorted(folder.glob(TRAIN_SHARDS)) if folder.is_dir() else []
    return [whole] if whole.exists() or not shards else shards


def training_pairs(directory: Path | None = None) -> list[Pair]:
    allowed = set(ALLOWED_SOURCES)
    return [pair for path in training_files(directory) for pair in read_pairs(path, allowed)]


def dev_pairs(directory: Path | None = None) -> list[Pair]:
    """The whole dev set of the corpus folder (all its sources: it is evaluation data, never trained on)."""
    return list(read_pairs((directory or corpus_dir()) / DEV_FILE))


def source_counts(pairs: list[Pair]) -> dict[str, int]:
    return dict(sorted(Counter(p.source for p in pairs).items(), key=lambda kv: -kv[1]))
