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
"""

from __future__ import annotations

from pathlib import Path

QUANTIZATION = "int8"
TOKENIZER_FILES = ("source.spm", "target.spm")


def _weights(checkpoint_dir: Path) -> list[Path]:
    return sorted(checkpoint_dir.glob("*.safetensors")) + sorted(checkpoint_dir.glob("*.bin"))


def is_current(checkpoint_dir: Path, out_dir: Path) -> bool:
    model = out_dir / "model.bin"
    if not model.is_file():
        return False
    newest = max((path.stat().st_mtime for path in _weights(checkpoint_dir)), default=0.0)
    return model.stat().st_mtime >= newest


def joint(folder: Path) -> bool:
    """Whether ``folder``'s two SentencePiece models are the same file."""
    source, target = (folder / name for name in TOKENIZER_FILES)
    return source.is_file() and target.is_file() and source.read_bytes() == target.read_bytes()


def convert(checkpoint_dir: Path, out_dir: Path, *, force: bool = False) -> Path:
    """``out_dir`` with the INT8 CTranslate2 model of the Marian checkpoint in ``checkpoint_dir``."""
    if not force and is_current(checkpoint_dir, out_dir):
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
    converter.convert(str(out_dir), quantization=QUANTIZATION, force=True)
    return out_dir
