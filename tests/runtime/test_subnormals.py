"""Subnormal floats flushed to zero while ONNX Runtime computes, and only then (``handler.model.subnormals``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from handler.model import subnormals
from handler.model.sessions import session_options
from tests.runtime.conftest import run_probe

needs_flags = pytest.mark.skipif(not subnormals.supported(), reason="the flags are set on x86-64 Linux with glibc")


def _flushes() -> bool:
    """float32 1e-40 is subnormal: kept by default, read and written as zero with the flags set."""
    return bool(np.array([1e-40], dtype=np.float32)[0] * np.float32(1.0) == 0.0)


def test_the_one_node_graph_of_the_first_session_is_what_onnx_writes() -> None:
    from onnx import TensorProto, helper

    value = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1]) for name in ("x", "y")]
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "flush_denormals", value[:1], value[1:])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    assert model.SerializeToString() == subnormals.IDENTITY_GRAPH


@needs_flags
def test_the_calling_thread_flushes_within_the_block_only() -> None:
    assert not _flushes()
    with subnormals.flushed():
        assert _flushes()
        with subnormals.flushed():  # nested: the inner block puts back the outer one's mode
            assert _flushes()
        assert _flushes()
    assert not _flushes()
    with pytest.raises(ValueError), subnormals.flushed():
        raise ValueError("the mode is put back when the block raises")
    assert not _flushes()


def test_every_session_asks_onnx_runtime_to_flush_in_its_pool_threads() -> None:
    assert session_options(1, spinning=False).get_session_config_entry(subnormals.POOL_OPTION) == "1"


PROBE = r"""
import json, sys
from pathlib import Path
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

def flushes():
    return bool(np.array([1e-40], dtype=np.float32)[0] * np.float32(1.0) == 0.0)

from handler.config import RuntimeConfig
from handler.model import subnormals
from handler.model.families.base import SearchRequest
from handler.model.loader import load_model

# the program's first sessions built on this thread (the decoder's is: OnnxEncoderDecoder.open), as a test does
from handler.model.families.marian.sessions import OnnxMarian
from handler.model.loader import load_bundle
folder = Path(sys.argv[1])
OnnxMarian(folder / "encoder.onnx", folder / "decoder.onnx", load_bundle(folder, verify_hashes=False).model, threads=2)
after_opening = flushes()

# the model loaded and used on this thread, as a CLI or a Lambda function does
loaded = load_model(RuntimeConfig(bundle_dir=folder, threads=2))
ids = loaded.tokenizer.encode_batch(["你好", "今天天气很好"])
loaded.search(ids, SearchRequest(beam_size=2, max_new_tokens=4))
after_loading = flushes()

# what a step's session sees: the decoder's run, wrapped by a session that records the thread's mode
class Recording:
    def __init__(self, session):
        self.session, self.seen = session, []
    def run(self, *args, **kwargs):
        self.seen.append(flushes())
        return self.session.run(*args, **kwargs)
model = loaded.model
model._decoder = recording = Recording(model.decoder)
model._encoder = encoding = Recording(model.encoder)
loaded.search(ids, SearchRequest(beam_size=2, max_new_tokens=4))

# ONNX Runtime itself, on the calling thread (one thread: all the work is this thread's)
graph = helper.make_graph(
    [helper.make_node("Mul", ["x", "one"], ["y"])], "g",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])],
)
options = ort.SessionOptions()
options.intra_op_num_threads = 1
cpu = ["CPUExecutionProvider"]
session = ort.InferenceSession(helper.make_model(graph).SerializeToString(), options, providers=cpu)
tiny = {"x": np.array([1e-40], dtype=np.float32)}
outside = float(session.run(None, tiny)[0][0])
with subnormals.flushed():
    inside = float(session.run(None, tiny)[0][0])
print(json.dumps({"after_opening": after_opening, "after_loading": after_loading,
                  "in_steps": sorted(set(recording.seen)), "in_encoder": sorted(set(encoding.seen)),
                  "outside": outside, "inside": inside, "at_the_end": flushes()}))
"""


@needs_flags
def test_sessions_compute_flushed_and_the_program_keeps_ieee_subnormals(tiny_bundle_dir: Path) -> None:
    # a fresh process: ONNX Runtime sets the flags once per process in the thread of its first session; the loader
    # must not let that be the program's thread (Hypothesis, for one, refuses to run where they are set)
    figures = run_probe(PROBE, tiny_bundle_dir)
    assert not figures["after_opening"] and not figures["after_loading"] and not figures["at_the_end"], figures
    assert figures["in_steps"] == [True] and figures["in_encoder"] == [True], figures
    assert figures["outside"] == pytest.approx(1e-40, rel=1e-3) and figures["inside"] == 0.0, figures


FIRST_SESSION_PROBE = r"""
import json
import numpy as np
import onnxruntime as ort
from handler.model import subnormals

if SETTLE:
    subnormals.settle_process_mode()
options = ort.SessionOptions()
options.add_session_config_entry(subnormals.POOL_OPTION, "1")
ort.InferenceSession(subnormals.IDENTITY_GRAPH, options, providers=["CPUExecutionProvider"])  # on this thread
print(json.dumps({"flushes": bool(np.array([1e-40], dtype=np.float32)[0] * np.float32(1.0) == 0.0)}))
"""


@needs_flags
@pytest.mark.parametrize("settle", [True, False])
def test_onnx_runtimes_once_per_process_setting_lands_on_a_thread_of_its_own(settle: bool, tmp_path: Path) -> None:
    # ONNX Runtime sets the flags for good in the thread that creates the process's first session with the option
    # (the control, settle=False); settle_process_mode makes that a short-lived thread of its own
    figures = run_probe(FIRST_SESSION_PROBE.replace("SETTLE", str(settle)), tmp_path)
    assert figures == {"flushes": not settle}
