"""bench.studies.static_activations on the shipped bundle: the rewrite, its calibrated scales, batch invariance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from bench.studies import static_activations
from handler.config import RuntimeConfig
from handler.model import bundle
from handler.model.loader import load_model
from handler.service import TranslateOptions, TranslationService

SHIPPED = Path("model_artifacts/default")


@pytest.fixture(scope="module")
def static_bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    out = tmp_path_factory.mktemp("static") / "bundle"
    assert static_activations.main([str(SHIPPED), "--out", str(out), "--calibration-sentences", "16"]) == 0
    return out, static_activations.calibrate(SHIPPED, static_activations.calibration_sentences(16))


def test_every_per_row_quantization_becomes_one_calibrated_scale(
    static_bundle: tuple[Path, dict[str, np.ndarray]],
) -> None:
    out, observed = static_bundle
    for name in (bundle.ENCODER_ONNX, bundle.DECODER_ONNX):
        before = onnx.load(str(SHIPPED / name), load_external_data=False)
        after = onnx.load(str(out / name), load_external_data=False)
        blocks = static_activations.per_row_blocks(before)
        assert blocks and not static_activations.per_row_blocks(after)
        assert not [node for node in after.graph.node if node.op_type in ("ReduceMax", "Abs")]
        weights = {tensor.name: tensor for tensor in after.graph.initializer}
        for block in blocks:
            scale = numpy_helper.to_array(weights[f"{block['source']}_static_scale"])
            assert scale == pytest.approx(observed[block["source"]].max() / 127.0, rel=1e-6)
        products = [node for node in after.graph.node if node.op_type == "MatMulIntegerToFloat"]
        # every product takes its activation's static scale; no row-scale Mul is left after it
        assert products and all(node.input[2].endswith("_static_scale") for node in products)
        assert len(after.graph.node) < len(before.graph.node) - 5 * len(blocks)


def test_the_static_bundle_loads_translates_and_is_batch_invariant(
    static_bundle: tuple[Path, dict[str, np.ndarray]],
) -> None:
    out, _ = static_bundle
    config = RuntimeConfig(bundle_dir=out, threads=1)  # load_model checks every file against the manifest's hashes
    service = TranslationService(load_model(config), config)
    sentences = [
        "今天天气很好，我们去公园散步吧。",
        "请问最近的地铁站在哪里？",
        "他昨天晚上十点才回家。",
        "这个问题很难回答。",
    ]
    options = TranslateOptions(beam_size=4)
    alone = [service.translate(text, options) for text in sentences]
    together = service.translate_many(sentences, options)
    assert all(text.strip() and text.isascii() for text in alone)
    assert together == alone
