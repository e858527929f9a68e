"""Train the embedded default zh→en Marian model on the licence-clean part of the shared corpus.

    python -m build.training.train [--hours H] [--work-dir .train] [--fresh]
    python -m build.training.train --finalize          # average checkpoints, write an ordinary Marian checkpoint
    python -m build.training.train --cooldown-steps N  # branch: N more steps with the learning rate decaying to 0
    python -m build.training.train --finalize --from-cooldown

The run is resumable: every ``checkpoint_minutes`` it writes the full training state (model, optimizer,
schedule, data position, RNG) to ``<work-dir>/state.pt`` and resumes from it exactly. It also writes a small
fp16 copy of the weights plus the tokenizer files to ``model_artifacts/training-checkpoint/`` (tracked by
git), from which a new machine resumes approximately (optimizer moments start afresh, with a short re-warm-up).
Touch ``<work-dir>/STOP`` (or send SIGTERM) to checkpoint and stop cleanly.

A cooldown (as in warmup-stable-decay schedules) branches off the exact training state into
``<work-dir>/cooldown/``: the learning rate decays linearly to zero over ``--cooldown-steps`` more steps, which
settles the weights much as checkpoint averaging does. The main run and the tracked checkpoint stay where they
were, so training can go on from them later; ``--finalize --from-cooldown`` builds the model from the branch.

On CPUs with native bfloat16 arithmetic (AVX512_BF16 or AMX) the forward pass runs under bfloat16 autocast
(weights, gradients and optimizer state stay float32): measured 1.5x faster on a Zen 4 EPYC. Elsewhere bfloat16
is emulated and slower, so ``--precision auto`` (the default) trains in float32 there.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from build import corpus
from build.families.marian.configs import ModelShape, marian_config, new_model
from build.training import vocab
from handler.config import REPO_ROOT

TRACKED_CHECKPOINT_DIR = REPO_ROOT / "model_artifacts" / "training-checkpoint"
TRACKED_WEIGHTS = "model.fp16.safetensors"
TRACKED_STATE = "trainer_state.json"


@dataclass(frozen=True)
class TrainConfig:
    vocab_size: int = 16_000  # SentencePiece pieces; the Marian vocabulary adds <pad>
    shape: ModelShape = ModelShape()
    peak_lr: float = 1e-3
    warmup_steps: int = 500
    rewarmup_steps: int = 200  # after an approximate resume (fresh optimizer moments)
    batch_tokens: int = 3_500  # padded (source + target) tokens per micro-batch
    accumulate: int = 1  # micro-batches per optimizer step
    label_smoothing: float = 0.1
    weight_decay: float = 1e-4
    clip_norm: float = 1.0
    max_tokens_per_side: int = 128
    checkpoint_minutes: float = 15.0
    eval_minutes: float = 20.0
    eval_pairs: int = 500  # first N pairs of the shared dev set, greedy, during training
    plateau_patience: int = 4  # evaluations without +0.3 BLEU before stopping
    average_last: int = 4  # checkpoints averaged by --finalize
    threads: int = 2
    seed: int = 20261130
    precision: str = "auto"  # "auto" (bf16 autocast where the CPU has native bf16), "bf16" or "fp32"


def log(message: str) -> None:
    print(time.strftime("%H:%M:%S"), message, flush=True)


# ----------------------------------------------------------------------------------------------- data
def prepare_data(config: TrainConfig, work: Path) -> tuple[Path, Path]:
    """Train (or reuse) the tokenizer and encode the training subset once; returns (tokenizer dir, data file)."""
    tokenizer_dir = work / "tokenizer"
    data_file = work / "train_ids.npz"
    tracked_tokenizer = TRACKED_CHECKPOINT_DIR / vocab.SOURCE_SPM
    if not (tokenizer_dir / vocab.VOCAB_JSON).exists():
        if tracked_tokenizer.exists():  # a new machine resuming: the tokenizer must be the one trained with
            tokenizer_dir.mkdir(parents=True, exist_ok=True)
            for name in (vocab.SOURCE_SPM, vocab.TARGET_SPM, vocab.VOCAB_JSON, vocab.TOKENIZER_CONFIG):
                (tokenizer_dir / name).write_bytes((TRACKED_CHECKPOINT_DIR / name).read_bytes())
            log(f"tokenizer restored from {TRACKED_CHECKPOINT_DIR}")
        else:
            pairs = corpus.training_pairs()
            log(f"training SentencePiece ({config.vocab_size} pieces) on {len(pairs)} pairs")
            texts = [p.zh for p in pairs] + [p.en for p in pairs]
            vocab.train_joint_sentencepiece(texts, tokenizer_dir, config.vocab_size, seed=config.seed)
    if not data_file.exists():
        pairs = corpus.training_pairs()
        processor = spm.SentencePieceProcessor(model_file=str(tokenizer_dir / vocab.SOURCE_SPM))
        src = processor.encode([p.zh for p in pairs])
        tgt = processor.encode([p.en for p in pairs])
        keep = [
            i
            for i in range(len(pairs))
            if 0 < len(src[i]) < config.max_tokens_per_side and 0 < len(tgt[i]) < config.max_tokens_per_side
        ]
        eos = 0
        src_flat = np.concatenate([np.array(src[i] + [eos], dtype=np.int32) for i in keep])
        tgt_flat = np.concatenate([np.array(tgt[i] + [eos], dtype=np.int32) for i in keep])
        src_len = np.array([len(src[i]) + 1 for i in keep], dtype=np.int32)
        tgt_len = np.array([len(tgt[i]) + 1 for i in keep], dtype=np.int32)
        counts = corpus.source_counts([pairs[i] for i in keep])
        np.savez(data_file, src=src_flat, tgt=tgt_flat, src_len=src_len, tgt_len=tgt_len)
        (work / "data_sources.json").write_text(json.dumps(counts, indent=2))
        log(f"encoded {len(keep)} of {len(pairs)} pairs ({src_len.sum()} source, {tgt_len.sum()} target tokens)")
    return tokenizer_dir, data_file


class TokenBatches:
    """Length-bucketed batches under a token budget, in an order fixed by (seed, epoch) for exact resumption."""

    def __init__(self, data_file: Path, batch_tokens: int, seed: int) -> None:
        data = np.load(data_file)
        self.src_len, self.tgt_len = data["src_len"], data["tgt_len"]
        self.src_start = np.concatenate([[0], np.cumsum(self.src_len)[:-1]])
        self.tgt_start = np.concatenate([[0], np.cumsum(self.tgt_len)[:-1]])
        self.src, self.tgt = data["src"], data["tgt"]
        self.batch_tokens, self.seed = batch_tokens, seed

    def __len__(self) -> int:
        return len(self.src_len)

    def epoch(self, epoch: int) -> list[np.ndarray]:
        rng = np.random.default_rng(self.seed + epoch)
        order = rng.permutation(len(self.src_len))
        lengths = np.maximum(self.src_len, self.tgt_len)
        batches: list[np.ndarray] = []
        pool = 200 * (self.batch_tokens // 30)  # sort within pools of roughly 200 batches
        for start in range(0, len(order), pool):
            chunk = order[start : start + pool]
            chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
            current: list[int] = []
            longest = 0
            for index in chunk:
                cost = int(self.src_len[index] + self.tgt_len[index])
                longest_after = max(longest, cost)
                if current and longest_after * (len(current) + 1) > self.batch_tokens:
                    batches.append(np.array(current))
                    current, longest_after = [], cost
                current.append(int(index))
                longest = longest_after
            if current:
                batches.append(np.array(current))
        rng.shuffle(batches)  # type: ignore[arg-type]
        return batches

    def tensors(self, indices: np.ndarray, pad: int) -> dict[str, torch.Tensor]:
        n = len(indices)
        max_src = int(self.src_len[indices].max())
        max_tgt = int(self.tgt_len[indices].max())
        input_ids = np.full((n, max_src), pad, dtype=np.int64)
        labels = np.full((n, max_tgt), -100, dtype=np.int64)
        decoder_input_ids = np.full((n, max_tgt), pad, dtype=np.int64)
        for row, index in enumerate(indices):
            s = self.src[self.src_start[index] : self.src_start[index] + self.src_len[index]]
            t = self.tgt[self.tgt_start[index] : self.tgt_start[index] + self.tgt_len[index]]
            input_ids[row, : len(s)] = s
            labels[row, : len(t)] = t
            decoder_input_ids[row, 1 : len(t)] = t[:-1]  # position 0 stays <pad>, Marian's start token
        return {
            "input_ids": torch.from_numpy(input_ids),
            "attention_mask": torch.from_numpy((input_ids != pad).astype(np.int64)),
            "decoder_input_ids": torch.from_numpy(decoder_input_ids),
            "labels": torch.from_numpy(labels),
        }


# ---------------------------------------------------------------------------------------------- model
def build_model(config: TrainConfig, vocab_size: int):  # type: ignore[no-untyped-def]
    return new_model(marian_config(vocab_size, config.shape), config.seed)


def learning_rate(
    config: TrainConfig, step: int, rewarm_from: int | None, cooldown: dict[str, int] | None = None
) -> float:
    """Linear warm-up to ``peak_lr`` then inverse square root; a short re-warm-up after approximate resumes.

    ``cooldown`` (``{"from_step", "steps"}``): the rate decays linearly to zero over those steps, the last step
    taking ``1/steps`` of the schedule's rate.
    """
    step = max(step, 1)
    lr = config.peak_lr * min(step / config.warmup_steps, math.sqrt(config.warmup_steps / step))
    if rewarm_from is not None and step - rewarm_from < config.rewarmup_steps:
        lr *= max(step - rewarm_from, 1) / config.rewarmup_steps
    if cooldown is not None:
        lr *= max(0, cooldown["from_step"] + cooldown["steps"] - step + 1) / cooldown["steps"]
    return lr


COOLDOWN_DIR = "cooldown"


PRECISIONS = ("auto", "bf16", "fp32")
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_has_native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU computes bfloat16 natively (otherwise torch emulates it, slower than float32)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return False
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return any(flag in flags for flag in NATIVE_BF16_FLAGS)


def use_bf16_autocast(precision: str, native_bf16: bool) -> bool:
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    return precision == "bf16" or (precision == "auto" and native_bf16)


# ------------------------------------------------------------------------------------------ evaluation
def greedy_bleu(model, tokenizer_dir: Path, pairs: list[corpus.Pair], batch_size: int = 32) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """sacreBLEU/chrF++ of greedy translations of ``pairs`` with the PyTorch model (training-time monitor)."""
    import sacrebleu

    processor = spm.SentencePieceProcessor(model_file=str(tokenizer_dir / vocab.SOURCE_SPM))
    pad = model.config.pad_token_id
    model.eval()
    hypotheses: list[str] = []
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i].zh))
    by_index: dict[int, str] = {}
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            ids = [processor.encode(pairs[i].zh)[: model.config.max_position_embeddings // 2] + [0] for i in chunk]
            width = max(len(x) for x in ids)
            input_ids = torch.tensor([x + [pad] * (width - len(x)) for x in ids])
            out = model.generate(
                input_ids=input_ids,
                attention_mask=(input_ids != pad).long(),
                num_beams=1,
                do_sample=False,
                max_new_tokens=min(256, 2 * width + 10),
            )
            for i, row in zip(chunk, out.tolist(), strict=False):
                by_index[i] = processor.decode([t for t in row if t not in (0, pad)])
    model.train()
    hypotheses = [by_index[i] for i in range(len(pairs))]
    references = [p.en for p in pairs]
    return {
        "bleu": round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2),
        "chrf++": round(sacrebleu.corpus_chrf(hypotheses, [references], word_order=2).score, 2),
    }


# ----------------------------------------------------------------------------------------- checkpoints
def atomic_torch_save(obj: object, path: Path) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def save_tracked_checkpoint(model, tokenizer_dir: Path, trainer_state: dict) -> None:  # type: ignore[no-untyped-def]
    """The small fp16 weights + tokenizer + state that git carries to the next machine."""
    TRACKED_CHECKPOINT_DIR.mkdir(parents=True, exist_ok=True)
    weights = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()}
    # tied tensors share storage; safetensors wants each stored once
    weights = {
        k: v
        for k, v in weights.items()
        if k not in ("lm_head.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight")
    }
    tmp = TRACKED_CHECKPOINT_DIR / (TRACKED_WEIGHTS + ".tmp")
    save_file(weights, str(tmp))
    os.replace(tmp, TRACKED_CHECKPOINT_DIR / TRACKED_WEIGHTS)
    for name in (vocab.SOURCE_SPM, vocab.TARGET_SPM, vocab.VOCAB_JSON, vocab.TOKENIZER_CONFIG):
        (TRACKED_CHECKPOINT_DIR / name).write_bytes((tokenizer_dir / name).read_bytes())
    (TRACKED_CHECKPOINT_DIR / TRACKED_STATE).write_text(json.dumps(trainer_state, indent=2))


def load_weights(model, weights: dict[str, torch.Tensor]) -> None:  # type: ignore[no-untyped-def]
    missing, unexpected = model.load_state_dict({k: v.float() for k, v in weights.items()}, strict=False)
    allowed_missing = {"lm_head.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"}
    if unexpected or set(missing) - allowed_missing:
        raise RuntimeError(f"checkpoint does not fit the model: missing {missing}, unexpected {unexpected}")
    model.tie_weights()


# ---------------------------------------------------------------------------------------------- train
def train(config: TrainConfig, work: Path, hours: float, fresh: bool, cooldown_steps: int = 0) -> None:
    """Train for ``hours`` (resuming unless ``fresh``); ``cooldown_steps``: run or resume the cooldown branch."""
    torch.set_num_threads(config.threads)
    work.mkdir(parents=True, exist_ok=True)
    if cooldown_steps and fresh:
        raise ValueError("a cooldown continues a training run; it cannot start fresh")
    branch = work / COOLDOWN_DIR if cooldown_steps else work
    if cooldown_steps and not (branch / "state.pt").exists() and not (work / "state.pt").exists():
        raise FileNotFoundError(f"a cooldown branches off {work / 'state.pt'}, which does not exist; train first")
    branch.mkdir(exist_ok=True)
    tokenizer_dir, data_file = prepare_data(config, work)
    vocab_size = vocab.marian_vocab_size(tokenizer_dir)
    pad = vocab_size - 1
    model = build_model(config, vocab_size)
    decay = [p for n, p in model.named_parameters() if p.ndim > 1 and "embed_positions" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1 and "embed_positions" not in n]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.peak_lr,
        betas=(0.9, 0.98),
        eps=1e-9,
    )
    batches = TokenBatches(data_file, config.batch_tokens, config.seed)
    dev = corpus.dev_pairs()[: config.eval_pairs]
    state_file = branch / "state.pt"
    resume_file = state_file if state_file.exists() or not cooldown_steps else work / "state.pt"
    state: dict = {"step": 0, "epoch": 0, "batch": 0, "train_seconds": 0.0, "evals": [], "rewarm_from": None}
    if resume_file.exists() and not fresh:
        saved = torch.load(resume_file, weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        state = saved["state"]
        torch.set_rng_state(saved["torch_rng"])
        random.setstate(saved["python_rng"])
        log(
            f"resumed exactly from {resume_file} at step {state['step']} "
            f"(epoch {state['epoch']}, batch {state['batch']})"
        )
        if cooldown_steps and state.get("cooldown") is None:
            state["cooldown"] = {"from_step": state["step"], "steps": cooldown_steps}
        if cooldown_steps:
            log(
                f"cooldown: learning rate to 0 over steps {state['cooldown']['from_step']}+{state['cooldown']['steps']}"
            )
    elif (TRACKED_CHECKPOINT_DIR / TRACKED_WEIGHTS).exists() and not fresh:
        load_weights(model, load_file(str(TRACKED_CHECKPOINT_DIR / TRACKED_WEIGHTS)))
        state = json.loads((TRACKED_CHECKPOINT_DIR / TRACKED_STATE).read_text())
        state["rewarm_from"] = state["step"]
        log(f"resumed approximately from {TRACKED_CHECKPOINT_DIR} at step {state['step']} (fresh optimizer moments)")
    else:
        log(f"fresh run: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, {len(batches)} pairs")
    (work / "config.json").write_text(json.dumps(dataclasses.asdict(config), indent=2))

    stop_file = work / "STOP"
    stop_file.unlink(missing_ok=True)
    stopping = {"signal": False}
    signal.signal(signal.SIGTERM, lambda *_: stopping.update(signal=True))

    def checkpoint(reason: str) -> None:
        atomic_torch_save(
            {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "state": state,
                "torch_rng": torch.get_rng_state(),
                "python_rng": random.getstate(),
            },
            state_file,
        )
        avg_dir = branch / "average"
        avg_dir.mkdir(exist_ok=True)
        save_file(
            {
                k: v.contiguous()
                for k, v in model.state_dict().items()
                if k not in ("lm_head.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight")
            },
            str(avg_dir / f"step-{state['step']:07d}.safetensors"),
        )
        if not cooldown_steps:  # the tracked copy follows the main run, from which training goes on
            save_tracked_checkpoint(model, tokenizer_dir, state)
        log(f"checkpoint ({reason}) at step {state['step']}")

    if state.get("cooldown") is not None and state["step"] >= sum(state["cooldown"].values()):
        log(f"the cooldown ended at step {state['step']}; finalize it with --finalize --from-cooldown")
        return
    bf16 = use_bf16_autocast(config.precision, cpu_has_native_bf16())
    log(f"precision: {'bfloat16 autocast' if bf16 else 'float32'} (--precision {config.precision})")
    model.train()
    session_start = time.time()
    last_checkpoint = last_eval = time.time()
    # training time: evaluations and checkpoints are excluded, both from the throughput window and from
    # state["train_seconds"], which banks the time since ``banked_at`` before each of them and at each progress line
    window_tokens, window_start, window_paused, window_loss, window_n = 0, time.time(), 0.0, 0.0, 0
    banked_at = time.time()
    deadline = session_start + hours * 3600
    epoch_batches = batches.epoch(state["epoch"])
    while True:
        if state["batch"] >= len(epoch_batches):
            state["epoch"] += 1
            state["batch"] = 0
            epoch_batches = batches.epoch(state["epoch"])
            log(f"epoch {state['epoch']} begins")
        lr = learning_rate(config, state["step"] + 1, state["rewarm_from"], state.get("cooldown"))
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad(set_to_none=True)
        for _ in range(config.accumulate):
            if state["batch"] >= len(epoch_batches):
                break
            tensors = batches.tensors(epoch_batches[state["batch"]], pad)
            state["batch"] += 1
            labels = tensors.pop("labels")
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = model(**tensors).logits
            loss = F.cross_entropy(
                logits.float().view(-1, logits.size(-1)),
                labels.view(-1),
                ignore_index=-100,
                label_smoothing=config.label_smoothing,
            )
            (loss / config.accumulate).backward()
            real = int((labels != -100).sum()) + int(tensors["attention_mask"].sum())
            window_tokens += real
            window_loss += loss.item()
            window_n += 1
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        optimizer.step()
        state["step"] += 1
        if state["step"] % 50 == 0:
            now = time.time()
            state["train_seconds"] += now - banked_at
            banked_at = now
            window_seconds = max(now - window_start - window_paused, 1e-9)
            rate = window_tokens / window_seconds
            left_in_epoch = (len(epoch_batches) - state["batch"]) / max(window_n / window_seconds, 1e-9)
            log(
                f"step {state['step']} epoch {state['epoch']} ({state['batch']}/{len(epoch_batches)}) "
                f"loss {window_loss / window_n:.3f} lr {lr:.2e} {rate:.0f} tok/s "
                f"trained {state['train_seconds'] / 3600:.2f} h | epoch ETA {left_in_epoch / 60:.0f} min, "
                f"session ends in {(deadline - now) / 60:.0f} min"
            )
            window_tokens, window_start, window_paused, window_loss, window_n = 0, now, 0.0, 0.0, 0
        cooled = state.get("cooldown") is not None and state["step"] >= sum(state["cooldown"].values())
        done = time.time() >= deadline or stop_file.exists() or stopping["signal"] or cooled
        if time.time() - last_eval >= config.eval_minutes * 60 or done:
            state["train_seconds"] += time.time() - banked_at
            began = time.time()
            scores = greedy_bleu(model, tokenizer_dir, dev)
            state["evals"].append(
                {"step": state["step"], "train_hours": round(state["train_seconds"] / 3600, 3), **scores}
            )
            log(
                f"dev (first {len(dev)}, greedy) at step {state['step']}: "
                f"BLEU {scores['bleu']} chrF++ {scores['chrf++']}"
            )
            last_eval = banked_at = time.time()
            window_paused += last_eval - began
            best = max(e["bleu"] for e in state["evals"])
            recent = state["evals"][-config.plateau_patience :]
            if (
                len(state["evals"]) > config.plateau_patience
                and max(e["bleu"] for e in recent) < best + 0.3
                and best not in [e["bleu"] for e in recent]
            ):
                log("dev BLEU has plateaued; stopping")
                done = True
        if time.time() - last_checkpoint >= config.checkpoint_minutes * 60 or done:
            state["train_seconds"] += time.time() - banked_at
            began = time.time()
            checkpoint("stop" if done else "periodic")
            last_checkpoint = banked_at = time.time()
            window_paused += last_checkpoint - began
        if done:
            break
    log(f"stopped at step {state['step']}; evaluations: {json.dumps(state['evals'])}")


def finalize(config: TrainConfig, work: Path, out: Path, average_last: int, from_cooldown: bool = False) -> Path:
    """Average the last checkpoints (or keep the last one if better) into an ordinary Marian checkpoint folder.

    ``from_cooldown``: the checkpoints and state of the cooldown branch (``<work>/cooldown``)."""
    torch.set_num_threads(config.threads)
    tokenizer_dir = work / "tokenizer"
    branch = work / COOLDOWN_DIR if from_cooldown else work
    vocab_size = vocab.marian_vocab_size(tokenizer_dir)
    files = sorted((branch / "average").glob("step-*.safetensors"))[-average_last:]
    if not files:
        raise FileNotFoundError(f"no checkpoints in {branch / 'average'}; train first")
    dev = corpus.dev_pairs()[: config.eval_pairs]
    last = build_model(config, vocab_size)
    load_weights(last, load_file(str(files[-1])))
    averaged = build_model(config, vocab_size)
    tensors = [load_file(str(f)) for f in files]
    load_weights(averaged, {k: sum(t[k] for t in tensors) / len(tensors) for k in tensors[0]})
    last_scores = greedy_bleu(last, tokenizer_dir, dev)
    avg_scores = greedy_bleu(averaged, tokenizer_dir, dev)
    log(f"last checkpoint {files[-1].name}: {last_scores}; average of {len(files)}: {avg_scores}")
    chosen, how = (averaged, f"average of {len(files)} checkpoints ({', '.join(f.stem for f in files)})")
    if last_scores["bleu"] > avg_scores["bleu"]:
        chosen, how = last, f"last checkpoint {files[-1].stem} (averaging scored lower)"
    out.mkdir(parents=True, exist_ok=True)
    chosen.save_pretrained(out)
    for name in (vocab.SOURCE_SPM, vocab.TARGET_SPM, vocab.VOCAB_JSON, vocab.TOKENIZER_CONFIG):
        (out / name).write_bytes((tokenizer_dir / name).read_bytes())
    state = torch.load(branch / "state.pt", weights_only=False)["state"] if (branch / "state.pt").exists() else {}
    sources = json.loads((work / "data_sources.json").read_text()) if (work / "data_sources.json").exists() else {}
    training = {
        "weights": how,
        "dev_first_pairs_greedy": {"pairs": len(dev), "last": last_scores, "averaged": avg_scores},
        "steps": state.get("step"),
        "epochs": state.get("epoch"),
        "train_hours": round(state.get("train_seconds", 0.0) / 3600, 2),
        "cooldown": state.get("cooldown"),
        "evals": state.get("evals", []),
        "config": dataclasses.asdict(config),
        "data": {
            name: {"pairs": count, "licence": corpus.ALLOWED_SOURCES[name].licence} for name, count in sources.items()
        },
    }
    (out / "training.json").write_text(json.dumps(training, indent=2))
    log(f"wrote {out} ({how})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m build.training.train", description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", type=Path, default=REPO_ROOT / ".train")
    parser.add_argument("--hours", type=float, default=3.0, help="train for this long in this run (default 3)")
    parser.add_argument("--fresh", action="store_true", help="ignore existing checkpoints and start over")
    parser.add_argument("--finalize", action="store_true", help="average checkpoints and write a Marian checkpoint")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / ".train" / "final")
    parser.add_argument("--average-last", type=int, default=TrainConfig.average_last)
    parser.add_argument(
        "--cooldown-steps",
        type=int,
        default=0,
        help="branch off the training state: this many more steps with the learning rate decaying to 0",
    )
    parser.add_argument("--from-cooldown", action="store_true", help="--finalize the cooldown branch")
    parser.add_argument("--threads", type=int, default=TrainConfig.threads)
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=TrainConfig.precision,
        help="forward pass precision; auto = bfloat16 autocast where the CPU has native bfloat16 (default auto)",
    )
    args = parser.parse_args(argv)
    config = TrainConfig(threads=args.threads, precision=args.precision)
    if args.cooldown_steps < 0:
        parser.error(f"--cooldown-steps must be 0 or more; got {args.cooldown_steps}")
    if args.finalize:
        finalize(config, args.work_dir, args.out, args.average_last, args.from_cooldown)
    else:
        train(config, args.work_dir, args.hours, args.fresh, args.cooldown_steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
