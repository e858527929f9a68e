"""Model families the build step exports: one module per family behind the small interface below.

A family knows how to recognise its checkpoint folders, load one into a ``Checkpoint``, and that checkpoint
knows how to write its FP32 ONNX graphs, compare them with its reference (FP32 vs the source model, INT8 vs
FP32), copy its tokenizer files into the bundle and describe itself in the manifest. ``build.export`` is the
generic pipeline over that interface (family -> FP32 graphs -> verify -> quantize -> verify -> bundle), so a
third family is one new module registered in ``FAMILIES``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from build.errors import ExportError
from handler.model.bundle import ModelSpec


class Checkpoint(Protocol):
    """A loaded source model, ready to be exported and verified."""

    @property
    def family(self) -> str: ...

    @property
    def folder(self) -> Path:
        """The local folder holding the source files."""
        ...

    @property
    def spec(self) -> ModelSpec: ...

    @property
    def training(self) -> dict[str, Any]:
        """The training record of our own checkpoints; {} for foreign ones."""
        ...

    def export_graphs(self, out_dir: Path) -> tuple[Path, Path]:
        """Write FP32 ``encoder.onnx`` and ``decoder.onnx`` into ``out_dir`` (external data allowed)."""
        ...

    def compare_fp32(self, fp32: tuple[Path, Path], sentences: Sequence[str]) -> tuple[Any, list[list[int]]]:
        """FP32 graphs vs the reference model: ``(verify.Figures, the graphs' greedy outputs)``."""
        ...

    def release_reference(self) -> None:
        """Drop the source model once the FP32 graphs have passed their check (memory for quantization)."""
        ...

    def compare_int8(
        self, fp32: tuple[Path, Path], int8: tuple[Path, Path], sentences: Sequence[str], fp32_greedy: list[list[int]]
    ) -> Any:
        """INT8 graphs vs FP32 graphs: ``verify.Figures``."""
        ...

    def copy_tokenizer(self, staging: Path) -> None:
        """Copy the tokenizer files the runtime needs into the bundle folder."""
        ...

    def manifest_sections(self) -> dict[str, Any]:
        """Top-level manifest keys this family adds ("family", "tokenizer", "decoding", ...)."""
        ...

    def default_normalization(self) -> str:
        """The input normalisation the runtime applies when the caller does not choose one."""
        ...


class Family(Protocol):
    @property
    def name(self) -> str: ...

    def recognises(self, folder: Path) -> bool:
        """Whether a local folder holds this family's checkpoint."""
        ...

    def load(self, model: str | Path) -> Checkpoint:
        """Load a folder (or, where the family supports it, a hub id)."""
        ...


def _families() -> dict[str, Family]:
    from build.families import csanmt, marian

    return {marian.FAMILY.name: marian.FAMILY, csanmt.FAMILY.name: csanmt.FAMILY}


def names() -> tuple[str, ...]:
    return tuple(_families())


def resolve(model: str | Path, family: str | None = None) -> Family:
    """The family named ``family``, or the one that recognises the folder ``model`` (CSANMT for ModelScope ids such
    as ``damo/nlp_csanmt_translation_zh2en``, Marian for other hub ids)."""
    families = _families()
    if family is not None:
        if family not in families:
            raise ExportError(f"unknown model family {family!r}; supported: {', '.join(families)}")
        return families[family]
    path = Path(model)
    if path.is_dir():
        for candidate in families.values():
            if candidate.recognises(path):
                return candidate
        raise ExportError(
            f"{path} is not a checkpoint folder of a supported family ({', '.join(families)}): a Marian folder has "
            "config.json, source.spm, target.spm and vocab.json; a ModelScope CSANMT folder has configuration.json, "
            "tf_ckpts/ckpt-0.*, bpe.zh, src_vocab.txt and trg_vocab.txt"
        )
    from build.hub_check import is_modelscope_id

    if is_modelscope_id(str(model)):
        return families["csanmt"]  # a ModelScope id: its loader downloads it (build.families.csanmt.download)
    if "csanmt" in str(model).lower():
        raise ExportError(
            f"{model} is not a local folder; CSANMT models come from ModelScope, not the Hugging Face hub: download "
            f"the folder first (e.g. `modelscope download {model} --local-dir DIR`), then pass MODEL=DIR"
        )
    return families["marian"]  # a hub id (or a missing folder: Marian's loader says which)
