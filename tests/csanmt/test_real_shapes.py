"""The converter's variable list at the real model's shapes, and the full-size benchmark checkpoint's vocabularies.

GIVEN the real damo/nlp_csanmt_translation_zh2en configuration (bench.pipeline.csanmt_full_size.CsanmtShape's defaults)
THEN the converter expects modelscope's 511 inference variables and 569,555,456 parameters (the counts of
modelscope's graph at that configuration, as the random full-size checkpoint confirms), and the generator's
vocabularies have the real sizes with ``</s>`` first and ``<unk>`` last.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.pipeline.csanmt_full_size import CsanmtShape, full_size_vocabularies
from build.families.csanmt.checkpoint import CsanmtConfig, expected_variables


def test_the_real_configuration_implies_modelscopes_511_variables() -> None:
    config = CsanmtConfig.from_model_section(CsanmtShape().model_config(), Path("configuration.json"))
    variables = expected_variables(config)
    assert len(variables) == 511
    assert sum(int(np.prod(shape)) for shape in variables.values()) == 569_555_456
    semantic = sum(int(np.prod(shape)) for name, shape in variables.items() if "mini_xlm_encoder" in name)
    assert round(semantic / 1e6, 1) == 51.5  # the semantic encoder, as the shared README counts it
    assert variables["NmtModel/mini_xlm_encoder/layer_3/encoder_self_attention/rpr_k"] == (33, 64)


def test_the_full_size_vocabularies_have_the_real_sizes() -> None:
    shape = CsanmtShape()
    source, target, codes = full_size_vocabularies(shape)
    assert len(source) == len(set(source)) == shape.src_vocab_size
    assert len(target) == len(set(target)) == shape.trg_vocab_size
    assert (source[0], source[-1], target[0], target[-1]) == ("</s>", "<unk>", "</s>", "<unk>")
    assert codes.startswith("#version: 0.2\n")
