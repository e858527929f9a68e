"""The floor under an engine's memory and cold-start figures: what its libraries cost before any model.

``measure_floors`` starts fresh processes (``bench.pipeline.engines`` with a ``"floor"`` job: the interpreter, then
the libraries the engine cannot translate without, ``engines.FLOOR_LIBRARIES``, and no model), a few per engine,
interleaved, and keeps the median of each figure: the RSS once they are imported, and the seconds from the parent's
clock before the process started to then (the interpreter's start included, as the cold start counts it).

``weight_bytes(bundle_dir)`` is what a bundle holds of weights: its graphs' external weights files and the shared
embedding (the small tensors stored inside the graph files are left out, so the figure is a lower bound). A
translation reads every one of them (every layer's products at every step, and the output projection, the whole
embedding), so a runtime that keeps what it reads in memory holds at least its floor plus these bytes after its
first translation. ``FloorBound`` compares that with CTranslate2's RSS after load: where the bound is higher, no
runtime built on these libraries that keeps its weights in memory can meet the RSS-after-load goal, whatever it does
with its graphs.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.pipeline.engines import FLOOR_LIBRARIES

MIB = 1024 * 1024  # the RSS figures' "MB" (bench.pipeline.memory: /proc's kB / 1024)
Run = Callable[[str, dict[str, Any]], dict[str, Any]]  # (module, job) -> figures: side_by_side.run_process


@dataclass(frozen=True)
class Floor:
    """An engine's floor: the median over its processes."""

    engine: str
    libraries: tuple[str, ...]
    rss_mb: float
    import_s: float
    processes: int


def measure_floors(engines: Sequence[str], rounds: int, run: Run) -> dict[str, Floor]:
    """``rounds`` fresh processes per engine, the engines interleaved in every round."""
    figures: dict[str, list[dict[str, Any]]] = {engine: [] for engine in engines}
    for _ in range(rounds):
        for engine in engines:
            figures[engine].append(run("bench.pipeline.engines", {"engine": engine, "floor": True}))
    return {
        engine: Floor(
            engine=engine,
            libraries=FLOOR_LIBRARIES[engine],
            rss_mb=statistics.median(figure["rss_mb"] for figure in runs),
            import_s=statistics.median(figure["import_s"] for figure in runs),
            processes=len(runs),
        )
        for engine, runs in figures.items()
    }


def weight_bytes(bundle_dir: Path) -> int:
    """Bytes of the bundle's weights: every ``<graph>.data`` and the shared embedding (``handler.model.bundle``)."""
    from handler.model import bundle

    names = [bundle.weights_file(graph) for graph in bundle.MODEL_FILES] + [bundle.SHARED_EMBEDDING]
    return sum((bundle_dir / name).stat().st_size for name in names if (bundle_dir / name).is_file())


@dataclass(frozen=True)
class FloorBound:
    """This runtime's floor plus its bundle's weights, against CTranslate2's RSS after load (all in MB)."""

    floor_mb: float
    weights_mb: float
    reference_rss_mb: float

    @property
    def bound_mb(self) -> float:
        return self.floor_mb + self.weights_mb

    @property
    def reachable(self) -> bool:
        """Whether a runtime on these libraries could hold its weights within CTranslate2's RSS after load."""
        return self.bound_mb <= self.reference_rss_mb


def floor_bound(floor: Floor, bundle_dir: Path, reference_rss_mb: float) -> FloorBound:
    return FloorBound(floor.rss_mb, weight_bytes(bundle_dir) / MIB, reference_rss_mb)
