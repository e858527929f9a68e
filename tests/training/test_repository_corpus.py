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
    for path in [*corpus.training_files(corpus.REPOSITORY_CORPUS_DIR), corpus.REPOSITORY_CORPUS_DIR / corpus.DEV_FILE]:
        sources = {pair.source for pair in corpus.read_pairs(path)}
        assert sources <= set(corpus.ALLOWED_SOURCES), path


def test_sources_file_states_the_committed_files_hashes_and_every_source() -> None:
    text = SOURCES_MD.read_text(encoding="utf-8")
    files = [*corpus.training_files(corpus.REPOSITORY_CORPUS_DIR), corpus.REPOSITORY_CORPUS_DIR / corpus.DEV_FILE]
    assert len(files) == 4  # three training shards and the dev set
    for path in files:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert re.search(rf"`{re.escape(path.name)}` \| [\d,]+ \| `{digest}`", text), path.name
        assert path.stat().st_size < 5_000_000, f"{path.name}: tracked files stay under 5 MB"
    for source in corpus.ALLOWED_SOURCES:
        assert f"| {source} |" in text


def test_one_training_file_is_read_instead_of_shards(tmp_path: Path) -> None:
    files = ((corpus.TRAIN_FILE, "你好\tHello\ttico19\n"), ("train-00.zh-en.tsv.gz", "谢谢\tThanks\ttico19\n"))
    for name, line in files:
        with gzip.open(tmp_path / name, "wt", encoding="utf-8") as handle:
            handle.write(line)
    assert [pair.en for pair in corpus.training_pairs(tmp_path)] == ["Hello"]
    (tmp_path / corpus.TRAIN_FILE).unlink()
    assert [pair.en for pair in corpus.training_pairs(tmp_path)] == ["Thanks"]


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
