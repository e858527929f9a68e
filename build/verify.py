"""Checks that an exported bundle computes what its source checkpoint computes.

Two comparisons, both on ``VERIFY_SENTENCES`` encoded as one padded batch:

* FP32 ONNX vs PyTorch: teacher-forced on PyTorch's greedy output, the largest absolute difference between the
  graphs' log-probabilities and transformers' (over every real step and every vocabulary entry); and greedy
  decoding with the runtime's own decoder over the graphs must give ``model.generate(num_beams=1,
  do_sample=False)``'s tokens, sentence for sentence.
* INT8 vs FP32 ONNX: teacher-forced on the FP32 greedy output, the share of steps whose most probable token is
  the same (top-1 agreement), and the share of sentences whose greedy output is identical (exact match).

``check`` compares the figures with ``VerifyThresholds`` and raises ``VerificationError`` naming the check,
the measured value, the threshold and by how much it missed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from handler.model.bundle import ModelSpec
from handler.model.decoding import content_ids

# Varied Chinese input: everyday speech, questions, numbers, Latin words, a URL, traditional characters,
# full-width punctuation, a long formal sentence and a very short one.
VERIFY_SENTENCES: tuple[str, ...] = (
    "你好！",
    "这个多少钱？",
    "我明天早上八点去机场接你。",
    "他们在公园里散步，一边聊天一边看风景。",
    "请把窗户关上，外面太冷了。",
    "这本书我已经读了三遍，每次都有新的收获。",
    "会议推迟到下周三下午两点举行。",
    "根据最新统计，该市人口已超过一千二百万。",
    "联合国大会呼吁各会员国加强合作，共同应对气候变化带来的挑战。",
    "Python 是一种广泛使用的编程语言。",
    "请访问 https://www.example.com 了解更多信息。",
    "我們今天晚上一起吃飯吧。",
    "她说：“我不知道他为什么没来。”",
    "温度计显示零下 5 度。",
    "谢谢。",
    "如果明天下雨，我们就改天再去爬山。",
    "这家餐厅的菜很好吃，但是价格有点贵。",
    "病毒通过飞沫传播，因此请佩戴口罩并保持社交距离。",
    "你能帮我翻译这句话吗？",
    "在过去的十年里，人工智能技术取得了巨大的进步，深刻地改变了我们的生活和工作方式。",
)

DEFAULT_MAX_NEW_TOKENS = 64


class VerificationError(Exception):
    """An exported or quantized graph did not match its reference closely enough."""


@dataclass(frozen=True)
class VerifyThresholds:
    """The limits ``check`` enforces (defaults suit a trained model; see ``tests/conftest.py`` for a random one).

    FP32 graphs compute the same function as PyTorch in a different operation order: their log-probabilities
    differ by float32 rounding only (measured: 8e-6 on a partly trained model of the default shape, 3e-5 on
    the tests' tiny random model), so anything near 1e-3 is a real difference. INT8 weights change the
    numbers themselves: with the default quantization that partly trained model measured 99.6% top-1
    agreement and 95% greedy exact match (see ``build.quantize``). The INT8 limits leave room for models
    whose choices are closer calls: they catch a broken quantization (wrong scales, widespread saturation),
    not the last percent of fidelity, which the manifest records for people to compare.
    """

    fp32_max_abs_log_prob_diff: float = 1e-3
    fp32_greedy_exact_match: float = 1.0
    int8_top1_agreement: float = 0.95
    int8_greedy_exact_match: float = 0.50

    def __post_init__(self) -> None:
        if self.fp32_max_abs_log_prob_diff <= 0:
            raise ValueError(f"fp32_max_abs_log_prob_diff must be positive; got {self.fp32_max_abs_log_prob_diff}")
        for name in ("fp32_greedy_exact_match", "int8_top1_agreement", "int8_greedy_exact_match"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} is a share between 0 and 1; got {value}")

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


DEFAULT_THRESHOLDS = VerifyThresholds()


@dataclass(frozen=True)
class Figures:
    """What verification measured; ``None`` where a comparison has not been run."""

    sentences: int
    fp32_max_abs_log_prob_diff: float | None = None
    fp32_greedy_exact_match: float | None = None
    int8_top1_agreement: float | None = None
    int8_greedy_exact_match: float | None = None
    int8_max_abs_log_prob_diff: float | None = None  # recorded for people; no threshold

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}


@dataclass(frozen=True)
class SourceBatch:
    """The verification sentences tokenized as one right-padded batch."""

    input_ids: np.ndarray  # int64 [batch, src_len]
    attention_mask: np.ndarray  # int64 [batch, src_len]

    @classmethod
    def encode(cls, tokenizer: Any, sentences: tuple[str, ...] | list[str], max_positions: int) -> SourceBatch:
        encoded = tokenizer(
            list(sentences), padding=True, truncation=True, max_length=max_positions, return_tensors="np"
        )
        return cls(encoded["input_ids"].astype(np.int64), encoded["attention_mask"].astype(np.int64))


def _max_new_tokens(spec: ModelSpec, requested: int) -> int:
    # the decoder start token takes position 0, so at most max_positions - 1 tokens can follow it
    return max(1, min(requested, spec.max_positions - 1))


def pytorch_greedy(model: Any, batch: SourceBatch, spec: ModelSpec, max_new_tokens: int) -> list[list[int]]:
    """``model.generate(num_beams=1, do_sample=False)`` with OPUS-MT's settings.

    Returns the ids after the decoder start token and before ``</s>``, as ``handler.model.decoding`` does.
    """
    import torch
    from transformers import GenerationConfig

    config = GenerationConfig(
        decoder_start_token_id=spec.decoder_start_id,
        eos_token_id=spec.eos_id,
        pad_token_id=spec.pad_id,
        forced_eos_token_id=spec.eos_id,
        bad_words_ids=[[spec.pad_id]],
        num_beams=1,
        do_sample=False,
        max_new_tokens=max_new_tokens,
    )
    with torch.inference_mode():
        output = model.generate(
            input_ids=torch.from_numpy(batch.input_ids),
            attention_mask=torch.from_numpy(batch.attention_mask),
            generation_config=config,
            use_model_defaults=False,  # else the checkpoint's num_beams etc. replace the values given here
        )
    return [content_ids(row, spec) for row in output[:, 1:].numpy()]


def _decoder_inputs(outputs: list[list[int]], spec: ModelSpec) -> tuple[np.ndarray, np.ndarray]:
    """Teacher-forcing inputs ``[start, y1, ..., yn]`` (right-padded) and the mask of steps to compare.

    Step t predicts ``y_{t+1}`` (or ``</s>`` after the last token), so every row compares ``len(y) + 1`` steps.
    """
    steps = max(len(tokens) for tokens in outputs) + 1
    inputs = np.full((len(outputs), steps), spec.pad_id, dtype=np.int64)
    valid = np.zeros((len(outputs), steps), dtype=bool)
    inputs[:, 0] = spec.decoder_start_id
    for row, tokens in enumerate(outputs):
        inputs[row, 1 : len(tokens) + 1] = tokens
        valid[row, : len(tokens) + 1] = True
    return inputs, valid


def pytorch_log_probs(model: Any, batch: SourceBatch, decoder_inputs: np.ndarray) -> np.ndarray:
    """float32 [batch, steps, vocab]: transformers' log-softmax of the logits (final_logits_bias included)."""
    import torch

    with torch.inference_mode():
        logits = model(
            input_ids=torch.from_numpy(batch.input_ids),
            attention_mask=torch.from_numpy(batch.attention_mask),
            decoder_input_ids=torch.from_numpy(decoder_inputs),
        ).logits
        return torch.log_softmax(logits.float(), dim=-1).numpy()


def onnx_log_probs(onnx_model: Any, batch: SourceBatch, decoder_inputs: np.ndarray) -> np.ndarray:
    """float32 [batch, steps, vocab] from the graphs, fed ``decoder_inputs`` one step at a time (KV cache)."""
    cross = onnx_model.encode(batch.input_ids, batch.attention_mask)
    past = onnx_model.empty_past(decoder_inputs.shape[0])
    steps: list[np.ndarray] = []
    for step in range(decoder_inputs.shape[1]):
        log_probs, past = onnx_model.step(decoder_inputs[:, step : step + 1], batch.attention_mask, past, cross)
        steps.append(log_probs)
    return np.stack(steps, axis=1)


def _top1(log_probs: np.ndarray, spec: ModelSpec) -> np.ndarray:
    """The token greedy decoding would choose at each step (the pad token is never chosen)."""
    allowed = log_probs.copy()
    allowed[..., spec.pad_id] = -np.inf
    return allowed.argmax(axis=-1)


def exact_match(left: list[list[int]], right: list[list[int]]) -> float:
    """The share of sentences whose two outputs are the same token for token."""
    return sum(a == b for a, b in zip(left, right, strict=True)) / len(left)


def _open(encoder: Path, decoder: Path, spec: ModelSpec) -> Any:
    from handler.model.families.marian.sessions import OnnxMarian

    return OnnxMarian(encoder, decoder, spec, threads=1)


def _onnx_greedy(onnx_model: Any, batch: SourceBatch, max_new_tokens: int) -> list[list[int]]:
    from handler.model.decoding import greedy_search

    return greedy_search(onnx_model, batch.input_ids, batch.attention_mask, max_new_tokens, repetition_guard=False)


def compare_fp32_with_pytorch(
    model: Any,
    tokenizer: Any,
    encoder: Path,
    decoder: Path,
    spec: ModelSpec,
    sentences: tuple[str, ...] | list[str] = VERIFY_SENTENCES,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
) -> tuple[Figures, list[list[int]]]:
    """FP32 graphs vs the PyTorch model; returns the figures and the graphs' greedy outputs."""
    batch = SourceBatch.encode(tokenizer, sentences, spec.max_positions)
    limit = _max_new_tokens(spec, max_new_tokens)
    reference = pytorch_greedy(model, batch, spec, limit)
    decoder_inputs, valid = _decoder_inputs(reference, spec)
    expected = pytorch_log_probs(model, batch, decoder_inputs)
    onnx_model = _open(encoder, decoder, spec)
    found = onnx_log_probs(onnx_model, batch, decoder_inputs)
    diff = float(np.abs(found - expected)[valid].max())
    greedy = _onnx_greedy(onnx_model, batch, limit)
    figures = Figures(
        sentences=len(sentences),
        fp32_max_abs_log_prob_diff=diff,
        fp32_greedy_exact_match=exact_match(greedy, reference),
    )
    return figures, greedy


def compare_int8_with_fp32(
    fp32: tuple[Path, Path],
    int8: tuple[Path, Path],
    tokenizer: Any,
    spec: ModelSpec,
    sentences: tuple[str, ...] | list[str] = VERIFY_SENTENCES,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    fp32_greedy: list[list[int]] | None = None,
) -> Figures:
    """INT8 graphs vs FP32 graphs: teacher-forced top-1 agreement and greedy exact-match rate."""
    batch = SourceBatch.encode(tokenizer, sentences, spec.max_positions)
    limit = _max_new_tokens(spec, max_new_tokens)
    reference_model = _open(*fp32, spec)
    quantized_model = _open(*int8, spec)
    reference = fp32_greedy if fp32_greedy is not None else _onnx_greedy(reference_model, batch, limit)
    decoder_inputs, valid = _decoder_inputs(reference, spec)
    expected = onnx_log_probs(reference_model, batch, decoder_inputs)
    found = onnx_log_probs(quantized_model, batch, decoder_inputs)
    agreement = float((_top1(found, spec) == _top1(expected, spec))[valid].mean())
    greedy = _onnx_greedy(quantized_model, batch, limit)
    return Figures(
        sentences=len(sentences),
        int8_top1_agreement=agreement,
        int8_greedy_exact_match=exact_match(greedy, reference),
        int8_max_abs_log_prob_diff=float(np.abs(found - expected)[valid].max()),
    )


def check(figures: Figures, thresholds: VerifyThresholds) -> None:
    """Raise ``VerificationError`` for the first measured figure that misses its threshold."""
    upper = {"fp32_max_abs_log_prob_diff": "FP32 ONNX vs PyTorch: max |Δ log-prob|"}
    lower = {
        "fp32_greedy_exact_match": "FP32 ONNX vs PyTorch: greedy exact-match rate",
        "int8_top1_agreement": "INT8 vs FP32: teacher-forced top-1 agreement",
        "int8_greedy_exact_match": "INT8 vs FP32: greedy exact-match rate",
    }
    for name, title in upper.items():
        value, limit = getattr(figures, name), getattr(thresholds, name)
        if value is not None and not value <= limit:  # written so that NaN fails
            raise VerificationError(
                f"{title} is {value:.3g}; the limit is {limit:.3g} (exceeded by {value - limit:.3g}) "
                f"over {figures.sentences} sentences"
            )
    for name, title in lower.items():
        value, limit = getattr(figures, name), getattr(thresholds, name)
        if value is not None and not value >= limit:
            raise VerificationError(
                f"{title} is {value:.1%}; the minimum is {limit:.1%} (short by {limit - value:.1%}) "
                f"over {figures.sentences} sentences"
            )


def merged(first: Figures, second: Figures) -> Figures:
    """Both comparisons' figures in one record (for the manifest)."""
    values = {**first.to_dict(), **second.to_dict()}
    return Figures(**values)
