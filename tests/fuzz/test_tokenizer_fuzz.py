"""Fuzzing the tokenizer wrapper with the shipped default bundle's SentencePiece models and vocabulary.

Properties: any text encodes (or, holding a lone surrogate, raises ``InvalidRequestError`` and nothing else) to
ids of the vocabulary that end with the one end-of-sequence id; ``count_tokens`` agrees with ``encode``; special
strings typed by a user never become special ids; any list of integers decodes to stripped text without raising.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handler.errors import InvalidRequestError
from tests.fuzz.settings import examples
from tests.fuzz.shipped import NEEDS_SHIPPED_BUNDLE, shipped_tokenizer

pytestmark = NEEDS_SHIPPED_BUNDLE

text_pieces = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=20),
    st.characters(categories=["Cs"]),  # a lone surrogate, as JSON can carry one
    st.sampled_from(["</s>", "<unk>", "<pad>", ">>fra<<", "▁", "\u200d", "\u200f", "e\u0301", "﷽", "👨‍👩‍👧"]),
    st.text(alphabet="你好世界的一是在不了有和人这中大为", max_size=20),
)
texts = st.lists(text_pieces, max_size=12).map("".join)


def has_surrogate(text: str) -> bool:
    return any("\ud800" <= char <= "\udfff" for char in text)


@given(text=texts)
@examples(200)
def test_any_text_encodes_to_vocabulary_ids_ending_in_one_eos(text: str) -> None:
    tokenizer = shipped_tokenizer()
    if has_surrogate(text):
        with pytest.raises(InvalidRequestError, match="unpaired UTF-16 surrogate at character"):
            tokenizer.encode(text)
        with pytest.raises(InvalidRequestError, match="unpaired UTF-16 surrogate at character"):
            tokenizer.count_tokens(text)
        return
    ids = tokenizer.encode(text)
    assert ids[-1] == tokenizer.eos_id
    assert tokenizer.eos_id not in ids[:-1] and tokenizer.pad_id not in ids
    assert all(0 <= index < tokenizer.vocab_size for index in ids)
    assert tokenizer.count_tokens(text) == len(ids)
    decoded = tokenizer.decode(ids)
    assert decoded == decoded.strip()


@given(batch=st.lists(texts.filter(lambda text: not has_surrogate(text)), max_size=6))
@examples(40)
def test_a_batch_encodes_like_its_texts_one_by_one(batch: list[str]) -> None:
    tokenizer = shipped_tokenizer()
    assert tokenizer.encode_batch(batch) == [tokenizer.encode(text) for text in batch]


@given(ids=st.lists(st.integers(min_value=-(2**40), max_value=2**40) | st.integers(0, 16_100), max_size=60))
@examples(150)
def test_any_ids_decode_to_stripped_text(ids: list[int]) -> None:
    decoded = shipped_tokenizer().decode(ids)
    assert isinstance(decoded, str) and decoded == decoded.strip()
    assert "</s>" not in decoded and "<pad>" not in decoded
