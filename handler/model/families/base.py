"""What a model family provides to the runtime: one small interface, so the core never branches on a family.

A family (``handler.model.families.marian``, ``handler.model.families.csanmt``) declares

* its **graph contract**: the names of the encoder's per-sentence outputs that the one-step decoder takes (Marian:
  the cross-attention keys and values; CSANMT: those plus one ``semantic_bias`` per decoder layer), from which
  ``handler.model.sessions.OnnxEncoderDecoder`` checks and feeds both graphs;
* the **bundle files** its tokenizer needs (the loader refuses a bundle that does not list them);
* its **tokenizer**: source text to ids (end-of-sequence included), target ids to text, and token counting for
  the service's splitting and batching;
* its **decoding protocol**: the search its reference implementation runs (length penalty form, special ids,
  stopping rule), driven by the service's request options through ``SearchRequest``.

A third family is one new module here that provides a ``ModelFamily``, plus its name in ``handler.model.families``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from handler.model import bundle
from handler.model.bundle import Manifest, ModelSpec
from handler.model.decoding import Hypothesis, RepetitionGuard, RowDone, StepModel


@dataclass(frozen=True)
class GraphContract:
    """The input and output names of a family's encoder and one-step decoder, for a model of ``decoder_layers``.

    ``per_sentence`` are the encoder outputs the decoder takes, in the order ``encode`` returns them (the searches
    reorder their rows, axis 0); ``verification_outputs`` are further encoder outputs the runtime never reads.
    """

    family: str
    decoder_layers: int
    per_sentence: tuple[str, ...]
    verification_outputs: tuple[str, ...] = ()

    @property
    def encoder_inputs(self) -> tuple[str, ...]:
        return (bundle.INPUT_IDS, bundle.ATTENTION_MASK)

    @property
    def encoder_outputs(self) -> tuple[str, ...]:
        return (*self.per_sentence, *self.verification_outputs)

    @property
    def past(self) -> tuple[str, ...]:
        return _per_layer(self.decoder_layers, bundle.past_key, bundle.past_value)

    @property
    def present(self) -> tuple[str, ...]:
        return _per_layer(self.decoder_layers, bundle.present_key, bundle.present_value)

    @property
    def decoder_inputs(self) -> tuple[str, ...]:
        return (bundle.INPUT_IDS, bundle.ENCODER_ATTENTION_MASK, *self.past, *self.per_sentence)

    @property
    def decoder_outputs(self) -> tuple[str, ...]:
        return (bundle.LOG_PROBS, *self.present)


def cross_attention_names(decoder_layers: int) -> tuple[str, ...]:
    """``cross_key.0, cross_value.0, cross_key.1, ...``: the cross-attention cache every family's decoder takes."""
    return _per_layer(decoder_layers, bundle.cross_key, bundle.cross_value)


def _per_layer(layers: int, *names: Callable[[int], str]) -> tuple[str, ...]:
    return tuple(name(layer) for layer in range(layers) for name in names)


@dataclass(frozen=True)
class SearchRequest:
    """What one decoding call asks for, in the service's terms; each family maps it onto its own search.

    ``max_new_tokens`` counts the end-of-sentence token: one limit for the batch, or one per row (the service's
    choice, so that a row's output never depends on its batch). ``length_penalty`` None means the family's own
    default.
    ``min_new_tokens`` forbids the end-of-sentence token before that many tokens (benchmarks force a length).
    """

    beam_size: int
    max_new_tokens: int | tuple[int, ...]
    length_penalty: float | None = None
    repetition_guard: bool | RepetitionGuard = True
    min_new_tokens: int = 0


class Tokenizer(Protocol):
    """Source text to model ids and model ids to target text, as the family's reference pipeline does it."""

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The source ids of each text, end-of-sequence id included."""
        ...

    def count_tokens(self, text: str) -> int:
        """``len(encode_batch([text])[0])``, as cheaply as the tokenizer can."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """The target text of generated ids (end-of-sequence and anything after it already removed)."""
        ...


class Decoding(Protocol):
    """A family's decoding protocol over the generic step-model interface of ``handler.model.decoding``."""

    def search(
        self,
        model: StepModel,
        input_ids: np.ndarray,
        attention_mask: np.ndarray,
        request: SearchRequest,
        on_row: RowDone | None = None,
    ) -> list[Hypothesis]:
        """The chosen output of each row of the padded source batch: its ids (without the end-of-sentence token),
        their summed log-probability and whether the repetition guard changed the choice; each also handed to
        ``on_row`` once, as soon as the search knows it (at the latest when it returns)."""
        ...

    def search_n_best(
        self,
        model: StepModel,
        input_ids: np.ndarray,
        attention_mask: np.ndarray,
        request: SearchRequest,
        n_best: int,
    ) -> list[list[Hypothesis]]:
        """The same search, keeping up to ``n_best`` of each row's final hypotheses, best first (the first is what
        ``search`` returns): the alternatives LibreTranslate's ``alternatives`` asks for."""
        ...


class ModelFamily(Protocol):
    """One model family: how to read, feed and decode its bundles."""

    name: str

    def graph_contract(self, spec: ModelSpec) -> GraphContract: ...

    def tokenizer_files(self, manifest: Manifest) -> tuple[str, ...]:
        """The bundle files the tokenizer reads (each must be listed in the manifest's ``files``)."""
        ...

    def load_tokenizer(self, bundle_dir: Path, manifest: Manifest) -> Tokenizer:
        """The bundle's tokenizer, ready (dictionaries loaded) so the first request pays nothing extra."""
        ...

    def decoding(self, manifest: Manifest) -> Decoding: ...
