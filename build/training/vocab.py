"""A joint zh+en SentencePiece vocabulary written as the files MarianTokenizer reads.

Ids are laid out as in the OPUS-MT checkpoints: ``</s>`` = 0, ``<unk>`` = 1, the pieces, and ``<pad>`` last
(``<pad>`` is also Marian's decoder start token). SentencePiece is trained with ``eos_id=0, unk_id=1`` so a
piece's SentencePiece id equals its id in ``vocab.json``; training can therefore encode with SentencePiece
directly and get exactly the ids ``MarianTokenizer`` produces.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from pathlib import Path

import sentencepiece as spm

SOURCE_SPM = "source.spm"
TARGET_SPM = "target.spm"
VOCAB_JSON = "vocab.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
EOS, UNK, PAD = "</s>", "<unk>", "<pad>"


def train_joint_sentencepiece(texts: Iterable[str], out_dir: Path, vocab_size: int, seed: int = 1) -> Path:
    """Train a unigram SentencePiece model on ``texts`` and write the Marian tokenizer files to ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    spm.set_random_generator_seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "text.txt"
        with corpus.open("w", encoding="utf-8") as handle:
            for text in texts:
                handle.write(text.replace("\n", " ") + "\n")
        prefix = Path(tmp) / "spm"
        spm.SentencePieceTrainer.train(
            input=str(corpus),
            model_prefix=str(prefix),
            vocab_size=vocab_size,
            model_type="unigram",
            character_coverage=0.9995,  # keeps nearly every Chinese character seen in training
            input_sentence_size=2_000_000,
            shuffle_input_sentence=True,
            seed_sentencepiece_size=1_000_000,
            eos_id=0,
            unk_id=1,
            bos_id=-1,
            pad_id=-1,
            eos_piece=EOS,
            unk_piece=UNK,
            normalization_rule_name="nmt_nfkc",
            num_threads=2,
            minloglevel=2,
        )
        model_bytes = prefix.with_suffix(".model").read_bytes()
    (out_dir / SOURCE_SPM).write_bytes(model_bytes)
    (out_dir / TARGET_SPM).write_bytes(model_bytes)
    processor = spm.SentencePieceProcessor(model_proto=model_bytes)
    vocab = {processor.id_to_piece(i): i for i in range(processor.get_piece_size())}
    vocab[PAD] = processor.get_piece_size()
    (out_dir / VOCAB_JSON).write_text(json.dumps(vocab, ensure_ascii=False, indent=0), encoding="utf-8")
    (out_dir / TOKENIZER_CONFIG).write_text(
        json.dumps(
            {
                "tokenizer_class": "MarianTokenizer",
                "source_lang": "zh",
                "target_lang": "en",
                "model_max_length": 512,
                "eos_token": EOS,
                "unk_token": UNK,
                "pad_token": PAD,
                "separate_vocabs": False,
            },
            indent=2,
        ),
        encoding="utf-8",
    )
    return out_dir


def marian_vocab_size(tokenizer_dir: Path) -> int:
    return len(json.loads((tokenizer_dir / VOCAB_JSON).read_text(encoding="utf-8")))
