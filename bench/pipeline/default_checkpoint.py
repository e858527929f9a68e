"""A transformers Marian folder of the default model's architecture, for the engines that need one.

``model_artifacts/training-checkpoint`` holds the default model's training run as git carries it: fp16 weights
without their tied copies, the tokenizer files and the trainer state, but no ``config.json``. ``write`` rebuilds
an ordinary ``MarianMTModel`` folder from it (``build.training.train``'s own model shape and loader), which transformers
loads and CTranslate2's converter converts.

These weights are the main training run's latest checkpoint (its step is in ``trainer_state.json``), not the
cooldown branch that the shipped bundle ``model_artifacts/default`` was exported from: same architecture and
vocabulary, different values. Speed and memory with forced output lengths depend on the shapes only; the
translations of the two differ.
"""

from __future__ import annotations

import json
from pathlib import Path

from handler.config import REPO_ROOT

TRAINING_CHECKPOINT = REPO_ROOT / "model_artifacts" / "training-checkpoint"


def training_step(source: Path = TRAINING_CHECKPOINT) -> int | None:
    state = source / "trainer_state.json"
    if not state.is_file():
        return None
    step = json.loads(state.read_text(encoding="utf-8")).get("step")
    return int(step) if isinstance(step, int) else None


def write(out_dir: Path, source: Path = TRAINING_CHECKPOINT, *, force: bool = False) -> Path:
    """``out_dir`` as a ``MarianMTModel`` folder (config, safetensors, tokenizer files); cached unless ``force``."""
    weights = source / "model.fp16.safetensors"
    if not weights.is_file():
        raise FileNotFoundError(f"{weights} is missing: the default model's training checkpoint is not in the checkout")
    done = out_dir / "model.safetensors"
    if not force and done.is_file() and done.stat().st_mtime >= weights.stat().st_mtime:
        return out_dir
    from safetensors.torch import load_file

    from build.training import train, vocab

    config = train.TrainConfig()
    model = train.build_model(config, vocab.marian_vocab_size(source))
    train.load_weights(model, load_file(str(weights)))
    out_dir.mkdir(parents=True, exist_ok=True)
    model.eval().save_pretrained(out_dir)
    for name in (vocab.SOURCE_SPM, vocab.TARGET_SPM, vocab.VOCAB_JSON, vocab.TOKENIZER_CONFIG):
        (out_dir / name).write_bytes((source / name).read_bytes())
    return out_dir
