"""The Marian family (OPUS-MT and the embedded default model): SentencePiece, cross K/V, transformers' searches.

* Graph contract: the encoder emits ``cross_key.{i}`` / ``cross_value.{i}`` per decoder layer, nothing else.
* Tokenizer: ``tokenizer.SentencePieceTokenizer`` of this package (``source.spm``, ``target.spm``, ``vocab.json``).
* Decoding protocol: ``handler.model.decoding``'s greedy search (beam size 1) and beam search, token for token
  transformers' ``generate`` with OPUS-MT's settings; the score of a hypothesis is
  ``sum(log p) / length ** length_penalty`` (default 1.0, transformers' default).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from handler.errors import BundleError
from handler.model import bundle
from handler.model.bundle import Manifest, ModelSpec
from handler.model.decoding import (
    Hypothesis,
    RowDone,
    StepModel,
    beam_hypotheses,
    beam_n_best,
    greedy_hypotheses,
)
from handler.model.families.base import GraphContract, SearchRequest, cross_attention_names
from handler.model.families.marian.tokenizer import SentencePieceTokenizer

NAME = bundle.FAMILY_MARIAN
DEFAULT_LENGTH_PENALTY = 1.0


def graph_contract(decoder_layers: int) -> GraphContract:
    return GraphContract(family=NAME, decoder_layers=decoder_layers, per_sentence=cross_attention_names(decoder_layers))


class MarianDecoding:
    """Greedy search for beam size 1, otherwise transformers-compatible beam search."""

    def search(
        self,
        model: StepModel,
        input_ids: np.ndarray,
        attention_mask: np.ndarray,
        request: SearchRequest,
        on_row: RowDone | None = None,
    ) -> list[Hypothesis]:
        if request.beam_size == 1:
            return greedy_hypotheses(
                model,
                input_ids,
                attention_mask,
                request.max_new_tokens,
                repetition_guard=request.repetition_guard,
                min_new_tokens=request.min_new_tokens,
                on_row=on_row,
            )
        length_penalty = DEFAULT_LENGTH_PENALTY if request.length_penalty is None else request.length_penalty
        return beam_hypotheses(
            model,
            input_ids,
            attention_mask,
            request.max_new_tokens,
            beam_size=request.beam_size,
            length_penalty=length_penalty,
            repetition_guard=request.repetition_guard,
            min_new_tokens=request.min_new_tokens,
            on_row=on_row,
        )

    def search_n_best(
        self,
        model: StepModel,
        input_ids: np.ndarray,
        attention_mask: np.ndarray,
        request: SearchRequest,
        n_best: int,
    ) -> list[list[Hypothesis]]:
        """The same search, keeping each row's ``n_best`` best finished hypotheses (best first; the first is
        ``search``'s)."""
        length_penalty = DEFAULT_LENGTH_PENALTY if request.length_penalty is None else request.length_penalty
        return beam_n_best(
            model,
            input_ids,
            attention_mask,
            request.max_new_tokens,
            beam_size=request.beam_size,
            n_best=n_best,
            length_penalty=length_penalty,
            repetition_guard=request.repetition_guard,
            min_new_tokens=request.min_new_tokens,
        )


def target_spm(manifest: Manifest) -> str:
    """The file of the target side's SentencePiece model: ``target.spm``, or the one the manifest names
    (``bundle.TARGET_SPM_KEY``; ``source.spm`` when a joint vocabulary's bundle stores one model for both sides)."""
    name = manifest.tokenizer.get(bundle.TARGET_SPM_KEY, bundle.TARGET_SPM)
    if name not in (bundle.SOURCE_SPM, bundle.TARGET_SPM):
        raise BundleError(
            f"{bundle.MANIFEST} names {name!r} as the target tokenizer; a Marian bundle's is {bundle.TARGET_SPM} or "
            f"{bundle.SOURCE_SPM}; rebuild the bundle with: python -m build.export --model {manifest.source_model} "
            "--out <bundle> --force"
        )
    return str(name)


class MarianFamily:
    name = NAME

    def graph_contract(self, spec: ModelSpec) -> GraphContract:
        return graph_contract(spec.decoder_layers)

    def tokenizer_files(self, manifest: Manifest) -> tuple[str, ...]:
        return tuple(dict.fromkeys((bundle.SOURCE_SPM, target_spm(manifest), bundle.VOCAB_JSON)))

    def load_tokenizer(self, bundle_dir: Path, manifest: Manifest) -> SentencePieceTokenizer:
        spec = manifest.model
        tokenizer = SentencePieceTokenizer.from_bundle(bundle_dir, spec, manifest.normalization, target_spm(manifest))
        if tokenizer.vocab_size > spec.vocab_size:
            raise BundleError(
                f"{bundle_dir / bundle.VOCAB_JSON} has {tokenizer.vocab_size:,} entries, but {bundle.MANIFEST} says "
                f"the model's vocabulary has {spec.vocab_size:,}; rebuild the bundle with: python -m build.export "
                f"--model {manifest.source_model} --out {bundle_dir} --force"
            )
        return tokenizer

    def decoding(self, manifest: Manifest) -> MarianDecoding:
        return MarianDecoding()
