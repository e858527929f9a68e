"""Fixtures of the CSANMT runtime tests, on the build side's tiny random CSANMT (``tests/csanmt/conftest.py``).

* ``csanmt_tiny_dir`` (imported): the ModelScope-layout folder written by modelscope's own model code;
* ``csanmt_ending_dir``: the same model with the end-of-sentence logit raised (``oracle.boost_eos``), so that its
  searches end at every length, at step 0 included (a random tiny CSANMT never ends a sentence);
* ``csanmt_ending_fp32``: the converter's FP32 graphs of ``csanmt_ending_dir`` in the runtime's session wrapper;
* ``csanmt_ending_bundle_dir``: the verified INT8 bundle ``build.export`` writes for ``csanmt_ending_dir``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.csanmt.conftest import csanmt_tiny_dir  # noqa: F401  (a fixture, used by name)
from tests.csanmt_runtime import oracle

EOS_BOOST = 3.0  # logits; with the tiny model's random weights this gives empty, short and maximal outputs


@pytest.fixture(scope="session")
def csanmt_ending_dir(csanmt_tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    work = tmp_path_factory.mktemp("csanmt-ending")
    return oracle.boost_eos(csanmt_tiny_dir, work / "tiny-csanmt-ending", EOS_BOOST, work / "work")


@pytest.fixture(scope="session")
def csanmt_ending_checkpoint(csanmt_ending_dir: Path) -> Any:
    import torch

    from build.families.csanmt import load_checkpoint

    torch.set_num_threads(1)
    return load_checkpoint(csanmt_ending_dir)


@pytest.fixture(scope="session")
def csanmt_ending_fp32(csanmt_ending_checkpoint: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    from handler.model.families import csanmt
    from handler.model.sessions import OnnxEncoderDecoder

    spec = csanmt_ending_checkpoint.spec
    encoder, decoder = csanmt_ending_checkpoint.export_graphs(tmp_path_factory.mktemp("csanmt-ending-fp32"))
    return OnnxEncoderDecoder(encoder, decoder, spec, csanmt.graph_contract(spec.decoder_layers), threads=1)


@pytest.fixture(scope="session")
def csanmt_ending_bundle_dir(csanmt_ending_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from build.export import export_bundle

    out_dir = tmp_path_factory.mktemp("csanmt-ending-bundle") / "tiny-csanmt-ending"
    export_bundle(csanmt_ending_dir, out_dir, name="tiny-csanmt-ending")
    return out_dir
