"""How the default model's SentencePiece vocabulary size trades sequence length against output-layer cost.

    python -m bench.studies.vocab_bench [--sizes 8000 16000 32000] [--sample 20000]

For each size, trains the joint zh+en SentencePiece model exactly as ``build/training/train.py`` does (on the
licence-clean training pairs) and prints, side by side: pieces holding Chinese characters, tokens per pair (training
sample and dev set, both sides), the dev set's ``<unk>`` rate, the share of a decoder step's multiply-adds spent in the
output layer for the default shape, the decode cost per sentence relative to the first size, and the measured
PyTorch training speed (forward + backward + AdamW, bf16 autocast where ``build.training.train`` would use it) on
batches with each size's token lengths. A script, not a test: it takes a few minutes, and its training speeds only mean
something on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _has_cjk(piece: str) -> bool:
    return any("\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf" for char in piece)


def measure(size: int, sample: int, work: Path) -> dict[str, float]:
    import sentencepiece as spm

    from build import corpus
    from build.training import vocab

    pairs = corpus.training_pairs()
    dev = corpus.dev_pairs()
    began = time.perf_counter()
    vocab.train_joint_sentencepiece([p.zh for p in pairs] + [p.en for p in pairs], work, size, seed=20261130)
    processor = spm.SentencePieceProcessor(model_file=str(work / vocab.SOURCE_SPM))
    spm_seconds = time.perf_counter() - began
    chosen = pairs[:: max(1, len(pairs) // sample)][:sample]

    def per_pair(texts: list[str]) -> float:
        return statistics.mean(len(ids) + 1 for ids in processor.encode(texts))  # + </s>

    dev_ids = processor.encode([p.zh for p in dev] + [p.en for p in dev])
    dev_tokens = sum(len(ids) for ids in dev_ids)
    return {
        "size": size,
        "cjk_pieces": sum(_has_cjk(processor.id_to_piece(i)) for i in range(processor.get_piece_size())),
        "train_zh": per_pair([p.zh for p in chosen]),
        "train_en": per_pair([p.en for p in chosen]),
        "dev_zh": per_pair([p.zh for p in dev]),
        "dev_en": per_pair([p.en for p in dev]),
        "dev_unk_percent": 100 * sum(ids.count(1) for ids in dev_ids) / dev_tokens,
        "spm_seconds": spm_seconds,
    }


def decoder_step_macs(vocab_size: int) -> tuple[float, float]:
    """Multiply-adds per generated token in the default shape's decoder layers and in its output layer."""
    from build.training.train import TrainConfig

    shape = TrainConfig().shape
    d, ffn = shape.d_model, shape.ffn_dim
    per_layer = 4 * d * d + 2 * d * d + 2 * d * ffn  # self-attention q/k/v/out, cross-attention q/out, FFN
    return shape.decoder_layers * per_layer, vocab_size * d


def training_tokens_per_second(vocab_size: int, src_len: float, tgt_len: float, steps: int = 3) -> float:
    import torch
    import torch.nn.functional as F

    from build.training.train import TrainConfig, build_model, cpu_has_native_bf16, use_bf16_autocast

    config = TrainConfig()
    torch.set_num_threads(config.threads)
    model = build_model(config, vocab_size + 1).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    bf16 = use_bf16_autocast(config.precision, cpu_has_native_bf16())
    src_tokens, tgt_tokens = round(src_len), round(tgt_len)
    rows = max(1, config.batch_tokens // (src_tokens + tgt_tokens))
    generator = torch.Generator().manual_seed(0)
    src = torch.randint(2, vocab_size - 1, (rows, src_tokens), generator=generator)
    tgt = torch.randint(2, vocab_size - 1, (rows, tgt_tokens), generator=generator)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(input_ids=src, attention_mask=torch.ones_like(src), decoder_input_ids=tgt).logits
        F.cross_entropy(logits.float().view(-1, logits.size(-1)), tgt.view(-1), label_smoothing=0.1).backward()
        optimizer.step()

    step()  # warm-up
    began = time.perf_counter()
    for _ in range(steps):
        step()
    return steps * rows * (src_tokens + tgt_tokens) / (time.perf_counter() - began)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.vocab_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8_000, 16_000, 32_000])
    parser.add_argument("--sample", type=int, default=20_000, help="training pairs whose lengths are averaged")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            print(f"training SentencePiece with {size} pieces", flush=True)
            figures = measure(size, args.sample, Path(tmp) / str(size))
            layers, output = decoder_step_macs(size + 1)
            figures["output_share"] = output / (layers + output)
            figures["decode_macs"] = figures["dev_en"] * (layers + output)
            figures["train_tok_s"] = training_tokens_per_second(size + 1, figures["train_zh"], figures["train_en"])
            rows.append(figures)
    base = rows[0]
    print()
    print(
        f"{'pieces':>7}{'CJK pieces':>11}{'train zh':>9}{'train en':>9}{'dev zh':>8}{'dev en':>8}{'dev unk %':>10}"
        f"{'out layer':>10}{'decode cost':>12}{'train tok/s':>12}{'pairs/s':>9}"
    )
    for row in rows:
        pairs_per_s = row["train_tok_s"] / (row["train_zh"] + row["train_en"])
        print(
            f"{row['size']:>7}{row['cjk_pieces']:>11}{row['train_zh']:>9.1f}{row['train_en']:>9.1f}"
            f"{row['dev_zh']:>8.1f}{row['dev_en']:>8.1f}{row['dev_unk_percent']:>10.3f}{row['output_share']:>10.0%}"
            f"{row['decode_macs'] / base['decode_macs']:>11.2f}x{row['train_tok_s']:>12.0f}{pairs_per_s:>9.1f}"
        )
    print(
        "\nout layer: share of a decoder step's multiply-adds in the output projection (default shape); decode cost: "
        "multiply-adds per dev sentence's English, relative to the first size; pairs/s: training pairs per second"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
