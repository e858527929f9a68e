"""A Marian bundle's ONNX Runtime sessions under their family's graph contract (the build's verification and the
tests construct them by this name; the runtime's loader builds the same ``OnnxEncoderDecoder`` from the family)."""

from __future__ import annotations

from pathlib import Path

from handler.model.bundle import ModelSpec
from handler.model.families import marian
from handler.model.sessions import OnnxEncoderDecoder


class OnnxMarian(OnnxEncoderDecoder):
    """A Marian bundle's sessions (the build's verification and the tests construct them by this name)."""

    def __init__(
        self,
        encoder_path: Path | str,
        decoder_path: Path | str,
        spec: ModelSpec,
        *,
        threads: int = 1,
        spinning: bool = False,
    ) -> None:
        contract = marian.graph_contract(spec.decoder_layers)
        super().__init__(encoder_path, decoder_path, spec, contract, threads=threads, spinning=spinning)
