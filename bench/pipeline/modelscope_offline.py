"""Running modelscope's own CSANMT code offline in a process of its own: the import stand-in and the environment.

``modelscope.pipelines`` imports ``modelscope.msdatasets`` (Hugging Face ``datasets``, pandas, pyarrow) for dataset
loading the translation pipeline never uses; ``datasets`` pins an older ``fsspec`` than the test environment's lock,
so a process that imports modelscope's pipelines first installs ``MsdatasetsStandIn``, which answers that import
with an empty module (any attribute an inert placeholder class). Nothing of modelscope's translation code is
replaced. ``environment`` is what such a process runs under: CPU only, TensorFlow's log quiet, modelscope's cache in
a folder of the caller's (it writes there even offline: no hub is contacted for a local folder).

The benchmark (``bench.pipeline.csanmt_tensorflow``) and the tests' oracles (``tests.csanmt.oracle``,
``tests.csanmt_runtime.oracle``) share this module; it imports only the standard library.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

STUBBED = "modelscope.msdatasets"


class MsdatasetsStandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Stand-in for ``modelscope.msdatasets``: any attribute is an inert placeholder class."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == STUBBED or fullname.startswith(f"{STUBBED}."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _Placeholders(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _Placeholders(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (), {})
        setattr(self, name, value)
        return value


def install_stand_in() -> None:
    """Answer ``import modelscope.msdatasets`` with the stand-in from now on (once per process)."""
    if not any(isinstance(finder, MsdatasetsStandIn) for finder in sys.meta_path):
        sys.meta_path.insert(0, MsdatasetsStandIn())


def graph_mode() -> Any:
    """``tensorflow.compat.v1`` with eager execution off, as modelscope's CSANMT code runs."""
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    return tf1


def environment(cache_dir: Path, threads: int | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default ``os.environ``) for a process running modelscope's TensorFlow code: CPU only, quiet,
    ``MODELSCOPE_CACHE`` in ``cache_dir``, no ``USE_TF``; ``threads`` (when given) sets TensorFlow's intra-op
    threads, with one inter-op thread, for the sessions modelscope opens without thread settings of their own
    (``TF_NUM_INTRAOP_THREADS`` / ``TF_NUM_INTEROP_THREADS``, read by TensorFlow when a session's ``ConfigProto``
    leaves them at 0)."""
    variables = {
        **(os.environ if base is None else base),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "CUDA_VISIBLE_DEVICES": "",
        "MODELSCOPE_CACHE": str(cache_dir),
    }
    variables.pop("USE_TF", None)  # modelscope reads it too: "0" (set for transformers elsewhere) hides TensorFlow
    if threads is not None:
        variables |= {"TF_NUM_INTRAOP_THREADS": str(threads), "TF_NUM_INTEROP_THREADS": "1"}
    return variables
