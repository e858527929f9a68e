"""The FP32 graphs of ``build.families.marian.graphs`` compute what transformers' MarianMTModel computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from build import verify
from build.families.marian import LoadedCheckpoint, load_checkpoint
from build.families.marian.graphs import export_graphs
from handler.model import bundle
from handler.model.decoding import greedy_search
from handler.model.families.marian.sessions import OnnxMarian

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def checkpoint(tiny_marian_dir: Path) -> LoadedCheckpoint:
    return load_checkpoint(tiny_marian_dir)


@pytest.fixture(scope="module")
def fp32_graphs(checkpoint: LoadedCheckpoint, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return export_graphs(checkpoint.model, tmp_path_factory.mktemp("fp32"))


@pytest.fixture(scope="module")
def fp32_model(fp32_graphs: tuple[Path, Path], checkpoint: LoadedCheckpoint) -> OnnxMarian:
    return OnnxMarian(*fp32_graphs, checkpoint.spec)


SENTENCES = [
    "这个多少钱？",
    "我明天早上八点去机场接你。",
    "联合国大会呼吁各会员国加强合作，共同应对气候变化带来的挑战。",
    "谢谢。",
    "Python 是一种广泛使用的编程语言。",
]


def test_greedy_equals_transformers_generate_one_sentence_at_a_time(
    checkpoint: LoadedCheckpoint, fp32_model: OnnxMarian
) -> None:
    for sentence in SENTENCES:
        batch = verify.SourceBatch.encode(checkpoint.tokenizer, [sentence], checkpoint.spec.max_positions)
        expected = verify.pytorch_greedy(checkpoint.model, batch, checkpoint.spec, max_new_tokens=48)
        found = greedy_search(fp32_model, batch.input_ids, batch.attention_mask, 48)
        assert found == expected, sentence


def test_greedy_equals_transformers_generate_on_a_padded_batch(
    checkpoint: LoadedCheckpoint, fp32_model: OnnxMarian
) -> None:
    batch = verify.SourceBatch.encode(checkpoint.tokenizer, SENTENCES, checkpoint.spec.max_positions)
    assert (batch.attention_mask == 0).any()  # the batch really is padded
    expected = verify.pytorch_greedy(checkpoint.model, batch, checkpoint.spec, max_new_tokens=48)
    found = greedy_search(fp32_model, batch.input_ids, batch.attention_mask, 48)
    assert found == expected
    lengths = {len(tokens) for tokens in found}
    assert len(lengths) > 2 and max(lengths) > 0  # the fixture's outputs vary in length


def test_teacher_forced_log_probs_match_within_tolerance(checkpoint: LoadedCheckpoint, fp32_model: OnnxMarian) -> None:
    batch = verify.SourceBatch.encode(checkpoint.tokenizer, SENTENCES, checkpoint.spec.max_positions)
    rng = np.random.default_rng(0)
    decoder_inputs = rng.integers(2, checkpoint.spec.vocab_size - 1, size=(len(SENTENCES), 12))
    decoder_inputs[:, 0] = checkpoint.spec.decoder_start_id
    expected = verify.pytorch_log_probs(checkpoint.model, batch, decoder_inputs)
    found = verify.onnx_log_probs(fp32_model, batch, decoder_inputs)
    assert found.shape == expected.shape == (len(SENTENCES), 12, checkpoint.spec.vocab_size)
    assert np.abs(found - expected).max() < 1e-4
    # rows are normalised log-probabilities
    np.testing.assert_allclose(np.exp(found).sum(axis=-1), 1.0, rtol=1e-4)


def test_first_step_takes_a_zero_length_past_and_returns_length_one(
    checkpoint: LoadedCheckpoint, fp32_model: OnnxMarian
) -> None:
    spec = checkpoint.spec
    batch = verify.SourceBatch.encode(checkpoint.tokenizer, SENTENCES[:2], spec.max_positions)
    cross = fp32_model.encode(batch.input_ids, batch.attention_mask)
    assert [array.shape for array in cross] == [(2, spec.attention_heads, batch.input_ids.shape[1], spec.head_dim)] * (
        2 * spec.decoder_layers
    )
    past = fp32_model.empty_past(2)
    assert past[0].shape == (2, spec.attention_heads, 0, spec.head_dim)
    start = np.full((2, 1), spec.decoder_start_id, dtype=np.int64)
    log_probs, present = fp32_model.step(start, batch.attention_mask, past, cross)
    assert log_probs.shape == (2, spec.vocab_size)
    assert all(array.shape == (2, spec.attention_heads, 1, spec.head_dim) for array in present)
    expected = verify.pytorch_log_probs(checkpoint.model, batch, start)[:, 0]
    assert np.abs(log_probs - expected).max() < 1e-4


def test_the_last_position_is_usable(checkpoint: LoadedCheckpoint, fp32_model: OnnxMarian) -> None:
    """A past of max_positions - 1 tokens puts the new token at the last sinusoidal position."""
    spec = checkpoint.spec
    batch = verify.SourceBatch.encode(checkpoint.tokenizer, SENTENCES[:1], spec.max_positions)
    decoder_inputs = np.full((1, spec.max_positions), 5, dtype=np.int64)
    decoder_inputs[:, 0] = spec.decoder_start_id
    expected = verify.pytorch_log_probs(checkpoint.model, batch, decoder_inputs)
    found = verify.onnx_log_probs(fp32_model, batch, decoder_inputs)
    assert np.abs(found[:, -1] - expected[:, -1]).max() < 1e-4


def _initializers(graph: onnx.GraphProto) -> dict[str, onnx.TensorProto]:
    return {tensor.name: tensor for tensor in graph.initializer}


def test_projections_are_matmuls_on_initializers_and_embeddings_are_gathers(
    checkpoint: LoadedCheckpoint, fp32_graphs: tuple[Path, Path]
) -> None:
    config = checkpoint.model.config
    encoder, decoder = (onnx.load(str(path)) for path in fp32_graphs)
    expected_matmuls = {
        # q, k, v, out, fc1, fc2 per encoder layer + the cross-attention k, v of every decoder layer
        "encoder": 6 * config.encoder_layers + 2 * config.decoder_layers,
        # self q, k, v, out + cross q, out + fc1, fc2 per decoder layer + the output projection
        "decoder": 8 * config.decoder_layers + 1,
    }
    for name, model in (("encoder", encoder), ("decoder", decoder)):
        weights = _initializers(model.graph)
        with_weight = [n for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in weights]
        assert len(with_weight) == expected_matmuls[name], name
        assert not [n for n in model.graph.node if n.op_type == "Gemm"], name
        table = [config.vocab_size, config.d_model]
        embedding = [
            n
            for n in model.graph.node
            if n.op_type == "Gather" and n.input[0] in weights and list(weights[n.input[0]].dims) == table
        ]
        assert len(embedding) == 1, name
    decoder_weights = _initializers(decoder.graph)
    lm_head = [
        n
        for n in decoder.graph.node
        if n.op_type == "MatMul"
        and n.input[1] in decoder_weights
        and list(decoder_weights[n.input[1]].dims) == [config.d_model, config.vocab_size]
    ]
    assert len(lm_head) == 1


def test_graph_names_follow_the_bundle_contract(fp32_graphs: tuple[Path, Path], checkpoint: LoadedCheckpoint) -> None:
    layers = checkpoint.spec.decoder_layers
    encoder, decoder = (onnx.load(str(path)) for path in fp32_graphs)
    cross = [name for i in range(layers) for name in (bundle.cross_key(i), bundle.cross_value(i))]
    past = [name for i in range(layers) for name in (bundle.past_key(i), bundle.past_value(i))]
    present = [name for i in range(layers) for name in (bundle.present_key(i), bundle.present_value(i))]
    assert [i.name for i in encoder.graph.input] == [bundle.INPUT_IDS, bundle.ATTENTION_MASK]
    assert [o.name for o in encoder.graph.output] == cross
    assert [i.name for i in decoder.graph.input] == [bundle.INPUT_IDS, bundle.ENCODER_ATTENTION_MASK, *past, *cross]
    assert [o.name for o in decoder.graph.output] == [bundle.LOG_PROBS, *present]
    assert fp32_graphs[0].name == bundle.ENCODER_ONNX and fp32_graphs[1].name == bundle.DECODER_ONNX
