"""The converted tiny CSANMT computes what modelscope's own TensorFlow code computes on the same checkpoint.

GIVEN a tiny random CSANMT written by modelscope's model code (``csanmt_tiny_dir``)
WHEN the converter reads it (PyTorch network) and exports it (FP32 ONNX graphs)
THEN encoder states, the semantic vector and teacher-forced log-probabilities on a padded batch of unequal
lengths agree with modelscope's graph functions within 1e-4, and the verification tokenizer gives the
pipeline's ``preprocess`` ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.csanmt import oracle

pytestmark = pytest.mark.slow

TOLERANCE = 1e-4
# unequal lengths (a padded batch), out-of-vocabulary words, digits, Latin words, punctuation, and a sentence
# longer than 2 * max_relative_dis pieces (the relative positions clip)
SENTENCES = (
    "我们喜欢机器翻译。",
    "你好！",
    "他在 2024 年去了北京，今天天气很好，我们去公园散步吧。",
    "这是一个未登录词：量子纠缠 quantum。",
)
# target ids per row (EOS 0 last): unequal lengths; the pipeline's own beams are degenerate on a random model
TARGETS = ((5, 9, 3, 12, 7, 0), (8, 0), (4, 4, 11, 6, 2, 10, 13, 3, 0), (15, 1, 0))


def _ours(source_rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """The bundle's encoder inputs for pipeline ids: EOS 0 appended, padded with 0, mask over tokens + EOS."""
    width = max(len(row) for row in source_rows) + 1
    ids = np.zeros((len(source_rows), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for index, row in enumerate(source_rows):
        ids[index, : len(row)] = row
        mask[index, : len(row) + 1] = 1
    return ids, mask


@pytest.fixture(scope="module")
def parity(csanmt_tiny_dir: Path, csanmt_checkpoint: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    sources = [csanmt_checkpoint.tokenizer.ids(sentence) for sentence in SENTENCES]
    expected = oracle.reference(csanmt_tiny_dir, sources, TARGETS, tmp_path_factory.mktemp("csanmt-reference"))
    ids, mask = _ours(sources)
    return {"sources": sources, "expected": expected, "ids": ids, "mask": mask}


def _max_diff(found: np.ndarray, expected: np.ndarray) -> float:
    assert found.shape == expected.shape
    return float(np.abs(found - expected).max())


def test_the_batch_is_padded_and_reaches_the_relative_clipping(parity: dict[str, Any], csanmt_checkpoint: Any) -> None:
    lengths = parity["mask"].sum(axis=1)
    assert len(set(lengths.tolist())) == len(SENTENCES)
    assert lengths.max() > 2 * csanmt_checkpoint.config.max_relative_dis + 1
    unk = csanmt_checkpoint.config.src_vocab_size - 1
    assert any(unk in row for row in parity["sources"]), "no out-of-vocabulary piece in the batch"


def test_pytorch_encoder_states_and_semantic_vector_match_modelscope(
    parity: dict[str, Any], csanmt_checkpoint: Any
) -> None:
    import torch

    with torch.inference_mode():
        states, semantic = csanmt_checkpoint.network.encode(
            torch.from_numpy(parity["ids"]), torch.from_numpy(parity["mask"])
        )
    expected = parity["expected"]
    assert _max_diff(states.numpy(), expected["encoder_states"]) < TOLERANCE  # padded rows included
    assert _max_diff(semantic.numpy(), expected["semantic_vector"]) < TOLERANCE


def test_onnx_encoder_outputs_match_modelscope(
    parity: dict[str, Any], csanmt_checkpoint: Any, csanmt_fp32_graphs: tuple[Path, Path]
) -> None:
    from build.families.csanmt import RuntimeGraphs
    from build.verify import SourceBatch
    from handler.model.bundle import ENCODER_STATES, SEMANTIC_VECTOR

    graphs = RuntimeGraphs(*csanmt_fp32_graphs, csanmt_checkpoint.spec)
    encoded = graphs.encode(SourceBatch(parity["ids"], parity["mask"]))
    expected = parity["expected"]
    assert _max_diff(encoded[ENCODER_STATES], expected["encoder_states"]) < TOLERANCE
    assert _max_diff(encoded[SEMANTIC_VECTOR], expected["semantic_vector"]) < TOLERANCE


def test_pytorch_teacher_forced_log_probs_match_modelscope(parity: dict[str, Any], csanmt_checkpoint: Any) -> None:
    import torch

    expected = parity["expected"]
    with torch.inference_mode():
        found = csanmt_checkpoint.network.teacher_forced(
            torch.from_numpy(parity["ids"]), torch.from_numpy(parity["mask"]), torch.from_numpy(expected["targets"])
        ).numpy()
    assert _max_diff(found, expected["log_probs"]) < TOLERANCE


def test_onnx_step_by_step_log_probs_match_modelscope(
    parity: dict[str, Any], csanmt_checkpoint: Any, csanmt_fp32_graphs: tuple[Path, Path]
) -> None:
    """The decoder graph, one step at a time with its KV cache, gives modelscope's all-at-once log-probs."""
    from build.families.csanmt import RuntimeGraphs
    from build.verify import SourceBatch

    expected = parity["expected"]
    targets = expected["targets"]
    previous = np.concatenate([np.zeros((targets.shape[0], 1), dtype=np.int64), targets[:, :-1]], axis=1)
    graphs = RuntimeGraphs(*csanmt_fp32_graphs, csanmt_checkpoint.spec)
    found = graphs.steps(SourceBatch(parity["ids"], parity["mask"]), previous)
    assert _max_diff(found, expected["log_probs"]) < TOLERANCE
    # the log-probabilities are not trivially close: rows differ between positions and sentences
    assert float(np.abs(np.diff(expected["log_probs"], axis=1)).max()) > 0.1


def test_verification_tokenizer_gives_the_pipelines_preprocess_ids(
    csanmt_tiny_dir: Path, csanmt_checkpoint: Any, csanmt_pipeline: Any
) -> None:
    texts = [*SENTENCES, "我们喜欢翻译<SENT_SPLIT>你好，世界！ Hello 123"]
    results = csanmt_pipeline(csanmt_tiny_dir, texts, beam_size=1)
    for text, result in zip(texts, results, strict=True):
        sentences = text.split("<SENT_SPLIT>")
        batch = csanmt_checkpoint.tokenizer.batch(sentences, csanmt_checkpoint.spec.max_positions)
        expected = np.asarray(result["input_ids"])
        # the pipeline's ids have no EOS column; ours end in EOS 0 (and pad with 0)
        assert batch.input_ids[:, : expected.shape[1]].tolist() == expected.tolist()
        assert (batch.input_ids[:, expected.shape[1] :] == 0).all()
        assert batch.attention_mask.sum(axis=1).tolist() == [(row != 0).sum() + 1 for row in expected]
