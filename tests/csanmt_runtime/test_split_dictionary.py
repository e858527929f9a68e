"""jieba's prefix dictionary as the bundle ships it: split by first character, read as texts need it.

GIVEN jieba's own prefix dictionary (built by jieba from its word list, as jieba caches it) and the split file the
build writes from it (``write_dictionary_cache``)
WHEN a tokenizer opens the split file and cuts the repository's dev-set sentences and odd texts
THEN it has read nothing but the index when it is made, and afterwards only the words that begin with the
characters of the texts it cut; it cuts every text exactly as jieba's whole dictionary does, also from threads at
once; all its parts together are jieba's whole dictionary; a bundle built before the split (jieba's own cache
format) is still read whole, and a split file that is damaged falls back to jieba's own dictionary with a warning.
"""

from __future__ import annotations

import json
import logging
import marshal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from handler.errors import BundleError
from handler.model.families.csanmt.tokenizer import (
    SPLIT_DICTIONARY_MAGIC,
    CsanmtTokenizer,
    SplitDictionary,
    write_dictionary_cache,
)

pytestmark = pytest.mark.slow

ODD_TEXTS = (
    "Python 是一种编程语言。",
    "我的电话是 13800138000，邮箱是 test@example.com。",
    "量子纠缠是一个未登录词：quantum entanglement！",
    "ＡＢＣ全角字符１２３和半角 abc 123",
    "AA制和A股，3P，ATM机",  # dictionary words that begin with Latin letters and digits
    "",
)


def _dev_sentences() -> list[str]:
    from build import corpus

    return [pair.zh for pair in corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR)][:300]


@pytest.fixture(scope="module")
def dictionaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """jieba's own cache file (jieba builds it in a fresh temporary folder), its dictionary, and the split file."""
    import jieba

    folder = tmp_path_factory.mktemp("jieba-own")
    own = jieba.Tokenizer()
    own.tmp_dir = str(folder)
    own.initialize()
    split = tmp_path_factory.mktemp("jieba-split") / "jieba.cache"
    write_dictionary_cache(split)
    return {"own_cache": folder / "jieba.cache", "frequencies": own.FREQ, "total": own.total, "split": split}


def _tokenizer(folder: Path, cache: Path | None, temp_dir: Path) -> CsanmtTokenizer:
    config = json.loads((folder / "configuration.json").read_text(encoding="utf-8"))["model"]
    return CsanmtTokenizer(
        folder / "bpe.zh",
        folder / "src_vocab.txt",
        folder / "trg_vocab.txt",
        source_unk_id=config["src_vocab_size"] - 1,
        temp_dir=str(temp_dir),
        dictionary_cache=cache,
    )


def test_the_split_file_holds_jiebas_whole_dictionary(dictionaries: dict[str, Any]) -> None:
    split = SplitDictionary(dictionaries["split"])
    assert split.parts_loaded == 0 and split.total == dictionaries["total"]
    frequencies: dict[str, int] = {}
    split.load_for("".join({word[0] for word in dictionaries["frequencies"]}), frequencies)
    assert frequencies == dictionaries["frequencies"]
    assert dictionaries["split"].read_bytes().startswith(SPLIT_DICTIONARY_MAGIC)


def test_only_the_words_of_the_texts_characters_are_read(
    csanmt_tiny_dir: Path, dictionaries: dict[str, Any], tmp_path: Path
) -> None:
    tokenizer = _tokenizer(csanmt_tiny_dir, dictionaries["split"], tmp_path)
    split = tokenizer.split_dictionary
    assert tokenizer.dictionary_from_bundle and split is not None
    assert split.parts_loaded == 0 and tokenizer._jieba.FREQ == {}  # made: nothing but the index read
    assert list(tmp_path.iterdir()) == []  # nothing built, nothing written
    sentence = "今天天气很好，我们去公园散步吧。"
    tokenizer.encode(sentence)
    firsts = {word[0] for word in tokenizer._jieba.FREQ}
    assert firsts and firsts <= set(sentence)
    assert split.parts_loaded == len(firsts) < 20
    whole = dictionaries["frequencies"]
    assert {word: whole[word] for word in whole if word[0] in set(sentence)} == tokenizer._jieba.FREQ
    tokenizer.encode(sentence)
    assert split.parts_loaded == len(firsts)  # once per character


def test_it_cuts_every_text_as_jiebas_whole_dictionary(
    csanmt_tiny_dir: Path, dictionaries: dict[str, Any], tmp_path: Path
) -> None:
    texts = [*_dev_sentences(), *ODD_TEXTS]
    whole = _tokenizer(csanmt_tiny_dir, dictionaries["own_cache"], tmp_path)  # jieba's own format, read whole
    assert whole.dictionary_from_bundle and whole.split_dictionary is None
    split = _tokenizer(csanmt_tiny_dir, dictionaries["split"], tmp_path)
    for text in texts:
        assert list(split._jieba.cut(text)) == list(whole._jieba.cut(text)), text
        assert split.encode(text) == whole.encode(text), text
    assert list(split._jieba.cut("北京烤鸭".encode())) == ["北京烤鸭"]  # bytes, as jieba reads them
    assert split._jieba.lcut_for_search("中华人民共和国成立了") == whole._jieba.lcut_for_search("中华人民共和国成立了")


def test_threads_cutting_at_once_cut_as_one_thread(
    csanmt_tiny_dir: Path, dictionaries: dict[str, Any], tmp_path: Path
) -> None:
    texts = _dev_sentences()[:120]
    expected = [_tokenizer(csanmt_tiny_dir, dictionaries["own_cache"], tmp_path).encode(text) for text in texts]
    split = _tokenizer(csanmt_tiny_dir, dictionaries["split"], tmp_path)
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(split.encode, texts)) == expected


def test_a_damaged_split_file_falls_back_to_jiebas_own(
    csanmt_tiny_dir: Path, dictionaries: dict[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = dictionaries["split"].read_bytes()
    index_end = len(SPLIT_DICTIONARY_MAGIC) + 8
    length = int.from_bytes(data[len(SPLIT_DICTIONARY_MAGIC) : index_end], "little")
    total, index = marshal.loads(data[index_end : index_end + length])
    first = next(iter(index))
    index[first] = (index[first][0], len(data))  # a part that runs past the end of the file
    header = marshal.dumps((total, index))
    damaged = tmp_path / "jieba.cache"
    parts = data[index_end + length :]
    damaged.write_bytes(SPLIT_DICTIONARY_MAGIC + len(header).to_bytes(8, "little") + header + parts)
    (tmp_path / "temp").mkdir()
    with caplog.at_level(logging.WARNING):
        tokenizer = _tokenizer(csanmt_tiny_dir, damaged, tmp_path / "temp")
    assert not tokenizer.dictionary_from_bundle and tokenizer.split_dictionary is None
    assert f"{damaged} cannot be read" in caplog.text and "jieba builds its dictionary instead" in caplog.text
    assert tokenizer._jieba.FREQ == dictionaries["frequencies"]


def test_a_part_changed_after_the_check_is_refused_by_name(dictionaries: dict[str, Any], tmp_path: Path) -> None:
    data = bytearray(dictionaries["split"].read_bytes())
    data[-40:] = b"\xff" * 40  # the last part's bytes, after the index was read and checked
    changed = tmp_path / "jieba.cache"
    changed.write_bytes(bytes(data))
    split = SplitDictionary(changed)
    last = max(split._index, key=lambda first: split._index[first][0])
    with pytest.raises(BundleError, match=rf"{changed} cannot be read at the words beginning with"):
        split.load_for(last, {})
