"""SentencePieceTokenizer gives MarianTokenizer's ids and text, without transformers at run time."""

from __future__ import annotations

import json
import unicodedata
import warnings
from pathlib import Path

import pytest

from handler.errors import BundleError
from handler.model.bundle import NORMALIZATION_NFKC, NORMALIZATION_NONE, VOCAB_JSON
from handler.model.families.marian.tokenizer import SentencePieceTokenizer
from tests.fixture_corpus import fixture_pairs

transformers = pytest.importorskip("transformers")

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TOKENIZER_DIR = REPO_ROOT / "model_artifacts" / "training-checkpoint"

VARIED_TEXTS = [
    "这个多少钱？",
    "我们敦促2015年审议大会的与会者在审议期间牢记这一点,并希望讨论工作能够本着合作精神予以开展。",
    "這個問題很難回答，請您稍等一下。",  # traditional characters
    "「你好！」他說：『再見。』",
    "全角标点：，。！？；（）【】《》“”‘’、——……",
    "ＡＢＣ１２３４５６７８９０ｘｙｚ",
    "电话号码是 13800138000，金额 1,234.56 元，比例 3.14%。",
    "I love Python and 机器学习 very much.",
    "访问 https://example.com/path?a=1&b=2#frag 或者 www.example.org。",
    "邮箱 someone@example.com",
    "今天天气真好😀👍🏽🇨🇳",
    "罕见字：𠀀𪚥𰻞𱁬，以及私用区\ue000字符。",
    "Привет мир, こんにちは世界, 안녕하세요 세계, مرحبا بالعالم",
    "   leading spaces",
    "trailing spaces   ",
    "multiple    internal     spaces 和  中文   空格",
    "tabs\tand\nnewlines\r\nand\u3000ideographic\u00a0spaces",
    "",
    " ",
    "\t\n  \u3000",
    "a",
    "。",
    "a 𠀀 b",
    "x" * 300,
    "数字0123456789和１２３",
    "½ ① ㈱ ㎏ ﬁ ™ Ⅻ",  # compatibility characters SentencePiece's nmt_nfkc rewrites
    "e\u0301 combining accent, zero\u200bwidth space",
    "<html><body>标签</body></html>",
    "a < b > c << d >> e",
]

SPECIAL_STRING_TEXTS = [
    "你好</s>世界",
    "你好 </s> 世界",
    "<unk>",
    "<pad>x",
    "</s></s></s>",
    "结束了吗？</s><pad><unk>",
    ">>abc",
    "hi >>en<< there",
]


def _dev_texts(count: int) -> list[str]:
    pairs = fixture_pairs()
    step = max(1, len(pairs) // count)
    return [pair.zh for pair in pairs[::step][:count]] + [pair.en for pair in pairs[1::step][: count // 4]]


def _tokenizer_dirs(request: pytest.FixtureRequest) -> Path:
    if request.param == "tiny":
        return Path(request.getfixturevalue("tiny_marian_dir"))
    if not (DEFAULT_TOKENIZER_DIR / VOCAB_JSON).is_file():
        pytest.skip(f"{DEFAULT_TOKENIZER_DIR} not present")
    return DEFAULT_TOKENIZER_DIR


@pytest.fixture(params=["tiny", "default"], scope="module")
def tokenizer_dir(request: pytest.FixtureRequest) -> Path:
    return _tokenizer_dirs(request)


def _marian_tokenizer(folder: Path):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():  # "recommended: pip install sacremoses" where it is not installed
        warnings.simplefilter("ignore", UserWarning)
        return transformers.MarianTokenizer.from_pretrained(str(folder))


@pytest.fixture(scope="module")
def marian(tokenizer_dir: Path):  # type: ignore[no-untyped-def]
    return _marian_tokenizer(tokenizer_dir)


def _ours(tokenizer_dir: Path, normalization: str = NORMALIZATION_NONE) -> SentencePieceTokenizer:
    vocab = json.loads((tokenizer_dir / VOCAB_JSON).read_text(encoding="utf-8"))
    return SentencePieceTokenizer(
        tokenizer_dir / "source.spm",
        tokenizer_dir / "target.spm",
        tokenizer_dir / VOCAB_JSON,
        eos_id=vocab["</s>"],
        unk_id=vocab["<unk>"],
        pad_id=vocab["<pad>"],
        normalization=normalization,
    )


@pytest.fixture(scope="module")
def ours(tokenizer_dir: Path) -> SentencePieceTokenizer:
    return _ours(tokenizer_dir)


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return VARIED_TEXTS + _dev_texts(300)


def test_ids_equal_marian_tokenizer_on_varied_text_and_dev_set(ours, marian, corpus) -> None:
    expected = [marian(text).input_ids for text in corpus]
    assert ours.encode_batch(corpus) == expected
    assert [ours.encode(text) for text in corpus] == expected


def test_count_tokens_is_the_encoded_length(ours, corpus) -> None:
    assert [ours.count_tokens(text) for text in corpus] == [len(ids) for ids in ours.encode_batch(corpus)]


def test_decoded_text_equals_marian_tokenizer(ours, marian, corpus) -> None:
    batches = [marian(text).input_ids for text in corpus]
    expected = [marian.decode(ids, skip_special_tokens=True) for ids in batches]
    assert ours.decode_batch(batches) == expected
    assert [ours.decode(ids) for ids in batches] == expected


def test_decode_skips_special_and_out_of_range_ids_like_marian(ours, marian) -> None:
    pad, size = ours.pad_id, ours.vocab_size
    sequences = [
        [pad, 5, 6, 7, 0],
        [pad, 1, 1, 0, 0, 0],
        [9, 10, 11, size + 50, 12, -1 + size, 13],
        [],
        [0],
        list(range(2, min(size - 1, 400))),
        [size - 2, 2, size - 3, 3, 0, pad, pad],
    ]
    for ids in sequences:
        in_range = [i for i in ids if i >= 0]
        assert ours.decode(in_range) == marian.decode(in_range, skip_special_tokens=True), ids
    assert ours.decode([-5, 7]) == ours.decode([7])


def test_unknown_characters_become_unk(ours) -> None:
    ids = ours.encode("𠀀𪚥")
    assert ours.unk_id in ids
    assert ids[-1] == ours.eos_id
    assert ours.decode(ids) == ""


def test_empty_and_whitespace_only_text_is_just_end_of_sequence(ours) -> None:
    for text in ("", " ", "\t\n\u3000  "):
        assert ours.encode(text) == [ours.eos_id]
        assert ours.count_tokens(text) == 1


def test_special_token_strings_in_input_are_plain_text(ours, marian) -> None:
    """A typed ``</s>`` cannot end the source early or inject padding: it is encoded as characters,
    exactly as MarianTokenizer does with split_special_tokens=True."""
    for text in SPECIAL_STRING_TEXTS:
        ids = ours.encode(text)
        assert ids == marian(text, split_special_tokens=True).input_ids, text
        assert ids[-1] == ours.eos_id and ours.eos_id not in ids[:-1], text
        assert ours.pad_id not in ids, text
    # MarianTokenizer's default would have turned the string into the real end-of-sequence id
    assert marian("你好</s>世界").input_ids.count(ours.eos_id) == 2
    assert ours.decode(ours.encode("你好</s>世界")) == marian.decode(
        marian("你好</s>世界", split_special_tokens=True).input_ids, skip_special_tokens=True
    )


def test_language_code_prefix_without_such_code_in_vocab_is_text(ours, marian, tokenizer_dir: Path) -> None:
    import sentencepiece

    text = ">>en<< 你好"
    # MarianTokenizer maps an unknown >>en<< to a single <unk>, dropping the characters; here they stay text
    assert marian(text).input_ids[0] == ours.unk_id
    source = sentencepiece.SentencePieceProcessor(model_file=str(tokenizer_dir / "source.spm"))
    vocab = json.loads((tokenizer_dir / VOCAB_JSON).read_text(encoding="utf-8"))
    as_text = [vocab.get(piece, ours.unk_id) for piece in source.encode(text, out_type=str)] + [ours.eos_id]
    assert ours.encode(text) == as_text
    assert len(as_text) > len(marian(text).input_ids)


def test_language_code_in_vocab_is_one_id_like_marian(tmp_path: Path, tokenizer_dir: Path) -> None:
    vocab = json.loads((tokenizer_dir / VOCAB_JSON).read_text(encoding="utf-8"))
    vocab[">>fra<<"] = len(vocab)
    for name in ("source.spm", "target.spm", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((tokenizer_dir / name).read_bytes())
    (tmp_path / VOCAB_JSON).write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    marian = _marian_tokenizer(tmp_path)
    ours = _ours(tmp_path)
    for text in (">>fra<< 你好", ">>fra<<你好", ">>fra<<", "你好 >>fra<<", ">>fra<<</s>"):
        assert ours.encode(text) == marian(text, split_special_tokens=True).input_ids, text
        assert ours.count_tokens(text) == len(ours.encode(text)), text
    assert ours.encode(">>fra<< 你好")[0] == vocab[">>fra<<"]
    assert ours.encode(">>fr<< 你好")[0] != ours.unk_id  # not a code this vocabulary knows: text


def test_nfkc_bundle_normalises_before_encoding(tokenizer_dir: Path, marian, corpus) -> None:
    ours = _ours(tokenizer_dir, NORMALIZATION_NFKC)
    normalised = [unicodedata.normalize("NFKC", text) for text in corpus]
    assert ours.encode_batch(corpus) == [marian(text).input_ids for text in normalised]
    assert ours.count_tokens("ﬁ½") == len(marian(unicodedata.normalize("NFKC", "ﬁ½")).input_ids)


def test_from_bundle_checks_special_ids_against_the_model(tokenizer_dir: Path) -> None:
    from handler.model.bundle import ModelSpec

    vocab = json.loads((tokenizer_dir / VOCAB_JSON).read_text(encoding="utf-8"))
    spec = ModelSpec(
        vocab_size=len(vocab),
        d_model=8,
        attention_heads=2,
        head_dim=4,
        encoder_layers=1,
        decoder_layers=1,
        max_positions=64,
        pad_id=vocab["<pad>"],
        eos_id=vocab["</s>"],
        unk_id=vocab["<unk>"],
        decoder_start_id=vocab["<pad>"],
    )
    assert SentencePieceTokenizer.from_bundle(tokenizer_dir, spec).encode("你好")[-1] == spec.eos_id
    wrong = ModelSpec(**{**spec.__dict__, "pad_id": 3})
    with pytest.raises(BundleError, match=r"maps <pad> to \d+, but the model expects id 3"):
        SentencePieceTokenizer.from_bundle(tokenizer_dir, wrong)
    with pytest.raises(BundleError, match="unknown input normalisation 'nfd'; supported: none, nfkc"):
        SentencePieceTokenizer.from_bundle(tokenizer_dir, spec, "nfd")


def test_missing_or_broken_files_name_the_file(tmp_path: Path, tokenizer_dir: Path) -> None:
    for name in ("source.spm", "target.spm"):
        (tmp_path / name).write_bytes((tokenizer_dir / name).read_bytes())
    with pytest.raises(BundleError, match=r"tokenizer file .*vocab\.json is missing"):
        SentencePieceTokenizer(
            tmp_path / "source.spm", tmp_path / "target.spm", tmp_path / VOCAB_JSON, eos_id=0, unk_id=1, pad_id=2
        )
    (tmp_path / VOCAB_JSON).write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(BundleError, match=r"vocab\.json must be a JSON object mapping pieces to integer ids"):
        SentencePieceTokenizer(
            tmp_path / "source.spm", tmp_path / "target.spm", tmp_path / VOCAB_JSON, eos_id=0, unk_id=1, pad_id=2
        )
    (tmp_path / VOCAB_JSON).write_text(json.dumps({"</s>": 0, "<unk>": 1, "<pad>": 2}), encoding="utf-8")
    (tmp_path / "source.spm").write_bytes(b"not a model")
    with pytest.raises(BundleError, match=r"cannot load SentencePiece model .*source\.spm"):
        SentencePieceTokenizer(
            tmp_path / "source.spm", tmp_path / "target.spm", tmp_path / VOCAB_JSON, eos_id=0, unk_id=1, pad_id=2
        )
