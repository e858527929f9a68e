"""The Marian family: a transformers ``MarianMTModel`` folder (or hub id) with its SentencePiece tokenizer.

Graphs: ``build.families.marian.graphs`` (the bundle contract in ``handler/model/bundle.py``); reference: transformers'
PyTorch model (``build.verify``); tokenizer files: ``source.spm``, ``target.spm``, ``vocab.json``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from build import verify
from build.errors import ExportError
from handler.model import bundle
from handler.model.bundle import ModelSpec

NAME = "marian"
TRAINING_RECORD = "training.json"  # written by build.training.train --finalize beside our own checkpoints
CONFIG_FILE = "config.json"


def resolve_folder(model: str | Path) -> Path:
    """A local checkpoint folder, or the snapshot folder of a Hugging Face hub id (downloaded if needed)."""
    path = Path(model)
    if path.is_dir():
        return path
    if path.exists():
        raise ExportError(f"{path} is a file; --model takes a checkpoint folder or a Hugging Face hub id")
    if str(model).startswith((".", "/")) or str(model).count("/") > 1:
        raise ExportError(f"checkpoint folder {path} does not exist")
    from huggingface_hub import snapshot_download

    from build.hub_check import download_hint

    try:
        return Path(snapshot_download(str(model)))
    except Exception as error:  # network, missing repo, auth: one message with the cause, and the way around it
        hint = download_hint(str(model))
        raise ExportError(
            f"cannot download {model!r} from the Hugging Face hub: {error}; to build it anyway, {hint}"
        ) from error


def spec_from(config: Any, tokenizer: Any) -> ModelSpec:
    """The runtime's view of a Marian config; refuses shapes the bundle format cannot express."""
    vocab_size = int(config.vocab_size)
    decoder_vocab = int(getattr(config, "decoder_vocab_size", None) or vocab_size)
    if decoder_vocab != vocab_size:
        raise ExportError(
            f"source and target vocabularies differ ({vocab_size} vs {decoder_vocab} entries); "
            "only Marian models with one shared vocabulary are supported"
        )
    if len(tokenizer) != vocab_size:
        raise ExportError(f"the tokenizer has {len(tokenizer)} entries but the model's vocabulary has {vocab_size}")
    heads = int(config.decoder_attention_heads)
    return ModelSpec(
        vocab_size=vocab_size,
        d_model=int(config.d_model),
        attention_heads=heads,
        head_dim=int(config.d_model) // heads,
        encoder_layers=int(config.encoder_layers),
        decoder_layers=int(config.decoder_layers),
        max_positions=int(config.max_position_embeddings),
        pad_id=int(config.pad_token_id),
        eos_id=int(config.eos_token_id),
        unk_id=int(tokenizer.unk_token_id),
        decoder_start_id=int(config.decoder_start_token_id),
    )


@dataclass(frozen=True)
class LoadedCheckpoint:
    model: Any  # transformers MarianMTModel, eval mode
    tokenizer: Any  # transformers MarianTokenizer
    folder: Path  # local folder holding the files (a hub id is downloaded first)
    spec: ModelSpec
    training: dict[str, Any] = field(default_factory=dict)
    family: str = NAME

    def export_graphs(self, out_dir: Path) -> tuple[Path, Path]:
        from build.families.marian.graphs import export_graphs

        return export_graphs(self.model, out_dir)

    def compare_fp32(self, fp32: tuple[Path, Path], sentences: Sequence[str]) -> tuple[verify.Figures, list[list[int]]]:
        return verify.compare_fp32_with_pytorch(self.model, self.tokenizer, *fp32, self.spec, tuple(sentences))

    def release_reference(self) -> None:
        return None  # a Marian model is small, and callers of load_checkpoint keep using it

    def compare_int8(
        self, fp32: tuple[Path, Path], int8: tuple[Path, Path], sentences: Sequence[str], fp32_greedy: list[list[int]]
    ) -> verify.Figures:
        return verify.compare_int8_with_fp32(
            fp32, int8, self.tokenizer, self.spec, tuple(sentences), fp32_greedy=fp32_greedy
        )

    def joint_sentencepiece(self) -> bool:
        """Whether the checkpoint's two SentencePiece models are the same file (a joint vocabulary's): the bundle
        then stores ``source.spm`` once and its manifest says so (``bundle.TARGET_SPM_KEY``)."""
        source, target = (self.folder / bundle.SOURCE_SPM).read_bytes(), (self.folder / bundle.TARGET_SPM).read_bytes()
        return source == target

    def copy_tokenizer(self, staging: Path) -> None:
        joint = self.joint_sentencepiece()
        for file_name in bundle.TOKENIZER_FILES:
            if not (joint and file_name == bundle.TARGET_SPM):
                shutil.copyfile(self.folder / file_name, staging / file_name)

    def manifest_sections(self) -> dict[str, Any]:
        # a manifest without "family" is Marian's (bundle format 1 as before)
        return {"tokenizer": {bundle.TARGET_SPM_KEY: bundle.SOURCE_SPM}} if self.joint_sentencepiece() else {}

    def default_normalization(self) -> str:
        # our own models are trained on NFKC-normalised text (build.training.train); foreign checkpoints are not
        return bundle.NORMALIZATION_NFKC if self.training else bundle.NORMALIZATION_NONE


def load_checkpoint(model: str | Path) -> LoadedCheckpoint:
    """Load a MarianMTModel and its MarianTokenizer (one shared vocabulary) from a folder or hub id."""
    folder = resolve_folder(model)
    if (folder / "target_vocab.json").exists():
        raise ExportError(
            f"{folder} has a separate target vocabulary (target_vocab.json); only Marian models with one shared "
            f"vocabulary ({bundle.VOCAB_JSON}) are supported"
        )
    missing = [name for name in bundle.TOKENIZER_FILES if not (folder / name).is_file()]
    if missing:
        raise ExportError(f"{folder} lacks the Marian tokenizer files {', '.join(missing)}")
    from transformers import MarianMTModel, MarianTokenizer

    tokenizer = MarianTokenizer.from_pretrained(str(folder))
    if getattr(tokenizer, "separate_vocabs", False):
        raise ExportError(f"{folder} uses separate source and target vocabularies; only a shared one is supported")
    loaded = MarianMTModel.from_pretrained(str(folder)).eval()
    training_file = folder / TRAINING_RECORD
    training = json.loads(training_file.read_text(encoding="utf-8")) if training_file.is_file() else {}
    return LoadedCheckpoint(loaded, tokenizer, folder, spec_from(loaded.config, tokenizer), training)


class MarianFamily:
    name = NAME

    def recognises(self, folder: Path) -> bool:
        return (folder / CONFIG_FILE).is_file() and any((folder / name).is_file() for name in bundle.TOKENIZER_FILES)

    def load(self, model: str | Path) -> LoadedCheckpoint:
        return load_checkpoint(model)


FAMILY = MarianFamily()
