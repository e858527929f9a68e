"""The CSANMT family (DAMO's ``damo/nlp_csanmt_translation_zh2en``, converted from ModelScope's TF checkpoint).

* Graph contract: the encoder emits ``cross_key.{i}`` / ``cross_value.{i}`` and ``semantic_bias.{i}`` per decoder
  layer (the embedding-augmentation term of the semantic vector that layer adds before self-attention), plus the
  verification outputs ``encoder_states`` and ``semantic_vector``; the decoder takes the per-layer arrays.
* Tokenizer: ``tokenizer.CsanmtTokenizer``, modelscope's pipeline pre- and postprocessing (jieba, subword-nmt,
  sacremoses: ``requirements/csanmt.txt``, imported only when a CSANMT bundle loads).
* Decoding protocol: ``beam_search.csanmt_beam_search``, modelscope's own beam search (GNMT length penalty,
  end-of-sentence id 0, its stopping rule), configured by the manifest's ``decoding`` section.

How the service's request options map onto it (``CsanmtDecoding.search``):

``beam_size``
    modelscope's ``beam_size``; 1 runs the same search with one beam, as modelscope does (it has no other
    greedy search), not argmax decoding.
``length_penalty``
    the GNMT exponent ``alpha`` of ``((5 + length) / 6) ** alpha``; unset, the bundle's own (``lp_rate``, 0.6).
    0 turns the penalty off. (For Marian the option is the exponent of ``length ** length_penalty``.)
``max_length_ratio``
    the maximum output length is the smaller of the service's ``ratio x source tokens + 10`` and the bundle's
    ``max_decoded_length`` (modelscope's ``max_decoded_trg_len``, 100, a fixed limit it applies to every
    sentence); the stopping rule's bound uses that same maximum, so with a limit below modelscope's an output
    can only end sooner than modelscope's, never differently before the limit.
``repetition_guard``
    true (the service's default) bans repeated 3-grams and runs of more than 3 equal tokens, as for Marian;
    false gives modelscope's search exactly. modelscope itself has no guard.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from handler.errors import BundleError
from handler.model import bundle
from handler.model.bundle import Manifest, ModelSpec
from handler.model.decoding import DEFAULT_GUARD, Hypothesis, RepetitionGuard, RowDone, StepModel
from handler.model.families.base import GraphContract, SearchRequest, Tokenizer, cross_attention_names
from handler.model.families.csanmt.beam_search import EOS_ID, CsanmtSearchResult, csanmt_beam_search

NAME = bundle.FAMILY_CSANMT
LENGTH_PENALTY_GNMT = "gnmt"
TOKENIZER_KIND = "jieba+subword-nmt+moses"
VERIFICATION_OUTPUTS = (bundle.ENCODER_STATES, bundle.SEMANTIC_VECTOR)


def graph_contract(decoder_layers: int) -> GraphContract:
    semantic = tuple(bundle.semantic_bias(layer) for layer in range(decoder_layers))
    return GraphContract(
        family=NAME,
        decoder_layers=decoder_layers,
        per_sentence=(*cross_attention_names(decoder_layers), *semantic),
        verification_outputs=VERIFICATION_OUTPUTS,
    )


def _section(manifest: Manifest, name: str, where: Path) -> dict[str, Any]:
    section = getattr(manifest, name)
    if not isinstance(section, dict) or not section:
        raise BundleError(
            f"{where} has no {name!r} section, which a CSANMT bundle needs; rebuild it with: "
            f"python -m build.export --model {manifest.source_model} --out {where.parent} --force"
        )
    return section


def _value(section: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = section.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise BundleError(f"{where} needs {key!r} ({getattr(kind, '__name__', kind)}); found {value!r}")
    return value


@dataclass(frozen=True)
class CsanmtDecodingSettings:
    """The manifest's ``decoding`` section: modelscope's beam-search parameters for this model."""

    alpha: float  # GNMT length-penalty exponent (configuration lp_rate)
    max_decoded_length: int  # configuration max_decoded_trg_len: output tokens, end-of-sentence included
    beam_size: int  # the model's own default (the service's TRANSLATE_BEAM_SIZE decides at run time)

    @classmethod
    def from_manifest(cls, manifest: Manifest, manifest_path: Path) -> CsanmtDecodingSettings:
        section = _section(manifest, "decoding", manifest_path)
        where = f'{manifest_path} "decoding"'
        form = section.get("length_penalty")
        if form != LENGTH_PENALTY_GNMT:
            raise BundleError(
                f"{where} has length_penalty {form!r}; this runtime's CSANMT search implements {LENGTH_PENALTY_GNMT!r}"
            )
        eos = section.get("eos_id", EOS_ID)
        if eos != EOS_ID or manifest.model.eos_id != EOS_ID or manifest.model.pad_id != EOS_ID:
            raise BundleError(
                f"{where}: CSANMT ends and pads sentences with id {EOS_ID}; found eos_id {eos!r}, model eos_id "
                f"{manifest.model.eos_id}, pad_id {manifest.model.pad_id}"
            )
        alpha = float(_value(section, "alpha", (int, float), where))
        length = _value(section, "max_decoded_length", int, where)
        beam_size = _value(section, "beam_size", int, where)
        if not math.isfinite(alpha) or alpha < 0 or length < 1 or beam_size < 1:
            raise BundleError(
                f"{where}: alpha must be a finite number >= 0, max_decoded_length and beam_size at least 1; "
                f"found {alpha}, {length}, {beam_size}"
            )
        return cls(alpha=alpha, max_decoded_length=length, beam_size=beam_size)


class CsanmtDecoding:
    """modelscope's beam search, driven by the service's options (mapping in the module docstring)."""

    def __init__(self, settings: CsanmtDecodingSettings) -> None:
        self.settings = settings

    def max_length(self, request: SearchRequest) -> int | np.ndarray:
        """The search's maximum length: the request's limit (per row where it gives one per row), at most the
        bundle's ``max_decoded_length``."""
        if isinstance(request.max_new_tokens, int):
            return max(1, min(request.max_new_tokens, self.settings.max_decoded_length))
        limits = np.asarray(request.max_new_tokens, dtype=np.int64)
        return np.clip(limits, 1, self.settings.max_decoded_length)

    def search(
        self,
        model: StepModel,
        input_ids: np.ndarray,
        attention_mask: np.ndarray,
        request: SearchRequest,
        on_row: RowDone | None = None,
    ) -> list[Hypothesis]:
        """The best beam of each row, handed to ``on_row`` when the whole batch is done (this search builds its
        results at the end)."""
        found = self._search(model, input_ids, attention_mask, request).best_hypotheses()
        if on_row is not None:
            for row, hypothesis in enumerate(found):
                on_row(row, hypothesis)
        return found

    def search_n_best(
        self,
        model: StepModel,
        input_ids: np.ndarray,
        attention_mask: np.ndarray,
        request: SearchRequest,
        n_best: int,
    ) -> list[list[Hypothesis]]:
        """The same search, keeping each row's ``n_best`` best final beams (best first; the first is ``search``'s)."""
        return self._search(model, input_ids, attention_mask, request).n_best_hypotheses(n_best)

    def _search(
        self, model: StepModel, input_ids: np.ndarray, attention_mask: np.ndarray, request: SearchRequest
    ) -> CsanmtSearchResult:
        alpha = self.settings.alpha if request.length_penalty is None else request.length_penalty
        guard: RepetitionGuard | None
        if isinstance(request.repetition_guard, RepetitionGuard):
            guard = request.repetition_guard
        else:
            guard = DEFAULT_GUARD if request.repetition_guard else None
        return csanmt_beam_search(
            model,
            input_ids,
            attention_mask,
            beam_size=request.beam_size,
            max_length=self.max_length(request),
            alpha=alpha,
            repetition_guard=guard,
            min_length=request.min_new_tokens,
        )


class CsanmtFamily:
    name = NAME

    def graph_contract(self, spec: ModelSpec) -> GraphContract:
        return graph_contract(spec.decoder_layers)

    def tokenizer_files(self, manifest: Manifest) -> tuple[str, ...]:
        section = manifest.tokenizer if isinstance(manifest.tokenizer, dict) else {}
        cache = section.get("dictionary_cache")  # bundles built before it was shipped have none
        return (
            str(section.get("bpe_codes", bundle.CSANMT_BPE_CODES)),
            str(section.get("source_vocab", bundle.CSANMT_SOURCE_VOCAB)),
            str(section.get("target_vocab", bundle.CSANMT_TARGET_VOCAB)),
            *((str(cache),) if cache else ()),
        )

    def load_tokenizer(self, bundle_dir: Path, manifest: Manifest) -> Tokenizer:
        from handler.model.families.csanmt.tokenizer import CsanmtTokenizer  # jieba & co. only for CSANMT bundles

        manifest_path = bundle_dir / bundle.MANIFEST
        section = _section(manifest, "tokenizer", manifest_path)
        where = f'{manifest_path} "tokenizer"'
        kind = section.get("kind")
        if kind != TOKENIZER_KIND:
            raise BundleError(f"{where} has kind {kind!r}; a CSANMT bundle's tokenizer is {TOKENIZER_KIND!r}")
        unk = _value(section, "source_unk_id", int, where)
        bpe_codes, source_vocab, target_vocab, *cache = self.tokenizer_files(manifest)
        tokenizer = CsanmtTokenizer(
            bundle_dir / bpe_codes,
            bundle_dir / source_vocab,
            bundle_dir / target_vocab,
            source_unk_id=unk,
            normalization=manifest.normalization,
            dictionary_cache=bundle_dir / cache[0] if cache else None,
        )
        if tokenizer.vocab_size > manifest.model.vocab_size:
            raise BundleError(
                f"{bundle_dir / target_vocab} has {tokenizer.vocab_size:,} lines, but {bundle.MANIFEST} says the "
                f"model's target vocabulary has {manifest.model.vocab_size:,}: the files do not belong together"
            )
        return tokenizer

    def decoding(self, manifest: Manifest) -> CsanmtDecoding:
        return CsanmtDecoding(CsanmtDecodingSettings.from_manifest(manifest, Path(bundle.MANIFEST)))
