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

jieba's prefix dictionary never costs a request its whole load, and is never built at a cold start. Bundles built by
this version ship it prepared and split by first character (``jieba.cache``, written by ``write_dictionary_cache``
at build time and listed with its sha256 in the manifest): opening it reads only its index (~10 ms; the whole
dictionary is ~500,000 words and prefixes, 0.2-0.3 s to unmarshal and ~60 MB in memory), and before jieba cuts a
text the words that begin with that text's characters are put into jieba's dictionary, once per character
(``SplitDictionary``). Every word jieba looks up while cutting a text is a piece of that text, so it cuts exactly as
with the whole dictionary. Bundles built before (jieba's own cache format, ``marshal`` of the whole dictionary)
are read whole, as then; a dictionary this version cannot read falls back to jieba's own way: building it from
jieba's word list (1.4-2.5 s) and caching it in ``tempfile.gettempdir()`` (``/tmp`` in a function; ``TMPDIR``
moves it). Nothing is ever written into the bundle.
The libraries (jieba, subword-nmt, sacremoses) are imported only when a CSANMT bundle is loaded; they are not in
the default image (``requirements/csanmt.txt``).
"""

from __future__ import annotations

import logging
import marshal
import struct
import tempfile
import threading
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
    """Write jieba's prefix dictionary for its default word list to ``path``, split by first character
    (``encode_split_dictionary``; the build ships it in the bundle: ``bundle.CSANMT_DICTIONARY_CACHE``)."""
    jieba, _, _ = _import_libraries()
    logging.getLogger("jieba").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="jieba-") as folder:
        tokenizer = jieba.Tokenizer()
        tokenizer.tmp_dir = folder  # a fresh folder: jieba builds the dictionary itself, from its own word list
        tokenizer.initialize()
        path.write_bytes(encode_split_dictionary(tokenizer.FREQ, tokenizer.total))


# --- jieba's prefix dictionary, split by first character -------------------------------------------------------
#
# The file: SPLIT_DICTIONARY_MAGIC; the length of the index (8 bytes, little-endian); the index, marshal of
# ``(total, {first character: (offset, length)})``; then, at those offsets (from the end of the index), one
# marshal'd ``{word or prefix: frequency}`` per first character: jieba's ``FREQ``, in pieces.

SPLIT_DICTIONARY_MAGIC = b"jieba prefix dictionary split by first character, format 1\n"
_INDEX_LENGTH = struct.Struct("<Q")


def encode_split_dictionary(frequencies: dict[str, int], total: int) -> bytes:
    """jieba's prefix dictionary (``Tokenizer.FREQ``, ``Tokenizer.total``) in the split file format."""
    parts: dict[str, dict[str, int]] = {}
    for word, frequency in frequencies.items():
        if word:
            parts.setdefault(word[0], {})[word] = frequency
    index: dict[str, tuple[int, int]] = {}
    blobs: list[bytes] = []
    offset = 0
    for first in sorted(parts):
        blob = marshal.dumps(parts[first])
        index[first] = (offset, len(blob))
        blobs.append(blob)
        offset += len(blob)
    header = marshal.dumps((total, index))
    return SPLIT_DICTIONARY_MAGIC + _INDEX_LENGTH.pack(len(header)) + header + b"".join(blobs)


class SplitDictionary:
    """A split dictionary file, whose parts go into a jieba ``FREQ`` as texts need them.

    Raises ``ValueError`` when the file is not in the format (``encode_split_dictionary``) or its index points
    outside it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with path.open("rb") as handle:
            if handle.read(len(SPLIT_DICTIONARY_MAGIC)) != SPLIT_DICTIONARY_MAGIC:
                raise ValueError("not a split jieba dictionary")
            (length,) = _INDEX_LENGTH.unpack(handle.read(_INDEX_LENGTH.size))
            total, index = marshal.loads(handle.read(length))
            # the parts, read now (~10 MB, a few ms), unmarshalled when a text needs them: not mapped, so that a
            # file rewritten in place while the process runs cannot stop it (SIGBUS) or change what it reads
            self._parts = handle.read()
        if not isinstance(total, int) or total <= 0 or not isinstance(index, dict) or not index:
            raise ValueError("its index is not a jieba dictionary's")
        size = len(self._parts)
        for first, entry in index.items():
            if not (isinstance(first, str) and len(first) == 1 and isinstance(entry, tuple) and len(entry) == 2):
                raise ValueError(f"its index has a malformed entry for {first!r}")
            offset, part = entry
            if not (isinstance(offset, int) and isinstance(part, int) and 0 <= offset and 0 < part <= size - offset):
                raise ValueError(f"its index points outside the file for {first!r}")
        self.total: int = total
        self._index: dict[str, tuple[int, int]] = index
        self._seen: set[str] = set()  # characters whose words are in the dictionary (or that begin none)
        self._lock = threading.Lock()

    @property
    def parts_loaded(self) -> int:
        """How many first characters' words have been put into a dictionary so far."""
        return len(self._seen & self._index.keys())

    def load_for(self, text: str, frequencies: dict[str, int]) -> None:
        """Put into ``frequencies`` every word and prefix that begins with a character of ``text`` (once each)."""
        missing = set(text) - self._seen
        if not missing:
            return
        with self._lock:  # a character is marked seen only once its words are in: a reader never sees it half-done
            for first in missing - self._seen:
                entry = self._index.get(first)
                if entry is not None:
                    begin = entry[0]
                    try:
                        part = marshal.loads(self._parts[begin : begin + entry[1]])
                        if not isinstance(part, dict):
                            raise ValueError(f"a {type(part).__name__} where the words should be")
                    except (EOFError, ValueError, TypeError) as error:
                        raise BundleError(
                            f"{self.path} cannot be read at the words beginning with {first!r} ({error}): the file "
                            "changed after its sha256 was checked; rebuild the bundle"
                        ) from error
                    frequencies.update(part)
                self._seen.add(first)


def _load_dictionary(tokenizer: Any, path: Path) -> SplitDictionary | bool:
    """Put the bundle's prepared dictionary into a jieba tokenizer: a ``SplitDictionary`` (read as texts need it)
    or True (jieba's own cache format, read whole); False (and a warning) when it cannot be read."""
    log = logging.getLogger(__name__)
    try:
        dictionary = SplitDictionary(path)
    except OSError as error:
        log.warning("%s cannot be read (%s); jieba builds its dictionary instead", path, error)
        return False
    except (ValueError, EOFError, TypeError, struct.error):
        pass  # not split: jieba's own cache format (bundles built before), or damaged
    else:
        tokenizer.FREQ, tokenizer.total, tokenizer.initialized = {}, dictionary.total, True
        _load_as_texts_need(tokenizer, dictionary)
        return dictionary
    try:
        frequencies, total = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError) as error:
        log.warning("%s cannot be read (%s); jieba builds its dictionary instead", path, error)
        return False
    if not isinstance(frequencies, dict) or not isinstance(total, int) or total <= 0 or not frequencies:
        log.warning("%s is not a jieba dictionary; jieba builds its dictionary instead", path)
        return False
    tokenizer.FREQ, tokenizer.total, tokenizer.initialized = frequencies, total, True  # what initialize() sets
    return True


def _load_as_texts_need(tokenizer: Any, dictionary: SplitDictionary) -> None:
    """Make ``tokenizer.cut`` (which ``lcut``, ``cut_for_search`` and ``tokenize`` call) first put the words of the
    text's characters into its dictionary: every word jieba looks up while cutting a text is a piece of it."""
    cut = tokenizer.cut

    from jieba._compat import strdecode  # how jieba's cut reads bytes

    def cut_with_its_words(sentence: Any, *args: Any, **kwargs: Any) -> Any:
        sentence = strdecode(sentence)
        dictionary.load_for(sentence, tokenizer.FREQ)
        return cut(sentence, *args, **kwargs)

    tokenizer.cut = cut_with_its_words


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
        loaded = _load_dictionary(self._jieba, dictionary_cache) if dictionary_cache is not None else False
        self.dictionary_from_bundle = loaded is not False
        # the split dictionary, read as texts need it; None when the dictionary was read or built whole
        self.split_dictionary = loaded if isinstance(loaded, SplitDictionary) else None
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
