"""The default model's training loop: data order, schedule, checkpoints and resumption (tiny shapes, seconds)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from build.training import train  # noqa: E402
from tests.fixture_corpus import fixture_pairs  # noqa: E402

TINY_SHAPE = train.ModelShape(
    d_model=16, encoder_layers=1, decoder_layers=1, attention_heads=2, ffn_dim=32, max_positions=64
)
TINY_TRAINING = train.TrainConfig(shape=TINY_SHAPE, batch_tokens=200, eval_pairs=4, threads=1, warmup_steps=5)


@pytest.fixture(autouse=True)
def _dev_pairs_from_the_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop's evaluations score the suite's own sentences, wherever (or whether) a corpus folder is."""
    monkeypatch.setattr(train.corpus, "dev_pairs", lambda directory=None: list(fixture_pairs()))


def _write_ids(path: Path, pairs: int, vocab_size: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    src_len = rng.integers(2, 20, pairs).astype(np.int32)
    tgt_len = rng.integers(2, 20, pairs).astype(np.int32)
    src = rng.integers(2, vocab_size - 1, int(src_len.sum())).astype(np.int32)
    tgt = rng.integers(2, vocab_size - 1, int(tgt_len.sum())).astype(np.int32)
    np.savez(path, src=src, tgt=tgt, src_len=src_len, tgt_len=tgt_len)


def _tiny_work_dir(tmp_path: Path, tiny_marian_dir: Path, pairs: int) -> Path:
    """A training work folder with the tiny model's tokenizer and ``pairs`` random encoded pairs."""
    work = tmp_path / "work"
    (work / "tokenizer").mkdir(parents=True)
    for name in ("source.spm", "target.spm", "vocab.json", "tokenizer_config.json"):
        (work / "tokenizer" / name).write_bytes((tiny_marian_dir / name).read_bytes())
    vocab_size = len(json.loads((tiny_marian_dir / "vocab.json").read_text(encoding="utf-8")))
    _write_ids(work / "train_ids.npz", pairs, vocab_size)
    return work


def test_every_pair_is_batched_once_per_epoch_under_the_budget_in_a_reproducible_order(tmp_path: Path) -> None:
    _write_ids(tmp_path / "ids.npz", 500, 100)
    batches = train.TokenBatches(tmp_path / "ids.npz", batch_tokens=120, seed=7)
    epoch = batches.epoch(0)
    seen = np.concatenate(epoch)
    assert sorted(seen.tolist()) == list(range(500))
    for batch in epoch:
        cost = (batches.src_len[batch] + batches.tgt_len[batch]).max() * len(batch)
        assert cost <= 120 or len(batch) == 1
    again = train.TokenBatches(tmp_path / "ids.npz", batch_tokens=120, seed=7).epoch(0)
    assert all(np.array_equal(a, b) for a, b in zip(epoch, again, strict=False))
    assert not all(np.array_equal(a, b) for a, b in zip(epoch, batches.epoch(1), strict=False))


def test_batch_tensors_shift_targets_behind_the_decoder_start_token(tmp_path: Path) -> None:
    _write_ids(tmp_path / "ids.npz", 10, 50)
    batches = train.TokenBatches(tmp_path / "ids.npz", batch_tokens=1000, seed=1)
    indices = np.array([0, 3])
    tensors = batches.tensors(indices, pad=49)
    for row, index in enumerate(indices):
        target = batches.tgt[batches.tgt_start[index] : batches.tgt_start[index] + batches.tgt_len[index]]
        n = len(target)
        assert tensors["labels"][row, :n].tolist() == target.tolist()
        assert tensors["decoder_input_ids"][row, 0] == 49
        assert tensors["decoder_input_ids"][row, 1:n].tolist() == target[:-1].tolist()
        assert (tensors["labels"][row, n:] == -100).all()
    assert (tensors["attention_mask"] == (tensors["input_ids"] != 49)).all()


def test_learning_rate_warms_up_linearly_then_decays_with_the_inverse_square_root() -> None:
    config = train.TrainConfig(peak_lr=1e-3, warmup_steps=100, rewarmup_steps=10)
    assert train.learning_rate(config, 50, None) == pytest.approx(5e-4)
    assert train.learning_rate(config, 100, None) == pytest.approx(1e-3)
    assert train.learning_rate(config, 400, None) == pytest.approx(5e-4)
    # after an approximate resume at step 400 the rate climbs back over rewarmup_steps
    assert train.learning_rate(config, 401, 400) == pytest.approx(train.learning_rate(config, 401, None) / 10)
    assert train.learning_rate(config, 411, 400) == pytest.approx(train.learning_rate(config, 411, None))


def test_bf16_autocast_only_where_the_cpu_computes_bfloat16_natively(tmp_path: Path) -> None:
    zen4 = tmp_path / "zen4"
    zen4.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\n")
    avx2 = tmp_path / "avx2"
    avx2.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n")
    assert train.cpu_has_native_bf16(zen4) and not train.cpu_has_native_bf16(avx2)
    assert not train.cpu_has_native_bf16(tmp_path / "missing")
    assert train.use_bf16_autocast("auto", native_bf16=True)
    assert not train.use_bf16_autocast("auto", native_bf16=False)
    assert train.use_bf16_autocast("bf16", native_bf16=False)
    assert not train.use_bf16_autocast("fp32", native_bf16=True)
    with pytest.raises(ValueError, match="precision must be one of auto, bf16, fp32; got 'fp16'"):
        train.use_bf16_autocast("fp16", native_bf16=True)


@pytest.mark.slow
def test_training_checkpoints_resume_exactly_and_from_the_small_tracked_copy(
    tmp_path: Path, tiny_marian_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = _tiny_work_dir(tmp_path, tiny_marian_dir, 200)
    tracked = tmp_path / "tracked"
    monkeypatch.setattr(train, "TRACKED_CHECKPOINT_DIR", tracked)
    config = TINY_TRAINING

    train.train(config, work, hours=0.0, fresh=True)  # stops after one step: evaluates and checkpoints
    state = torch.load(work / "state.pt", weights_only=False)["state"]
    assert state["step"] == 1 and len(state["evals"]) == 1
    assert (tracked / train.TRACKED_WEIGHTS).stat().st_size > 0
    assert json.loads((tracked / train.TRACKED_STATE).read_text())["step"] == 1

    train.train(config, work, hours=0.0, fresh=False)  # exact resume continues the data order
    state = torch.load(work / "state.pt", weights_only=False)["state"]
    assert (state["step"], state["batch"], state["rewarm_from"]) == (2, 2, None)

    (work / "state.pt").unlink()  # a new machine: only the tracked fp16 copy survives
    train.train(config, work, hours=0.0, fresh=False)
    state = torch.load(work / "state.pt", weights_only=False)["state"]
    assert (state["step"], state["rewarm_from"]) == (3, 2)

    final = train.finalize(config, work, tmp_path / "final", average_last=2)
    from transformers import MarianMTModel

    model = MarianMTModel.from_pretrained(final)
    assert model.config.d_model == TINY_SHAPE.d_model
    assert json.loads((final / "training.json").read_text())["steps"] == 3


def test_training_time_counts_the_steps_and_leaves_out_evaluation(
    tmp_path: Path, tiny_marian_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = _tiny_work_dir(tmp_path, tiny_marian_dir, 50)
    monkeypatch.setattr(train, "TRACKED_CHECKPOINT_DIR", tmp_path / "tracked")
    evaluation_seconds = 2.0

    def slow_evaluation(*_args: object, **_kwargs: object) -> dict[str, float]:
        time.sleep(evaluation_seconds)
        return {"bleu": 1.0, "chrf++": 2.0}

    monkeypatch.setattr(train, "greedy_bleu", slow_evaluation)
    config = TINY_TRAINING
    train.train(config, work, hours=0.0, fresh=True)  # one step, then an evaluation and a checkpoint

    state = torch.load(work / "state.pt", weights_only=False)["state"]
    assert 0 < state["train_seconds"] < evaluation_seconds  # the step counts (it used to be dropped), the eval not
    assert state["evals"][0]["train_hours"] == round(state["train_seconds"] / 3600, 3)


def test_the_cooldown_learning_rate_falls_linearly_to_zero() -> None:
    config = train.TrainConfig(warmup_steps=10)
    cooldown = {"from_step": 100, "steps": 4}
    rates = [train.learning_rate(config, step, None, cooldown) for step in range(101, 106)]
    plain = [train.learning_rate(config, step, None) for step in range(101, 106)]
    assert [round(rate / base, 6) for rate, base in zip(rates, plain, strict=True)] == [1.0, 0.75, 0.5, 0.25, 0.0]


def test_a_cooldown_branches_off_the_run_and_leaves_it_resumable(
    tmp_path: Path, tiny_marian_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = _tiny_work_dir(tmp_path, tiny_marian_dir, 200)
    tracked = tmp_path / "tracked"
    monkeypatch.setattr(train, "TRACKED_CHECKPOINT_DIR", tracked)
    config = TINY_TRAINING
    with pytest.raises(FileNotFoundError, match="train first"):
        train.train(config, work, hours=1.0, fresh=False, cooldown_steps=3)

    train.train(config, work, hours=0.0, fresh=True)  # the main run: one step
    main_weights = (work / "state.pt").read_bytes()
    train.train(config, work, hours=1.0, fresh=False, cooldown_steps=3)  # stops by itself after 3 steps

    branch = torch.load(work / "cooldown" / "state.pt", weights_only=False)["state"]
    assert branch["step"] == 4 and branch["cooldown"] == {"from_step": 1, "steps": 3}
    assert (work / "state.pt").read_bytes() == main_weights  # the main run is untouched ...
    assert json.loads((tracked / train.TRACKED_STATE).read_text())["step"] == 1  # ... and so is the tracked copy
    assert sorted(p.name for p in (work / "cooldown" / "average").iterdir()) == ["step-0000004.safetensors"]

    train.train(config, work, hours=1.0, fresh=False, cooldown_steps=3)  # already cooled: nothing more
    assert torch.load(work / "cooldown" / "state.pt", weights_only=False)["state"]["step"] == 4

    final = train.finalize(config, work, tmp_path / "final", average_last=2, from_cooldown=True)
    training = json.loads((final / "training.json").read_text())
    assert training["steps"] == 4 and training["cooldown"] == {"from_step": 1, "steps": 3}
