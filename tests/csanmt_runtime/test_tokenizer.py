"""CSANMT's tokenizer = modelscope's ``TranslationPipeline`` preprocessing and postprocessing, on the same folder.

GIVEN the tiny CSANMT folder (BPE codes learned with subword-nmt, vocabularies) that modelscope's pipeline loads
WHEN our tokenizer encodes sentences with out-of-vocabulary words, punctuation, digits, Latin words, odd
whitespace, full-width characters, and a multi-sentence batch, and decodes chosen target ids
THEN its ids are the pipeline's ``preprocess`` ids (plus the EOS 0 the model appends) and its texts the
pipeline's ``postprocess`` texts; jieba's dictionary cache is written to the temporary folder and nowhere else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from handler.model.families.csanmt.tokenizer import CsanmtTokenizer
from tests.csanmt_runtime import oracle

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
TEXTS = (
    "我们喜欢机器翻译。",
    "你好，世界！",
    "他在 2024 年去了北京。",
    "Python 是一种编程语言。",
    "我的电话是 13800138000，邮箱是 test@example.com。",  # out-of-vocabulary digits, Latin, punctuation
    "量子纠缠是一个未登录词：quantum entanglement！",  # out-of-vocabulary words
    "今天的气温是 -5.5 度？！（很冷）“真的”《书》……",
    "ＡＢＣ全角字符１２３和半角 abc 123",
    "   前后有空格   ",
    "制表符\t分隔  两个空格",
    "",
)
BATCH = "我们喜欢机器翻译。<SENT_SPLIT>你好！<SENT_SPLIT>他在 2024 年去了北京，今天天气很好。"
# target pieces whose postprocessing exercises BPE joints, Moses' punctuation and apostrophe rules
TARGET_PIECES = (
    ["we", "like", "machine", "transl@@", "ation", "."],
    ["hello", ",", "world", "!"],
    ["see", "you", "at", "eight", "o'@@", "clock", "."],
    ["he", "went", "Beijing", "in", "20@@", "24", "."],
    ["Python", "programming", "language", "transl@@"],  # a joint at the very end
    [],
)


def _config(folder: Path) -> dict[str, Any]:
    return dict(json.loads((folder / "configuration.json").read_text(encoding="utf-8"))["model"])


def _tokenizer(folder: Path, temp_dir: Path) -> CsanmtTokenizer:
    return CsanmtTokenizer(
        folder / "bpe.zh",
        folder / "src_vocab.txt",
        folder / "trg_vocab.txt",
        source_unk_id=_config(folder)["src_vocab_size"] - 1,
        temp_dir=str(temp_dir),
    )


def _id_lists(folder: Path) -> list[list[int]]:
    vocab = [line.strip() for line in (folder / "trg_vocab.txt").read_text(encoding="utf-8").splitlines()]
    lists = [[vocab.index(piece) for piece in pieces] for pieces in TARGET_PIECES]
    hello = lists[1]
    lists.append([*hello[:2], 0, *hello[2:]])  # everything after the first 0 is dropped
    lists.append([hello[0], len(vocab) + 5, hello[2]])  # an id the vocabulary does not have: <unk>
    lists.append([0, *hello])  # empty
    return lists


@pytest.fixture(scope="module")
def pipeline_says(csanmt_tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("csanmt-tokenize")
    return oracle.tokenize(csanmt_tiny_dir, [*TEXTS, BATCH], _id_lists(csanmt_tiny_dir), work)


def _padded_like_the_pipeline(rows: list[list[int]]) -> list[list[int]]:
    """Our rows (EOS last) as modelscope's preprocess gives them: without the EOS, right-padded with 0."""
    width = max(len(row) - 1 for row in rows)
    return [row[:-1] + [0] * (width - len(row) + 1) for row in rows]


def test_source_ids_are_the_pipelines(csanmt_tiny_dir: Path, pipeline_says: dict[str, Any], tmp_path: Path) -> None:
    tokenizer = _tokenizer(csanmt_tiny_dir, tmp_path)
    unk = tokenizer.source_unk_id
    *single, batch = pipeline_says["preprocess"]
    for text, expected in zip(TEXTS, single, strict=True):
        ours = tokenizer.encode(text)
        assert ours[-1] == 0
        assert _padded_like_the_pipeline([ours]) == (expected if expected != [[]] else [[]]), text
        assert tokenizer.count_tokens(text) == len(ours)
    rows = tokenizer.encode_batch(BATCH.split("<SENT_SPLIT>"))
    assert _padded_like_the_pipeline(rows) == batch
    assert len({len(row) for row in rows}) == 3  # unequal lengths: the pipeline padded them
    found_unknown = [text for text in TEXTS if unk in tokenizer.encode(text)]
    assert len(found_unknown) >= 4, "the sentences must reach out-of-vocabulary pieces"


def test_texts_are_the_pipelines_postprocess(
    csanmt_tiny_dir: Path, pipeline_says: dict[str, Any], tmp_path: Path
) -> None:
    tokenizer = _tokenizer(csanmt_tiny_dir, tmp_path)
    id_lists = _id_lists(csanmt_tiny_dir)
    ours = [tokenizer.decode(ids) for ids in id_lists]
    assert ours == pipeline_says["postprocess"]
    assert ours[0] == "we like machine translation." and ours[-1] == ""  # the joints and Moses really ran


def test_sent_split_is_plain_text(csanmt_tiny_dir: Path, tmp_path: Path) -> None:
    tokenizer = _tokenizer(csanmt_tiny_dir, tmp_path)
    ids = tokenizer.encode("你好<SENT_SPLIT>世界")
    assert ids.count(0) == 1 and len(ids) > len(tokenizer.encode("你好世界"))


PROBE = """
import json, os, sys, tempfile
from pathlib import Path
writes = []
WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

def audit(event, args):
    if event == "open" and args[0] is not None and not isinstance(args[0], int):
        mode, flags = args[1] or "", args[2] or 0
        if any(c in mode for c in "wax+") or flags & WRITING:
            writes.append(os.path.abspath(os.fsdecode(args[0])))
    elif event in ("os.rename", "os.replace", "os.mkdir", "os.remove", "os.symlink", "os.link"):
        writes.append(os.path.abspath(os.fsdecode(args[1] if event in ("os.rename", "os.replace") else args[0])))

sys.addaudithook(audit)
from handler.model.families.csanmt.tokenizer import CsanmtTokenizer
folder = Path(sys.argv[1])
files = [folder / name for name in ("bpe.zh", "src_vocab.txt", "trg_vocab.txt")]
tokenizer = CsanmtTokenizer(*files, source_unk_id=int(sys.argv[2]))
tokenizer.decode(tokenizer.encode("你好，世界！"))
print(json.dumps({"cache": str(tokenizer.jieba_cache_file), "temp": tempfile.gettempdir(), "writes": writes}))
"""


def test_jieba_writes_its_cache_to_the_temporary_folder_only(csanmt_tiny_dir: Path, tmp_path: Path) -> None:
    """GIVEN HOME, the working folder and TMPDIR apart WHEN the tokenizer loads and translates THEN every file
    written (an audit hook sees every open for writing, rename and mkdir) is in TMPDIR: jieba's cache."""
    home, cwd, temp = tmp_path / "home", tmp_path / "cwd", tmp_path / "tmp"
    for folder in (home, cwd, temp):
        folder.mkdir()
    environment = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(temp), "PYTHONPATH": str(REPO_ROOT)}
    environment["PYTHONDONTWRITEBYTECODE"] = "1"  # as in the image
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, str(csanmt_tiny_dir), str(_config(csanmt_tiny_dir)["src_vocab_size"] - 1)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 0, completed.stderr
    found = json.loads(completed.stdout.strip().splitlines()[-1])
    assert found["cache"] == str(temp / "jieba.cache") and found["temp"] == str(temp)
    assert found["writes"], "the first load writes jieba's cache"
    assert all(Path(path).is_relative_to(temp) for path in found["writes"]), found["writes"]
    assert [p.name for p in temp.iterdir()] == ["jieba.cache"]
    assert not list(home.iterdir()) and not list(cwd.iterdir())
