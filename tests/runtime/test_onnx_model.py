"""The ONNX Runtime wrapper: cache shapes and order as in the bundle contract, normalised log-probabilities."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from handler.model.families.marian.sessions import OnnxMarian
from handler.model.loader import LoadedModel
from handler.model.sessions import session_options
from tests.runtime.conftest import run_probe


def test_encode_and_step_shapes_follow_the_contract(tiny_loaded: LoadedModel, source_batch: Any) -> None:
    model, spec = tiny_loaded.model, tiny_loaded.spec
    input_ids, attention_mask = source_batch
    batch, src_len = input_ids.shape
    cross = model.encode(input_ids, attention_mask)
    assert len(cross) == 2 * spec.decoder_layers
    assert {array.shape for array in cross} == {(batch, spec.attention_heads, src_len, spec.head_dim)}

    past = model.empty_past(batch)
    assert {array.shape for array in past} == {(batch, spec.attention_heads, 0, spec.head_dim)}
    tokens = np.full((batch, 1), spec.decoder_start_id, dtype=np.int64)
    for length in (1, 2, 3):
        log_probs, past = model.step(tokens, attention_mask, past, cross)
        assert log_probs.shape == (batch, spec.vocab_size) and log_probs.dtype == np.float32
        np.testing.assert_allclose(np.exp(log_probs).sum(axis=1), 1.0, rtol=1e-4)
        assert {array.shape for array in past} == {(batch, spec.attention_heads, length, spec.head_dim)}
        tokens = log_probs.argmax(axis=1)[:, None]


def test_padding_does_not_change_a_sentence_result(tiny_fp32_model: OnnxMarian, source_batch: Any) -> None:
    # the same sentence alone and inside a padded batch gives the same next-token distribution (FP32 graphs:
    # INT8 graphs quantize activations with one scale per tensor, so there a batch's rows affect each other)
    model, spec = tiny_fp32_model, tiny_fp32_model.spec
    input_ids, attention_mask = source_batch
    row = int(attention_mask.sum(axis=1).argmin())  # the most padded row
    length = int(attention_mask[row].sum())
    start = np.full((1, 1), spec.decoder_start_id, dtype=np.int64)
    alone, _ = model.step(
        start,
        attention_mask[row : row + 1, :length],
        model.empty_past(1),
        model.encode(input_ids[row : row + 1, :length], attention_mask[row : row + 1, :length]),
    )
    start_all = np.full((len(input_ids), 1), spec.decoder_start_id, dtype=np.int64)
    batched, _ = model.step(
        start_all, attention_mask, model.empty_past(len(input_ids)), model.encode(input_ids, attention_mask)
    )
    np.testing.assert_allclose(batched[row], alone[0], atol=1e-4)


def test_session_options_reject_zero_threads() -> None:
    with pytest.raises(ValueError, match="threads must be at least 1; got 0"):
        session_options(0, spinning=False)
    assert session_options(2, spinning=True).get_session_config_entry("session.intra_op.allow_spinning") == "1"


FORK_PROBE = r"""
import json, os, sys, time
from pathlib import Path
import numpy as np
from handler.config import RuntimeConfig
from handler.model.loader import load_model

loaded = load_model(RuntimeConfig(bundle_dir=Path(sys.argv[1]), threads=2))
model, spec = loaded.model, loaded.spec

def threads_while_translating():
    ids = np.array([[5, 6, 7, spec.eos_id]], dtype=np.int64)
    cross = model.encode(ids, np.ones_like(ids))
    model.step(np.array([[spec.decoder_start_id]]), np.ones_like(ids), model.empty_past(1), cross)
    return len(os.listdir("/proc/self/task"))

read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:  # a gunicorn worker, say: translate, report, then exit the normal way (destructors run)
    os.close(read_end)
    os.write(write_end, str(threads_while_translating()).encode())
    os.close(write_end)
    sys.exit(0)
os.close(write_end)
child_threads = int(os.read(read_end, 64) or b"0")
began = time.monotonic()
while os.waitpid(pid, os.WNOHANG) == (0, 0):
    if time.monotonic() - began > 20:
        os.kill(pid, 9)
        break
    time.sleep(0.05)
print(json.dumps({"child_threads": child_threads, "child_exit_s": time.monotonic() - began,
                  "parent_threads": threads_while_translating()}))
"""


def test_a_forked_child_runs_the_model_on_its_own_threads_and_exits_promptly(tiny_bundle_dir: Path) -> None:
    # ONNX Runtime's pool threads do not survive fork(): without reopening, the child computes on one thread and
    # hangs for tens of seconds at exit destroying the pool it inherited
    figures = run_probe(FORK_PROBE, tiny_bundle_dir)
    assert figures["child_threads"] >= 2, figures  # the calling thread plus ONNX Runtime's intra-op thread
    assert figures["child_exit_s"] < 10, figures
    assert figures["parent_threads"] >= 2, figures  # the parent reopened its sessions on their next use


def test_no_session_keeps_an_arena_and_large_graphs_open_without_prepacked_weights(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from handler.model import sessions

    lean = session_options(2, spinning=False, lean=True)
    assert lean.get_session_config_entry("session.disable_prepacking") == "1"
    assert not lean.enable_cpu_mem_arena
    small = session_options(2, spinning=False)
    assert not small.enable_cpu_mem_arena
    with pytest.raises(RuntimeError, match="does not have configuration"):  # pre-packing stays on
        small.get_session_config_entry("session.disable_prepacking")
    graph = tmp_path / "encoder.onnx"
    graph.write_bytes(b"x" * 1000)
    assert not sessions.loads_lean(graph, tmp_path / "missing.onnx")
    monkeypatch.setattr(sessions, "LEAN_LOADING_BYTES", 999)
    assert sessions.loads_lean(graph, tmp_path / "missing.onnx")


def test_a_large_bundle_keeps_its_decoder_prepacked_unless_the_decoder_alone_is_large(
    tiny_bundle_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handler.model import bundle, sessions
    from handler.model.loader import load_bundle

    spec = load_bundle(tiny_bundle_dir).model
    encoder, decoder = tiny_bundle_dir / bundle.ENCODER_ONNX, tiny_bundle_dir / bundle.DECODER_ONNX
    shared = tiny_bundle_dir / bundle.SHARED_EMBEDDING  # counted with the decoder where the bundle has one
    decoder_bytes = bundle.graph_bytes(decoder) + (shared.stat().st_size if shared.is_file() else 0)

    def prepacks(session: Any) -> bool:
        try:
            return session.get_session_options().get_session_config_entry("session.disable_prepacking") != "1"
        except RuntimeError:  # "does not have configuration": pre-packing on
            return True

    # GIVEN a bundle larger than the limit whose decoder (with the embedding it reads) is within it
    monkeypatch.setattr(sessions, "LEAN_LOADING_BYTES", decoder_bytes)
    model = OnnxMarian(encoder, decoder, spec)
    assert model.lean and model.decoder_prepacked
    assert prepacks(model.decoder) and not prepacks(model.encoder)
    # GIVEN a decoder larger than the limit by itself
    monkeypatch.setattr(sessions, "LEAN_LOADING_BYTES", decoder_bytes - 1)
    model = OnnxMarian(encoder, decoder, spec)
    assert model.lean and not model.decoder_prepacked
    assert not prepacks(model.decoder) and not prepacks(model.encoder)
