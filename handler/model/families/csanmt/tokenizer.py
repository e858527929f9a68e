"""CSANMT's tokenizer: modelscope's ``TranslationPipeline`` pre- and postprocessing (zh→en), without modelscope.

Preprocessing, as ``TranslationPipeline.preprocess`` does it for a Chinese source (modelscope 1.40.2,
``pipelines/nlp/translation_pipeline.py``):

1. ``jieba.cut(text)`` in its default mode (accurate, HMM on), the words joined by single spaces;
2. subword-nmt's ``BPE(<bpe.zh>).process_line`` on that line (separator ``@@``, no vocabulary, no glossaries),
   then ``.strip().split()``;
3. each piece becomes its line number in ``src_vocab.txt`` (lines stripped; a line repeated: its last number);
   a piece not there becomes ``source_unk_id`` (modelscope: the configuration's ``src_vocab_size - 1``);
4. the end-of-sequence id 0 is appended (modelscope's graph appends it; the bundle's encoder takes it as input).

Postprocessing, as ``TranslationPipeline.postprocess``: the ids up to the first 0, each replaced by its line of
``trg_vocab.txt`` (``<unk>`` for an id the file does not have), joined by spaces; ``@@ `` and then ``@@`` removed;
sacremoses' ``MosesDetokenizer('en').detokenize`` on the whitespace-split result.

Deliberate differences, both about input a user types: ``<SENT_SPLIT>`` is plain text here (modelscope splits the
input there into a batch; the service splits sentences itself), and a bundle whose manifest asks for NFKC input
normalisation gets it (modelscope's pipeline normalises nothing; the build writes ``"none"`` for CSANMT).

jieba's prefix dictionary is loaded when the tokenizer is made, never on a request. Bundles built by this version
ship it prepared (``jieba.cache``, written by the build with jieba's own cache writer and listed with its sha256 in
the manifest): reading it costs ~0.3-0.5 s where building it from jieba's dictionary costs 1.4-2.5 s, on every cold
start of a function, whose temporary folder starts empty. An older bundle, or a cache this jieba cannot read, falls
back to jieba's own way: its cache in ``tempfile.gettempdir()`` (``/tmp`` in a function; ``TMPDIR`` moves it),
written on the first load. Nothing is ever written into the bundle.
The libraries (jieba, subword-nmt, sacremoses) are imported only when a CSANMT bundle is loaded; they are not in
the default image (``requirements/csanmt.txt``).
"""

from __future__ import annotations

import logging
import marshal
import tempfile
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from handler.errors import BundleError
from handler.model.bundle import NORMALIZATION_NFKC, NORMALIZATION_NONE

EOS_ID = 0  # also the padding id
UNKNOWN_TARGET = "<unk>"
BPE_SEPARATOR = "@@"
REQUIREMENTS = "requirements/csanmt.txt"
BPE_CACHE_LIMIT = 200_000  # words whose segmentation subword-nmt remembers; cleared beyond (memory stays bounded)
COUNT_CACHE_SIZE = 4_096  # texts whose token count is remembered (segmentation asks again and again)
NORMALIZATIONS = (NORMALIZATION_NONE, NORMALIZATION_NFKC)


def _import_libraries() -> tuple[Any, Any, Any]:
    try:
        import jieba
        from sacremoses import MosesDetokenizer
        from subword_nmt import apply_bpe
    except ImportError as error:
        raise BundleError(
            f"this bundle is a CSANMT model, whose tokenizer needs jieba, subword-nmt and sacremoses ({error}); "
            f"install them with: pip install --require-hashes -r {REQUIREMENTS} (the image installs them when "
            "the baked bundle's manifest says family csanmt)"
        ) from error
    return jieba, apply_bpe, MosesDetokenizer


def read_source_vocab(path: Path) -> dict[str, int]:
    """``src_vocab.txt`` as modelscope reads it: piece -> line number, lines stripped, the last repeat winning."""
    with _open_text(path) as lines:
        return {line.strip(): index for index, line in enumerate(lines)}


def read_target_vocab(path: Path) -> list[str]:
    """``trg_vocab.txt`` as modelscope reads it: line number -> stripped line."""
    with _open_text(path) as lines:
        return [line.strip() for line in lines]


def _open_text(path: Path) -> Any:
    try:
        return path.open(encoding="utf-8")
    except OSError as error:
        raise BundleError(f"tokenizer file {path} cannot be read: {error}") from error


def write_dictionary_cache(path: Path) -> None:
    """Write jieba's prefix dictionary for its default word list to ``path``, as jieba's own cache writer does
    (the build ships it in the bundle: ``bundle.CSANMT_DICTIONARY_CACHE``)."""
    jieba, _, _ = _import_libraries()
    logging.getLogger("jieba").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="jieba-") as folder:
        tokenizer = jieba.Tokenizer()
        tokenizer.tmp_dir = folder  # a fresh folder: jieba builds the dictionary and writes its cache file there
        tokenizer.initialize()
        written = Path(folder) / "jieba.cache"
        if not written.is_file():
            raise BundleError(f"jieba {jieba.__version__} wrote no dictionary cache in {folder}")
        path.write_bytes(written.read_bytes())


def _load_dictionary(tokenizer: Any, path: Path) -> bool:
    """Put the bundle's prepared dictionary into a jieba tokenizer; False (and a warning) when it cannot be read."""
    try:
        frequencies, total = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError) as error:
        logging.getLogger(__name__).warning("%s cannot be read (%s); jieba builds its dictionary instead", path, error)
        return False
    if not isinstance(frequencies, dict) or not isinstance(total, int) or total <= 0 or not frequencies:
        logging.getLogger(__name__).warning("%s is not a jieba dictionary; jieba builds its dictionary instead", path)
        return False
    tokenizer.FREQ, tokenizer.total, tokenizer.initialized = frequencies, total, True  # what initialize() sets
    return True


class CsanmtTokenizer:
    """Source-side encoding and target-side decoding for one CSANMT bundle (``jieba + subword-nmt + moses``)."""

    def __init__(
        self,
        bpe_codes: Path,
        source_vocab: Path,
        target_vocab: Path,
        *,
        source_unk_id: int,
        normalization: str = NORMALIZATION_NONE,
        temp_dir: str | None = None,
        dictionary_cache: Path | None = None,
    ) -> None:
        if normalization not in NORMALIZATIONS:
            raise BundleError(f"unknown input normalisation {normalization!r}; supported: {', '.join(NORMALIZATIONS)}")
        for path in (bpe_codes, source_vocab, target_vocab):
            if not path.is_file():
                raise BundleError(f"tokenizer file {path} is missing")
        jieba, apply_bpe, detokenizer_class = _import_libraries()
        try:
            self._source_vocab = read_source_vocab(source_vocab)
            self._target_vocab = read_target_vocab(target_vocab)
        except UnicodeDecodeError as error:
            raise BundleError(f"a vocabulary file of {source_vocab.parent} is not UTF-8 text: {error}") from error
        largest = max(self._source_vocab.values(), default=-1)
        if not 0 <= source_unk_id or largest > source_unk_id:
            raise BundleError(
                f"{source_vocab} has ids up to {largest:,}, but the manifest's source_unk_id is {source_unk_id:,} "
                "(the model's source vocabulary size - 1): the vocabulary does not belong to this model"
            )
        self.source_unk_id = source_unk_id
        self.normalization = normalization
        self.vocab_size = len(self._target_vocab)
        try:
            with bpe_codes.open(encoding="utf-8") as codes:
                self._bpe = apply_bpe.BPE(codes)
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise BundleError(f"cannot read the BPE codes {bpe_codes}: {error}") from error
        self._detokenizer = detokenizer_class(lang="en")
        logging.getLogger("jieba").setLevel(logging.WARNING)  # it logs every dictionary load at DEBUG to stderr
        self._jieba = jieba.Tokenizer()  # the default dictionary, as jieba.cut uses it; jieba.dt stays untouched
        self.temp_dir = temp_dir if temp_dir is not None else tempfile.gettempdir()
        self._jieba.tmp_dir = self.temp_dir  # the dictionary cache; explicitly the temporary folder
        self.dictionary_from_bundle = dictionary_cache is not None and _load_dictionary(self._jieba, dictionary_cache)
        self._jieba.initialize()  # nothing more to do once the bundle's dictionary is in
        self._count = lru_cache(maxsize=COUNT_CACHE_SIZE)(self._count_uncached)

    @property
    def jieba_cache_file(self) -> Path:
        """Where jieba keeps its dictionary cache (``jieba.cache`` in the temporary folder)."""
        return Path(self.temp_dir) / "jieba.cache"

    # --- encoding ---------------------------------------------------------------------------------------

    def normalize(self, text: str) -> str:
        return unicodedata.normalize("NFKC", text) if self.normalization == NORMALIZATION_NFKC else text

    def pieces(self, text: str) -> list[str]:
        """The BPE pieces of ``text``: jieba words joined by spaces, then subword-nmt (modelscope's steps 1-2)."""
        words = " ".join(self._jieba.cut(self.normalize(text)))
        if len(self._bpe.cache) > BPE_CACHE_LIMIT:
            self._bpe.cache.clear()
        return list(self._bpe.process_line(words).strip().split())

    def encode(self, text: str) -> list[int]:
        """Source ids of ``text`` with the end-of-sequence id 0 appended."""
        vocab_get, unk = self._source_vocab.get, self.source_unk_id
        return [vocab_get(piece, unk) for piece in self.pieces(text)] + [EOS_ID]

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def count_tokens(self, text: str) -> int:
        """``len(encode(text))``; remembered for recent texts (segmentation asks for the same pieces again)."""
        return self._count(text)

    def _count_uncached(self, text: str) -> int:
        return len(self.pieces(text)) + 1

    # --- decoding ---------------------------------------------------------------------------------------

    def target_text(self, ids: Sequence[int]) -> str:
        """The ids up to the first 0 as target pieces joined by spaces, BPE joints removed (before Moses)."""
        vocab, size = self._target_vocab, len(self._target_vocab)
        kept = list(ids) + [EOS_ID]
        kept = kept[: kept.index(EOS_ID)]
        text = " ".join(vocab[index] if 0 <= index < size else UNKNOWN_TARGET for index in kept)
        return text.replace(BPE_SEPARATOR + " ", "").replace(BPE_SEPARATOR, "")

    def decode(self, ids: Sequence[int]) -> str:
        """Target text of generated ids, as modelscope's postprocess writes it."""
        return str(self._detokenizer.detokenize(self.target_text(ids).split()))

    def decode_batch(self, batch: Sequence[Sequence[int]]) -> list[str]:
        return [self.decode(ids) for ids in batch]
