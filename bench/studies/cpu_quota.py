"""The thread count under the platforms' CPU shares: this runtime and CTranslate2 with 1 and 2 threads, each in a
process limited to a share of the CPU as a function is.

    python -m bench.studies.cpu_quota [--quotas 1.0 1.16 0] [--threads 1 2] [--rounds 1]
        [--bundle DIR --ctranslate2 DIR]

A 2,048 MB Lambda function sees 2 vCPUs and may use 1.16 of them (1 vCPU per 1,769 MB); a Cloud Run service at
1 vCPU (as ``infra/gcp/deploy.sh`` deploys it) gets one CPU's time. Linux gives a process such a share through a
CFS quota, which is what this study sets: every measuring process (``bench.pipeline.engines``, the same job and
figures as ``make bench``) runs in a cgroup whose ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (cgroup v1) or
``cpu.max`` (v2) is the quota; 0 means no quota (the machine's own cores). The handler's default is one thread per
available CPU, at most 2 (``RuntimeConfig.intra_op_threads``): on Lambda 2, on a one-vCPU Cloud Run 1.

It needs to write cgroups (root, or a delegated cgroup), and says so when it cannot. A script, not a test: its
figures only mean something on an otherwise idle machine. Default models: the bench's cached pair
(``.bench/runtime/default``: the shipped default bundle and its CTranslate2 conversion, written by ``make bench``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.pipeline.side_by_side import (
    CTRANSLATE2,
    RUNTIME,
    Workload,
    run_process,
    workload_job,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BUNDLE = REPO_ROOT / "model_artifacts" / "default"
DEFAULT_CTRANSLATE2 = REPO_ROOT / ".bench" / "runtime" / "default" / "ctranslate2-int8"
PERIOD_US = 100_000
FIGURES = ("cold_start_s", "b1_beam4_ms", "batch_greedy_tok_s", "batch_beam4_tok_s")


class QuotaUnavailable(RuntimeError):
    """No CPU controller this process may write: the study cannot limit its children."""


class CpuQuota:
    """A cgroup with a CFS quota of ``cpus`` CPUs (cgroup v1 ``cpu`` controller or v2 ``cpu.max``)."""

    def __init__(self, cpus: float, name: str = "translate-cpu-quota") -> None:
        quota = int(round(cpus * PERIOD_US))
        v1, v2 = Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")
        try:
            if (v1 / "cpu.cfs_quota_us").is_file():
                self.folder = v1 / f"{name}-{quota}"
                self.folder.mkdir(exist_ok=True)
                (self.folder / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                (self.folder / "cpu.cfs_quota_us").write_text(str(quota))
                self.tasks = self.folder / "tasks"
            elif (v2 / "cgroup.controllers").is_file():
                self.folder = v2 / f"{name}-{quota}"
                self.folder.mkdir(exist_ok=True)
                (self.folder / "cpu.max").write_text(f"{quota} {PERIOD_US}")
                self.tasks = self.folder / "cgroup.procs"
            else:
                raise QuotaUnavailable("no cgroup CPU controller under /sys/fs/cgroup")
        except OSError as error:
            raise QuotaUnavailable(
                f"cannot set a CPU quota ({error}): run as root, or in a cgroup delegated to this user"
            ) from error

    def enter(self) -> None:
        """Move the calling process (a child, before it runs the measuring program) into the cgroup."""
        self.tasks.write_text(str(os.getpid()))

    def remove(self) -> None:
        try:
            self.folder.rmdir()
        except OSError:
            pass


def measure(
    bundle: Path, ctranslate2: Path, quotas: list[float], threads: list[int], rounds: int, workload: Workload
) -> list[dict[str, Any]]:
    _, common = workload_job(bundle, workload)
    rows = []
    for cpus in quotas:
        quota = CpuQuota(cpus) if cpus else None
        enter: Callable[[], None] | None = quota.enter if quota is not None else None
        try:
            for count in threads:
                for engine, folder in ((RUNTIME, bundle), (CTRANSLATE2, ctranslate2)):
                    runs = []
                    for round_number in range(rounds):
                        job = common | {"engine": engine, "model_dir": str(folder), "threads": count}
                        print(f"  quota {cpus or 'none'}, {count} thread(s), {engine}: round {round_number + 1}")
                        runs.append(run_process("bench.pipeline.engines", job, preexec_fn=enter))
                    row = {"cpus": cpus, "threads": count, "engine": engine}
                    row |= {figure: statistics.median(run[figure] for run in runs) for figure in FIGURES}
                    rows.append(row)
                    shown = {key: round(value, 3) if isinstance(value, float) else value for key, value in row.items()}
                    print("   ", shown)
        finally:
            if quota is not None:
                quota.remove()
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| CPU quota | threads | engine | cold start | batch-1 beam 4 | batch-16 greedy | batch-16 beam 4 |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        quota = f"{row['cpus']:g} CPU" if row["cpus"] else "none (2 cores)"
        lines.append(
            f"| {quota} | {row['threads']} | {row['engine']} | {row['cold_start_s']:.2f} s | "
            f"{row['b1_beam4_ms']:.1f} ms | {row['batch_greedy_tok_s']:,.0f} tok/s | "
            f"{row['batch_beam4_tok_s']:,.0f} tok/s |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.cpu_quota", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quotas", type=float, nargs="+", default=[1.0, 1.16, 0.0], help="CPUs; 0 = no quota")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=1, help="fresh processes per cell (default 1)")
    parser.add_argument("--bundle", type=Path, default=DEFAULT_BUNDLE, help="this runtime's bundle")
    parser.add_argument(
        "--ctranslate2", type=Path, default=DEFAULT_CTRANSLATE2, help="CTranslate2's conversion of the same model"
    )
    args = parser.parse_args(argv)
    if not (args.ctranslate2 / "model.bin").is_file():
        parser.error(f"{args.ctranslate2} holds no CTranslate2 model: run make bench first, or pass --ctranslate2")
    try:
        rows = measure(args.bundle, args.ctranslate2, args.quotas, args.threads, args.rounds, Workload())
    except QuotaUnavailable as error:
        print(error, file=sys.stderr)
        return 1
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
