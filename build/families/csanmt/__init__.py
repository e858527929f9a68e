"""The CSANMT family: a ModelScope ``damo/nlp_csanmt_translation_*`` folder (TensorFlow checkpoint).

Load: ``checkpoint`` reads the configuration and only the inference variables; ``graphs`` rebuilds the network in
PyTorch (the reference) and exports the graphs. Verification, on ``build.verify``'s sentences
tokenized as modelscope's pipeline does (jieba, subword-nmt BPE, vocabulary lookup with out-of-vocabulary ids
``src_vocab_size - 1``, EOS 0 appended, right-padded with 0):

* FP32 ONNX vs the PyTorch network: log-probabilities teacher-forced on PyTorch's greedy output (PyTorch all
  positions at once with a causal mask; ONNX step by step with the KV cache, in the runtime's own sessions:
  ``RuntimeGraphs``), and greedy outputs;
* INT8 vs FP32 ONNX: teacher-forced top-1 agreement and greedy exact match.

Greedy decoding here follows modelscope's protocol: step 0 reads the zero vector, EOS (0) may be chosen at any
step and ends the output. The bundle carries ``bpe.zh``, ``src_vocab.txt``, ``trg_vocab.txt``; the manifest
declares the family, the tokenizer and the decoding protocol (``handler.model.families.csanmt``).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from build import verify
from build.families.csanmt import checkpoint as checkpoint_files
from build.families.csanmt.checkpoint import CsanmtConfig
from handler.model import bundle
from handler.model.bundle import ModelSpec

NAME = "csanmt"
EOS_ID = 0  # also the padding id
# a source-length limit (tokens incl. EOS) the runtime keeps to: the sinusoids have no table and any length
# works, but attention cost grows with its square; longer sentences are split by the runtime
MAX_SOURCE_POSITIONS = 256
TOKENIZER_KIND = "jieba+subword-nmt+moses"
TOKENIZER_PACKAGES = {"jieba": "jieba", "subword_nmt": "subword-nmt", "sacremoses": "sacremoses"}


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def read_vocab(path: Path) -> list[str]:
    """One piece per line, id = line index (modelscope strips each line)."""
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]


class PipelineTokenizer:
    """Source ids as modelscope's ``TranslationPipeline.preprocess`` makes them, for verification.

    jieba (default mode) joined by spaces, subword-nmt ``BPE.process_line``, vocabulary lookup; then EOS 0
    appended and right padding with 0, and the mask (1 for the tokens and the EOS).
    """

    def __init__(self, folder: Path, config: CsanmtConfig) -> None:
        import jieba
        from subword_nmt import apply_bpe

        jieba.setLogLevel(60)  # its "Building prefix dict" lines are not build progress
        self._jieba = jieba
        with (folder / checkpoint_files.BPE_CODES).open(encoding="utf-8") as codes:
            self._bpe = apply_bpe.BPE(codes)
        self._vocab = {piece: index for index, piece in enumerate(read_vocab(folder / checkpoint_files.SOURCE_VOCAB))}
        self._unk = config.src_vocab_size - 1

    def ids(self, sentence: str) -> list[int]:
        words = " ".join(self._jieba.cut(sentence))
        pieces = self._bpe.process_line(words).strip().split()
        return [self._vocab.get(piece, self._unk) for piece in pieces]

    def batch(self, sentences: Sequence[str], max_positions: int) -> verify.SourceBatch:
        rows = [self.ids(sentence)[: max_positions - 1] + [EOS_ID] for sentence in sentences]
        width = max(len(row) for row in rows)
        input_ids = np.zeros((len(rows), width), dtype=np.int64)
        attention_mask = np.zeros((len(rows), width), dtype=np.int64)
        for index, row in enumerate(rows):
            input_ids[index, : len(row)] = row
            attention_mask[index, : len(row)] = 1
        return verify.SourceBatch(input_ids, attention_mask)


class RuntimeGraphs:
    """Two FP32 or INT8 graphs in the runtime's own sessions (``handler.model.sessions.OnnxEncoderDecoder`` under the
    CSANMT family's graph contract, 2 threads), driven the way verification needs: every encoder output, teacher-
    forced steps, and a plain greedy search (EOS allowed from the first step, as modelscope's search allows it)."""

    def __init__(self, encoder: Path, decoder: Path, spec: ModelSpec) -> None:
        from handler.model.families import csanmt as csanmt_family
        from handler.model.sessions import OnnxEncoderDecoder

        contract = csanmt_family.graph_contract(spec.decoder_layers)
        self.sessions = OnnxEncoderDecoder(encoder, decoder, spec, contract, threads=2)
        self._encoder_outputs = list(contract.encoder_outputs)

    def encode(self, batch: verify.SourceBatch) -> dict[str, np.ndarray]:
        """Every encoder output by name, the verification outputs (encoder states, semantic vector) included."""
        feeds = {bundle.INPUT_IDS: batch.input_ids, bundle.ATTENTION_MASK: batch.attention_mask}
        return dict(zip(self._encoder_outputs, self.sessions.encoder.run(self._encoder_outputs, feeds), strict=True))

    def steps(self, batch: verify.SourceBatch, previous: np.ndarray) -> np.ndarray:
        """Log-probs [B, T, V]: step t reads ``previous[:, t]`` (ignored at t = 0) with the KV cache."""
        cross = self.sessions.encode(batch.input_ids, batch.attention_mask)
        past = self.sessions.empty_past(previous.shape[0])
        results: list[np.ndarray] = []
        for step in range(previous.shape[1]):
            token = np.ascontiguousarray(previous[:, step : step + 1])
            log_probs, past = self.sessions.step(token, batch.attention_mask, past, cross)
            results.append(np.array(log_probs))  # a copy: the session may reuse its output buffer
        return np.stack(results, axis=1)

    def greedy(self, batch: verify.SourceBatch, max_new_tokens: int) -> list[list[int]]:
        """Greedy outputs (ids before EOS), EOS allowed from the first step, as modelscope's search allows it."""
        rows = batch.input_ids.shape[0]
        previous = np.zeros((rows, 1), dtype=np.int64)
        finished = np.zeros(rows, dtype=bool)
        outputs: list[list[int]] = [[] for _ in range(rows)]
        cross = self.sessions.encode(batch.input_ids, batch.attention_mask)
        past = self.sessions.empty_past(rows)
        for _ in range(max_new_tokens):
            log_probs, past = self.sessions.step(previous, batch.attention_mask, past, cross)
            chosen = np.asarray(log_probs).argmax(axis=-1)
            for row, token in enumerate(chosen):
                if not finished[row]:
                    if token == EOS_ID:
                        finished[row] = True
                    else:
                        outputs[row].append(int(token))
            if finished.all():
                break
            previous = chosen[:, None].astype(np.int64)
        return outputs


def teacher_forcing_inputs(outputs: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(targets [B, T], decoder step inputs [B, T], valid steps [B, T]) for greedy ``outputs``.

    Targets are ``y1 .. yn, EOS`` right-padded with EOS; step t reads ``targets[:, t - 1]`` (0 at t = 0); every
    row compares ``len(y) + 1`` steps (its tokens and the EOS).
    """
    steps = max(len(tokens) for tokens in outputs) + 1
    targets = np.zeros((len(outputs), steps), dtype=np.int64)
    valid = np.zeros((len(outputs), steps), dtype=bool)
    for row, tokens in enumerate(outputs):
        targets[row, : len(tokens)] = tokens
        valid[row, : len(tokens) + 1] = True
    previous = np.concatenate([np.zeros((len(outputs), 1), dtype=np.int64), targets[:, :-1]], axis=1)
    return targets, previous, valid


@dataclass
class CsanmtCheckpoint:
    folder: Path
    config: CsanmtConfig
    network: Any  # csanmt_graphs.CsanmtNetwork
    tokenizer: PipelineTokenizer
    spec: ModelSpec
    training: dict[str, Any] = field(default_factory=dict)
    family: str = NAME

    def _max_new_tokens(self) -> int:
        return max(1, min(verify.DEFAULT_MAX_NEW_TOKENS, self.config.max_decoded_trg_len))

    def export_graphs(self, out_dir: Path) -> tuple[Path, Path]:
        from build.families.csanmt.graphs import export_graphs

        return export_graphs(self.network, out_dir)

    def torch_greedy(self, batch: verify.SourceBatch, max_new_tokens: int) -> list[list[int]]:
        """Greedy outputs of the PyTorch network, one cached step at a time."""
        import torch

        from build.families.csanmt.graphs import DecoderStepGraph, EncoderGraph

        layers = self.config.num_decoder_layers
        with torch.inference_mode():
            ids, mask = torch.from_numpy(batch.input_ids), torch.from_numpy(batch.attention_mask)
            encoded = EncoderGraph(self.network)(ids, mask)
            constants = list(encoded[: 3 * layers])
            step = DecoderStepGraph(self.network)
            past = self.network.empty_past(ids.shape[0])
            previous = torch.zeros((ids.shape[0], 1), dtype=torch.long)
            outputs: list[list[int]] = [[] for _ in range(ids.shape[0])]
            finished = [False] * ids.shape[0]
            for _ in range(max_new_tokens):
                log_probs, *past = step(previous, mask, *past, *constants)
                chosen = log_probs.argmax(dim=-1)
                for row, token in enumerate(chosen.tolist()):
                    if not finished[row]:
                        if token == EOS_ID:
                            finished[row] = True
                        else:
                            outputs[row].append(token)
                if all(finished):
                    break
                previous = chosen[:, None]
        return outputs

    def compare_fp32(self, fp32: tuple[Path, Path], sentences: Sequence[str]) -> tuple[verify.Figures, list[list[int]]]:
        import torch

        batch = self.tokenizer.batch(sentences, self.spec.max_positions)
        limit = self._max_new_tokens()
        reference = self.torch_greedy(batch, limit)
        targets, previous, valid = teacher_forcing_inputs(reference)
        with torch.inference_mode():
            expected = self.network.teacher_forced(
                torch.from_numpy(batch.input_ids), torch.from_numpy(batch.attention_mask), torch.from_numpy(targets)
            ).numpy()
        # the PyTorch network's part is done: free it (2.3 GB at full size) before the FP32 sessions open; export
        # and comparison have to come first for a checkpoint, as the pipeline runs them
        self.release_reference()
        graphs = RuntimeGraphs(*fp32, self.spec)
        found = graphs.steps(batch, previous)
        greedy = graphs.greedy(batch, limit)
        figures = verify.Figures(
            sentences=len(sentences),
            fp32_max_abs_log_prob_diff=float(np.abs(found - expected)[valid].max()),
            fp32_greedy_exact_match=verify.exact_match(greedy, reference),
        )
        return figures, greedy

    def release_reference(self) -> None:
        """The PyTorch network (2.3 GB at full size) is not needed after the FP32 check (which calls this itself)."""
        self.network = None

    def compare_int8(
        self, fp32: tuple[Path, Path], int8: tuple[Path, Path], sentences: Sequence[str], fp32_greedy: list[list[int]]
    ) -> verify.Figures:
        batch = self.tokenizer.batch(sentences, self.spec.max_positions)
        _, previous, valid = teacher_forcing_inputs(fp32_greedy)
        expected = RuntimeGraphs(*fp32, self.spec).steps(batch, previous)  # the FP32 sessions close after this
        quantized = RuntimeGraphs(*int8, self.spec)
        found = quantized.steps(batch, previous)
        greedy = quantized.greedy(batch, self._max_new_tokens())
        return verify.Figures(
            sentences=len(sentences),
            int8_top1_agreement=float((found.argmax(-1) == expected.argmax(-1))[valid].mean()),
            int8_greedy_exact_match=verify.exact_match(greedy, fp32_greedy),
            int8_max_abs_log_prob_diff=float(np.abs(found - expected)[valid].max()),
        )

    def copy_tokenizer(self, staging: Path) -> None:
        from handler.model.families.csanmt.tokenizer import write_dictionary_cache

        for name in (checkpoint_files.BPE_CODES, checkpoint_files.SOURCE_VOCAB, checkpoint_files.TARGET_VOCAB):
            shutil.copyfile(self.folder / name, staging / name)
        # jieba's prefix dictionary, prepared here instead of at every cold start (1.4-2.5 s there)
        write_dictionary_cache(staging / bundle.CSANMT_DICTIONARY_CACHE)

    def manifest_sections(self) -> dict[str, Any]:
        config = self.config
        return {
            "family": NAME,
            "tokenizer": {
                "kind": TOKENIZER_KIND,
                "bpe_codes": checkpoint_files.BPE_CODES,
                "source_vocab": checkpoint_files.SOURCE_VOCAB,
                "target_vocab": checkpoint_files.TARGET_VOCAB,
                "dictionary_cache": bundle.CSANMT_DICTIONARY_CACHE,
                "source_unk_id": config.src_vocab_size - 1,
                "versions": {key: _version(package) for key, package in TOKENIZER_PACKAGES.items()},
            },
            "decoding": {
                "length_penalty": "gnmt",  # ((5 + t + 1) / 6) ** alpha after step t (0-based), T:672-673
                "alpha": config.lp_rate,
                "max_decoded_length": config.max_decoded_trg_len,
                "eos_id": EOS_ID,
                "beam_size": config.beam_size,
                "candidates_per_step": 2 * config.beam_size,  # top-2k of beam x vocab, T:681
                "early_stop": "best alive score / penalty(max_decoded_length) < worst finished score",  # T:754
                "first_step_input": "zero vector",
            },
            "source_model_config": config.to_dict(),
        }

    def default_normalization(self) -> str:
        return bundle.NORMALIZATION_NONE  # modelscope's pipeline feeds the text as it comes


def spec_from(config: CsanmtConfig) -> ModelSpec:
    return ModelSpec(
        vocab_size=config.trg_vocab_size,
        d_model=config.hidden_size,
        attention_heads=config.num_heads,
        head_dim=config.head_dim,
        encoder_layers=config.num_encoder_layers,
        decoder_layers=config.num_decoder_layers,
        max_positions=MAX_SOURCE_POSITIONS,
        pad_id=EOS_ID,
        eos_id=EOS_ID,
        unk_id=config.src_vocab_size - 1,
        decoder_start_id=EOS_ID,
    )


def load_checkpoint(model: str | Path) -> CsanmtCheckpoint:
    """Read a ModelScope CSANMT folder (or a ModelScope hub id, downloaded first) into the PyTorch reference network
    (inference variables only)."""
    from build.families.csanmt.download import resolve_folder
    from build.families.csanmt.graphs import CsanmtNetwork

    folder = resolve_folder(model)
    checkpoint_files.check_folder(folder)
    config = checkpoint_files.load_config(folder)
    for name, size in (
        (checkpoint_files.SOURCE_VOCAB, config.src_vocab_size),
        (checkpoint_files.TARGET_VOCAB, config.trg_vocab_size),
    ):
        found = len(read_vocab(folder / name))
        if found != size:
            raise checkpoint_files.CheckpointError(
                f"{folder / name} has {found} lines; configuration.json declares a vocabulary of {size}"
            )
    weights = checkpoint_files.read_weights(folder, config)
    network = CsanmtNetwork(config, weights).eval()
    del weights
    return CsanmtCheckpoint(folder, config, network, PipelineTokenizer(folder, config), spec_from(config))


class CsanmtFamily:
    name = NAME

    def recognises(self, folder: Path) -> bool:
        return (folder / checkpoint_files.CONFIGURATION).is_file() and (
            folder / f"{checkpoint_files.CHECKPOINT_PREFIX}.index"
        ).is_file()

    def load(self, model: str | Path) -> CsanmtCheckpoint:
        return load_checkpoint(model)


FAMILY = CsanmtFamily()
