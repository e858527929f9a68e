"""Session-wide fixtures: a tiny random Marian checkpoint and the bundle ``build.export`` makes of it.

Both are built from scratch in a few seconds (no download): the tokenizer is a small SentencePiece model
trained on the suite's own sentences (``tests/fixtures/pairs.zh-en.tsv``), the network a random ``MarianMTModel``
with the default model's structure (post-LN, swish, shared encoder/decoder embeddings, pad = last id = decoder
start, ``</s>`` = 0) but tiny dimensions and an output projection of its own (see ``_shape_random_weights``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import checkout_guard
from tests.fixture_corpus import fixture_pairs

TINY_VOCAB_PIECES = 2_500  # the fixture has ~1,400 distinct Chinese characters; SentencePiece needs room for them


def pytest_configure(config: pytest.Config) -> None:
    """Before any test module is imported: nothing the suite runs may open a file outside the checkout."""
    checkout_guard.install()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    violations = checkout_guard.GUARD.violations
    if violations:
        shown = "\n  ".join(sorted(set(violations))[:20])
        print(f"\n{len(violations)} read(s) outside the checkout {checkout_guard.CHECKOUT}:\n  {shown}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
TINY_SEED = 20261130


def _shape_random_weights(model, sources: dict, pad: int) -> None:  # type: ignore[no-untyped-def]
    """Turn a freshly initialised tiny Marian into one whose greedy outputs depend on the input and end.

    With every weight drawn at the default scale (std 0.02) the next-token log-probabilities are nearly
    flat (choices are near-ties) and every input gets the same output; ``</s>`` ends every output at once
    or never. So, keeping the layers near-identity (std 0.02):

    * token embeddings at std 0.1 and a separate output projection at std 0.3 make choices clear-cut;
    * cross-attention value/output projections at std 0.3 make the output depend on the source;
    * a linear probe fitted on the decoder's final hidden states along its own greedy outputs predicts the
      step number (the sinusoidal position survives the near-identity layers); ``</s>``'s output row becomes
      that probe and its bias the probe's offset, so ``</s>`` wins after about ``target_length`` tokens,
      sooner or later depending on the input.
    """
    import torch

    steps, target_length = 40, 15.0
    with torch.no_grad():
        model.model.shared.weight.mul_(0.1 / 0.02)
        model.lm_head.weight.mul_(0.3 / 0.02)
        for layer in model.model.decoder.layers:
            layer.encoder_attn.v_proj.weight.mul_(0.3 / 0.02)
            layer.encoder_attn.out_proj.weight.mul_(0.3 / 0.02)
        decoded = torch.full((sources["input_ids"].shape[0], 1), pad, dtype=torch.long)
        for _ in range(steps):
            logits = model(**sources, decoder_input_ids=decoded).logits[:, -1]
            logits[:, [0, pad]] = -torch.inf
            decoded = torch.cat([decoded, logits.argmax(-1, keepdim=True)], dim=1)
        hidden = model(**sources, decoder_input_ids=decoded[:, :steps], output_hidden_states=True)
        hidden = hidden.decoder_hidden_states[-1].double()
        rows = hidden.shape[0] * steps
        features = torch.cat([hidden.reshape(rows, -1), torch.ones(rows, 1, dtype=torch.float64)], dim=1)
        position = torch.arange(steps, dtype=torch.float64).repeat(hidden.shape[0])[:, None]
        ridge = 1e-2 * torch.eye(features.shape[1], dtype=torch.float64)  # LayerNorm outputs are collinear
        probe = torch.linalg.solve(features.T @ features + ridge, features.T @ position)[:, 0].float()
        model.lm_head.weight[0] = probe[:-1]  # the </s> logit grows by about one per step
        model.final_logits_bias[0, 0] = probe[-1] - target_length


def build_tiny_marian(out_dir: Path, seed: int = TINY_SEED) -> Path:
    """Write a random tiny MarianMTModel + MarianTokenizer files (an ordinary HF checkpoint) to ``out_dir``."""
    from transformers import MarianTokenizer

    from build.families.marian.configs import ModelShape, marian_config, new_model
    from build.training import vocab

    pairs = fixture_pairs()
    vocab.train_joint_sentencepiece([p.zh for p in pairs] + [p.en for p in pairs], out_dir, TINY_VOCAB_PIECES, seed=1)
    vocab_size = vocab.marian_vocab_size(out_dir)
    pad = vocab_size - 1
    shape = ModelShape(
        d_model=32, encoder_layers=2, decoder_layers=2, attention_heads=2, ffn_dim=64, dropout=0.0, max_positions=128
    )
    # an output projection of its own, so that </s>'s output row can be set without touching the input
    # embedding of the </s> that ends every source sentence (the default model ties the two)
    model = new_model(marian_config(vocab_size, shape, tie_word_embeddings=False), seed).eval()
    tokenizer = MarianTokenizer.from_pretrained(str(out_dir))
    sources = tokenizer([p.zh for p in pairs[:: len(pairs) // 16][:16]], padding=True, return_tensors="pt")
    _shape_random_weights(model, dict(sources), pad)
    model.save_pretrained(out_dir)
    return out_dir


def _one_torch_thread() -> None:
    """Tiny models gain nothing from threads, and on a busy 2-core machine two torch threads run ~10x slower."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_marian_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny Marian checkpoint folder (config, safetensors weights, source/target.spm, vocab.json)."""
    _one_torch_thread()
    return build_tiny_marian(tmp_path_factory.mktemp("tiny-marian"))


# Verification limits for the random tiny model. The FP32 checks stay as strict as for a trained model (the
# graphs must compute the same function). The INT8 checks are looser: the tiny model's next-token choices
# are closer calls than a trained model's, and its </s> output row is an outlier (the length probe), so
# 8-bit weights flip more of them, and one flip changes the rest of a greedy output (repeating outputs
# make that likely). Measured with the default quantization on an AVX2 CPU without VNNI: top-1 agreement
# 93%, greedy exact match 30% (per-tensor weights: 53% and 5%). The limits catch a broken or badly chosen
# quantization, not the last percent of fidelity.
TINY_THRESHOLDS_KW = {
    "fp32_max_abs_log_prob_diff": 1e-3,
    "fp32_greedy_exact_match": 1.0,
    "int8_top1_agreement": 0.75,
    "int8_greedy_exact_match": 0.15,
}


@pytest.fixture(scope="session")
def tiny_thresholds():  # type: ignore[no-untyped-def]
    from build.verify import VerifyThresholds

    return VerifyThresholds(**TINY_THRESHOLDS_KW)


@pytest.fixture(scope="session")
def tiny_bundle_dir(tiny_marian_dir: Path, tmp_path_factory: pytest.TempPathFactory, tiny_thresholds) -> Path:  # type: ignore[no-untyped-def]
    """``tiny_marian_dir`` exported by ``build.export.export_bundle`` into a verified INT8 bundle."""
    from build.export import export_bundle

    out_dir = tmp_path_factory.mktemp("tiny-bundle") / "tiny"
    export_bundle(tiny_marian_dir, out_dir, name="tiny", thresholds=tiny_thresholds)
    return out_dir
