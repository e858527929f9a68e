"""Fixtures of the runtime tests, built on the session-wide tiny checkpoint and bundle of ``tests/conftest.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from handler.config import RuntimeConfig
from handler.model.bundle import ModelSpec
from handler.model.families.marian.sessions import OnnxMarian
from handler.model.loader import LoadedModel, load_model

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_probe(script: str, bundle_dir: Path) -> dict[str, Any]:
    """Run ``script`` (Python source, ``sys.argv[1]`` = ``bundle_dir``) in a fresh interpreter at the repository
    root; return the JSON object its last output line prints. Used where a test needs a process of its own (fork)."""
    completed = subprocess.run(
        [sys.executable, "-c", script, str(bundle_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=True,
    )
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


# varied Chinese sentences: short and long, numbers, Latin words, a URL, traditional characters, punctuation
SENTENCES: tuple[str, ...] = (
    "你好！",
    "这个多少钱？",
    "我明天早上八点去机场接你。",
    "他们在公园里散步，一边聊天一边看风景。",
    "会议推迟到下周三下午两点举行。",
    "根据最新统计，该市人口已超过一千二百万。",
    "联合国大会呼吁各会员国加强合作，共同应对气候变化带来的挑战。",
    "Python 是一种广泛使用的编程语言。",
    "请访问 https://www.example.com 了解更多信息。",
    "我們今天晚上一起吃飯吧。",
    "她说：“我不知道他为什么没来。”",
    "谢谢。",
)


@pytest.fixture(scope="session")
def tiny_checkpoint(tiny_marian_dir: Path) -> Any:
    """The tiny checkpoint loaded with transformers (``build.families.marian.LoadedCheckpoint``: model, tokenizer,
    spec)."""
    from build.families.marian import load_checkpoint

    return load_checkpoint(tiny_marian_dir)


@pytest.fixture(scope="session")
def tiny_spec(tiny_checkpoint: Any) -> ModelSpec:
    return tiny_checkpoint.spec  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def tiny_fp32_model(tiny_checkpoint: Any, tmp_path_factory: pytest.TempPathFactory) -> OnnxMarian:
    """The tiny checkpoint's FP32 graphs (no quantization), so decoding can be compared with transformers."""
    from build.families.marian.graphs import export_graphs

    encoder, decoder = export_graphs(tiny_checkpoint.model, tmp_path_factory.mktemp("tiny-fp32"))
    return OnnxMarian(encoder, decoder, tiny_checkpoint.spec, threads=1)


@pytest.fixture(scope="session")
def source_batch(tiny_checkpoint: Any) -> tuple[np.ndarray, np.ndarray]:
    """``SENTENCES`` tokenized by MarianTokenizer as one right-padded batch: (input_ids, attention_mask)."""
    encoded = tiny_checkpoint.tokenizer(list(SENTENCES), padding=True, return_tensors="np")
    return encoded["input_ids"].astype(np.int64), encoded["attention_mask"].astype(np.int64)


@pytest.fixture(scope="session")
def tiny_config(tiny_bundle_dir: Path) -> RuntimeConfig:
    return RuntimeConfig(bundle_dir=tiny_bundle_dir, threads=1, beam_size=2)


@pytest.fixture(scope="session")
def tiny_loaded(tiny_config: RuntimeConfig) -> LoadedModel:
    """The tiny INT8 bundle, checked, opened and warmed up by the loader."""
    return load_model(tiny_config)
