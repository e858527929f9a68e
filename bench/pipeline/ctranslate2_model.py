"""A Marian (transformers) checkpoint converted for CTranslate2 with its own Transformers converter, INT8.

    convert(checkpoint_dir, out_dir)  ->  out_dir holding model.bin, config.json, shared_vocabulary.json,
                                          source.spm and (unless it is the same file) target.spm

The conversion is cached: ``out_dir`` is rebuilt only when it lacks ``model.bin`` or when the checkpoint's
weights are newer than it. The converter drops Marian's ``<pad>`` row (CTranslate2 starts the decoder from a zero
embedding instead), so CTranslate2 sees the same vocabulary minus that one entry; token strings, not ids, go in
and out of ``ctranslate2.Translator``, and ``source.spm`` / ``target.spm`` are copied beside the model so that
the folder alone translates text. A joint vocabulary's two SentencePiece models are one file: the folder then holds
``source.spm`` alone, as this runtime's bundle does (``handler.model.bundle.TARGET_SPM_KEY``), and the benchmark's
CTranslate2 process decodes with it.

``convert(..., trained_start=True)`` keeps the ``<pad>`` row instead and starts the decoder from it, as the model
does in transformers and in this runtime (``decoder_start_token`` ``<pad>``; the decoder must then never emit it:
``suppress_sequences=[["<pad>"]]``). The converter's zero start is right for the opus-mt models, whose ``<pad>`` row
is zero, but this repository's trained Marian models learned that row (the default model's has norm 0.5): from a
zero start CTranslate2 translated 今天天气很好。 as "today." where transformers and this runtime give "It's nice
today." The serving benchmark (``bench.load.serving``), which compares real translations, converts so;
``make bench`` forces every output's length and keeps the converter's own conversion.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

QUANTIZATION = "int8"
TOKENIZER_FILES = ("source.spm", "target.spm")
PAD = "<pad>"


def _weights(checkpoint_dir: Path) -> list[Path]:
    return sorted(checkpoint_dir.glob("*.safetensors")) + sorted(checkpoint_dir.glob("*.bin"))


def is_current(checkpoint_dir: Path, out_dir: Path) -> bool:
    model = out_dir / "model.bin"
    if not model.is_file():
        return False
    newest = max((path.stat().st_mtime for path in _weights(checkpoint_dir)), default=0.0)
    return model.stat().st_mtime >= newest


def starts_from_pad(out_dir: Path) -> bool:
    """Whether the converted model in ``out_dir`` starts its decoder from the ``<pad>`` row (``trained_start``)."""
    config = out_dir / "config.json"
    return config.is_file() and json.loads(config.read_text(encoding="utf-8")).get("decoder_start_token") == PAD


def joint(folder: Path) -> bool:
    """Whether ``folder``'s two SentencePiece models are the same file."""
    source, target = (folder / name for name in TOKENIZER_FILES)
    return source.is_file() and target.is_file() and source.read_bytes() == target.read_bytes()


def convert(checkpoint_dir: Path, out_dir: Path, *, force: bool = False, trained_start: bool = False) -> Path:
    """``out_dir`` with the INT8 CTranslate2 model of the Marian checkpoint in ``checkpoint_dir`` (its decoder
    started from the trained ``<pad>`` row with ``trained_start``)."""
    if not force and is_current(checkpoint_dir, out_dir) and starts_from_pad(out_dir) == trained_start:
        if joint(out_dir):  # converted before joint models were stored once
            (out_dir / TOKENIZER_FILES[1]).unlink()
        return out_dir
    if not _weights(checkpoint_dir):
        raise FileNotFoundError(f"{checkpoint_dir} holds no weights (*.safetensors or *.bin) to convert")
    from ctranslate2.converters import TransformersConverter

    copy_files = [name for name in TOKENIZER_FILES if (checkpoint_dir / name).is_file()]
    if joint(checkpoint_dir):
        copy_files.remove(TOKENIZER_FILES[1])
    converter = TransformersConverter(str(checkpoint_dir), copy_files=copy_files)
    if not trained_start:
        converter.convert(str(out_dir), quantization=QUANTIZATION, force=True)
        return out_dir
    from ctranslate2.converters import transformers as loaders

    marian = loaders._MODEL_LOADERS["MarianConfig"]
    loaders._MODEL_LOADERS["MarianConfig"] = _trained_start_loader(loaders)()
    try:
        converter.convert(str(out_dir), quantization=QUANTIZATION, force=True)
    finally:
        loaders._MODEL_LOADERS["MarianConfig"] = marian
    return out_dir


def _trained_start_loader(loaders: Any) -> type:
    """CTranslate2's Marian loader without its two changes for a zero ``<pad>`` row: the row and its token stay, and
    the decoder starts from it (the Bart loader's decoder and vocabulary, the Marian loader's norms)."""

    class TrainedStartMarianLoader(loaders.MarianMTLoader):  # type: ignore[misc, name-defined]
        def get_model_spec(self, model: Any) -> Any:
            model.config.normalize_before = False
            model.config.normalize_embedding = False
            return loaders.BartLoader.get_model_spec(self, model)

        def set_config(self, config: Any, model: Any, tokenizer: Any) -> None:
            config.eos_token = tokenizer.eos_token
            config.unk_token = tokenizer.unk_token
            config.decoder_start_token = tokenizer.convert_ids_to_tokens(model.config.decoder_start_token_id)

        def set_decoder(self, spec: Any, decoder: Any) -> None:
            loaders.BartLoader.set_decoder(self, spec, decoder)

        def get_vocabulary(self, model: Any, tokenizer: Any) -> Any:
            return loaders.BartLoader.get_vocabulary(self, model, tokenizer)

    return TrainedStartMarianLoader
