"""The formats' sample modules (``tests/formats/<format>_samples.py``), found by name, so that a new format's
samples reach every path's test (``tests/adapters/test_format_paths.py``, ``tests/adapters/test_documents.py``)
and ``make fidelity`` without an edit there.

Each module provides ``FORMAT`` (the name in ``handler.formats``), ``SUFFIX``, ``sample_file()`` (the awkward cases,
made with the library a user opens the file with), ``file_of(sentences)`` (a file holding those sentences in the
format's usual structures) and ``inspect(data)`` (``tests.formats.inspection.Inspection``, read with that library).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Protocol, cast

from tests.formats.inspection import Inspection

_HERE = Path(__file__).parent


class FormatSamples(Protocol):
    FORMAT: str
    SUFFIX: str
    sample_file: Callable[[], bytes]
    file_of: Callable[[Sequence[str]], bytes]
    inspect: Callable[[bytes], Inspection]


def sample_modules() -> dict[str, FormatSamples]:
    """Every format's samples module by its format's name, in file-name order."""
    found: dict[str, FormatSamples] = {}
    for path in sorted(_HERE.glob("*_samples.py")):
        module: ModuleType = importlib.import_module(f"tests.formats.{path.stem}")
        found[module.FORMAT] = cast(FormatSamples, module)
    return found


def samples_for(name: str) -> FormatSamples | None:
    """The samples module of the format of the file ``name`` (by its suffix), if it has one."""
    lowered = name.lower()
    return next((module for module in sample_modules().values() if lowered.endswith(module.SUFFIX)), None)


def sample_documents(stem: str = "sample") -> dict[str, bytes]:
    """One sample file per format, by a file name with its suffix (``sample.pptx``)."""
    return {f"{stem}{module.SUFFIX}": module.sample_file() for module in sample_modules().values()}
