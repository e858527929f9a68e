"""The corpus committed in ``data/corpus`` is what the default model was trained on, and only licence-clean data."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

import pytest

from build import corpus

REPO = Path(__file__).resolve().parents[2]
SOURCES_MD = REPO / "data" / "corpus" / "SOURCES.md"


@pytest.fixture(autouse=True)
def _repository_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(corpus.CORPUS_DIR_ENV, raising=False)


def test_training_pairs_are_the_default_models_training_data() -> None:
    manifest = json.loads((REPO / "model_artifacts" / "default" / "manifest.json").read_text(encoding="utf-8"))
    recorded = {name: entry["pairs"] for name, entry in manifest["training"]["data"].items()}
    pairs = corpus.training_pairs()
    assert corpus.source_counts(pairs) == recorded
    assert len(pairs) == 204_620


def test_dev_set_holds_only_licence_clean_sources() -> None:
    pairs = corpus.dev_pairs()
    assert corpus.source_counts(pairs) == {"un_dev_test": 700, "tico19": 600, "xdailydialog": 250}
    # every committed line, not only those the readers keep, comes from a redistributable source
    for name in (corpus.TRAIN_FILE, corpus.DEV_FILE):
        sources = {pair.source for pair in corpus.read_pairs(corpus.REPOSITORY_CORPUS_DIR / name)}
        assert sources <= set(corpus.ALLOWED_SOURCES), name


def test_sources_file_states_the_committed_files_hashes_and_every_source() -> None:
    text = SOURCES_MD.read_text(encoding="utf-8")
    for name in (corpus.TRAIN_FILE, corpus.DEV_FILE):
        digest = hashlib.sha256((corpus.REPOSITORY_CORPUS_DIR / name).read_bytes()).hexdigest()
        assert re.search(rf"`{re.escape(name)}` \| [\d,]+ \| `{digest}`", text), name
    for source in corpus.ALLOWED_SOURCES:
        assert f"| {source} |" in text


def test_another_corpus_folder_is_read_when_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with gzip.open(tmp_path / corpus.DEV_FILE, "wt", encoding="utf-8") as handle:
        handle.write("你好\tHello\ttvsub\n")
    monkeypatch.setenv(corpus.CORPUS_DIR_ENV, str(tmp_path))
    pairs = corpus.dev_pairs()
    assert pairs == [corpus.Pair("你好", "Hello", "tvsub")]
    assert corpus.CORPUS_DIR_ENV in corpus.describe_dev_set(pairs) and "tvsub 1" in corpus.describe_dev_set(pairs)


def test_a_missing_corpus_folder_says_how_to_fix_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(corpus.CORPUS_DIR_ENV, str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match=f"unset {corpus.CORPUS_DIR_ENV}"):
        corpus.dev_pairs()
