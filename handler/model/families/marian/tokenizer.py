"""Marian's tokenizer without transformers: SentencePiece pieces looked up in the bundle's ``vocab.json``.

``encode`` gives the ids ``MarianTokenizer(text).input_ids`` gives, and ``decode`` the text
``MarianTokenizer.decode(ids, skip_special_tokens=True)`` gives, with two deliberate differences, both about
input a user types rather than anything a model produces:

* **Special-token strings are plain text.** ``MarianTokenizer`` turns a literal ``</s>``, ``<unk>`` or ``<pad>``
  in the input into that special id, so a user could end the source sequence early or inject padding. Here
  such strings are encoded by SentencePiece like any other characters (``</s>`` becomes ``▁</``, ``s``, ``>``),
  which is exactly what ``MarianTokenizer(text, split_special_tokens=True)`` produces and how the default
  model's training data was encoded. The only end-of-sequence id is the one ``encode`` appends.
* **A ``>>xx<<`` prefix is a language code only when ``vocab.json`` has it.** ``MarianTokenizer`` strips any
  text of the form ``>>…<<`` at the start of the input and maps it to one id, ``<unk>`` when the vocabulary has
  no such code, silently dropping what was written there. Multilingual-target checkpoints (whose vocabularies
  hold codes such as ``>>fra<<``) behave exactly as with ``MarianTokenizer``; for every other model the
  characters are encoded as text.

Everything else matches ``MarianTokenizer``: pieces come from ``source.spm`` (so whitespace handling and
unknown characters are SentencePiece's: runs of spaces, tabs and line breaks collapse, leading and trailing
whitespace vanish), a piece missing from ``vocab.json`` becomes ``<unk>``, one end-of-sequence id is
appended. Decoding drops the special ids (``</s>``, ``<unk>``, ``<pad>``) and ids outside the vocabulary,
joins the pieces with ``target.spm`` and strips the result. A bundle whose normalisation is
``NORMALIZATION_NFKC`` has its input NFKC-normalised before all of this.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import sentencepiece as spm

from handler.errors import BundleError
from handler.model.bundle import NORMALIZATION_NFKC, NORMALIZATION_NONE, SOURCE_SPM, TARGET_SPM, VOCAB_JSON, ModelSpec
from handler.text.validation import require_unicode

SPIECE_UNDERLINE = "▁"
EOS_TOKEN = "</s>"
UNK_TOKEN = "<unk>"
PAD_TOKEN = "<pad>"
NORMALIZATIONS = (NORMALIZATION_NONE, NORMALIZATION_NFKC)


class SentencePieceTokenizer:
    """Source-side encoding and target-side decoding for one Marian vocabulary."""

    def __init__(
        self,
        source_spm: Path,
        target_spm: Path,
        vocab_json: Path,
        *,
        eos_id: int,
        unk_id: int,
        pad_id: int,
        normalization: str = NORMALIZATION_NONE,
    ) -> None:
        if normalization not in NORMALIZATIONS:
            raise BundleError(f"unknown input normalisation {normalization!r}; supported: {', '.join(NORMALIZATIONS)}")
        for path in (source_spm, target_spm, vocab_json):
            if not path.is_file():
                raise BundleError(f"tokenizer file {path} is missing")
        vocab = _read_vocab(vocab_json)
        for token, expected in ((EOS_TOKEN, eos_id), (UNK_TOKEN, unk_id), (PAD_TOKEN, pad_id)):
            if vocab.get(token) != expected:
                raise BundleError(
                    f"{vocab_json} maps {token} to {vocab.get(token)}, but the model expects id {expected}"
                )
        self.normalization = normalization
        self.eos_id = eos_id
        self.unk_id = unk_id
        self.pad_id = pad_id
        self.vocab_size = len(vocab)
        self._vocab = vocab
        self._source = _load_sentencepiece(source_spm)
        # a joint vocabulary's bundle holds one SentencePiece model for both sides (bundle.TARGET_SPM_KEY)
        self._target = self._source if target_spm == source_spm else _load_sentencepiece(target_spm)
        self._language_codes = frozenset(piece for piece in vocab if piece.startswith(">>") and piece.endswith("<<"))
        pieces: list[str | None] = [None] * (max(vocab.values()) + 1)
        for piece, index in vocab.items():
            pieces[index] = piece
        for special in (eos_id, unk_id, pad_id):
            pieces[special] = None  # never decoded
        self._pieces = pieces

    @classmethod
    def from_bundle(
        cls, folder: Path, spec: ModelSpec, normalization: str = NORMALIZATION_NONE, target_spm: str = TARGET_SPM
    ) -> SentencePieceTokenizer:
        """The tokenizer of a bundle (or of any folder holding Marian's three tokenizer files); ``target_spm``: the
        file of the target side's SentencePiece model (``source.spm`` itself in a joint vocabulary's bundle)."""
        return cls(
            folder / SOURCE_SPM,
            folder / target_spm,
            folder / VOCAB_JSON,
            eos_id=spec.eos_id,
            unk_id=spec.unk_id,
            pad_id=spec.pad_id,
            normalization=normalization,
        )

    # --- encoding ---------------------------------------------------------------------------------------

    def normalize(self, text: str) -> str:
        """The bundle's input normalisation (applied by ``encode`` and ``count_tokens``)."""
        return unicodedata.normalize("NFKC", text) if self.normalization == NORMALIZATION_NFKC else text

    def encode(self, text: str) -> list[int]:
        """Source ids of ``text`` with the end-of-sequence id appended."""
        return self.encode_batch([text])[0]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        codes: list[str | None] = []
        bodies: list[str] = []
        for text in texts:
            code, body = self._split_language_code(self.normalize(text))
            codes.append(code)
            bodies.append(body)
        vocab_get = self._vocab.get
        unk, eos = self.unk_id, self.eos_id
        batch: list[list[int]] = []
        for code, pieces in zip(codes, self._encode_pieces(bodies), strict=True):
            ids = [vocab_get(piece, unk) for piece in pieces]
            if code is not None:
                ids.insert(0, self._vocab[code])
            ids.append(eos)
            batch.append(ids)
        return batch

    def count_tokens(self, text: str) -> int:
        """``len(encode(text))``, without looking pieces up (segmentation calls this for every budget check)."""
        code, body = self._split_language_code(self.normalize(text))
        return len(self._encode_pieces([body])[0]) + (2 if code is not None else 1)

    def _encode_pieces(self, bodies: list[str]) -> list[list[str]]:
        """SentencePiece's pieces of each text; ``InvalidRequestError`` for a lone surrogate, which is not text."""
        try:
            pieces: list[list[str]] = self._source.encode(bodies, out_type=str)
        except (RuntimeError, TypeError):  # what the SentencePiece binding raises for a str it cannot encode
            for body in bodies:
                require_unicode(body)
            raise
        return pieces

    def _split_language_code(self, text: str) -> tuple[str | None, str]:
        if self._language_codes and text.startswith(">>"):
            end = text.find("<<")
            if end != -1 and text[: end + 2] in self._language_codes:
                return text[: end + 2], text[end + 2 :]
        return None, text

    # --- decoding ---------------------------------------------------------------------------------------

    def decode(self, ids: Sequence[int]) -> str:
        """Target text of ``ids``; special ids and ids outside the vocabulary are skipped."""
        pieces = self._pieces
        size = len(pieces)
        kept = [piece for index in ids if 0 <= index < size and (piece := pieces[index]) is not None]
        if not kept:
            return ""
        return str(self._target.decode_pieces(kept)).replace(SPIECE_UNDERLINE, " ").strip()

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        return [self.decode(ids) for ids in batch]


def _read_vocab(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BundleError(f"cannot read {path}: {error}") from error
    if not isinstance(data, dict) or not all(isinstance(v, int) for v in data.values()):
        raise BundleError(f"{path} must be a JSON object mapping pieces to integer ids")
    return data


def _load_sentencepiece(path: Path) -> spm.SentencePieceProcessor:
    processor = spm.SentencePieceProcessor()
    try:
        processor.Load(str(path))
    except (OSError, RuntimeError) as error:
        raise BundleError(f"cannot load SentencePiece model {path}: {error}") from error
    return processor
