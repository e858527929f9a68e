"""The mutation score of each module of handler/ from mutmut's results in mutants/ (``make mutation`` prints it).

Score = killed / (tested - equivalent): killed counts mutants a test failed on or that timed out; a mutant no
selected test reaches ("no tests") counts as tested and surviving; the equivalent mutants (docs/mutation.md: they
change no behaviour, so no test can kill them) are listed in ``EQUIVALENT`` with the reason and left out.
Run: ``.venv/bin/python -m tests.mutation_scores [module ...]`` at the repository root after ``mutmut run``.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

MUTANTS = Path("mutants")
RUN_TIMES = MUTANTS / "run_times.json"  # written by tests.mutation_run

# mutant name -> why it changes no observable behaviour (also in docs/mutation.md)
EQUIVALENT: dict[str, str] = {
    "handler.config.xǁRuntimeConfigǁ__post_init____mutmut_44": (
        '"\\0" -> "XX\\0XX": the sentinel stands for "no output prefix" in work_prefix.startswith(...); no key prefix '
        "starts with either, so both refuse nothing"
    ),
    "handler.config.xǁRuntimeConfigǁ__post_init____mutmut_48": (
        '(output_prefix or "") -> (output_prefix or "XXXX"): the work prefix must end in "/", so it is a prefix of '
        "neither string"
    ),
}


def module_results(meta: Path) -> Counter[str]:
    data = json.loads(meta.read_text(encoding="utf-8"))
    counts: Counter[str] = Counter()
    for name, exit_code in data.get("exit_code_by_key", {}).items():
        if name in EQUIVALENT:
            counts["equivalent"] += 1
            continue
        counts[status_by_exit_code[exit_code]] += 1
    return counts


def main(modules: list[str]) -> None:
    runs = json.loads(RUN_TIMES.read_text(encoding="utf-8")) if RUN_TIMES.exists() else {}
    print("| module | mutants | checked | killed | timeout | survived | no tests | equivalent | score | run time |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for meta in sorted(MUTANTS.glob("handler/**/*.py.meta")):
        module = str(meta.relative_to(MUTANTS))[: -len(".meta")]
        if modules and module not in modules:
            continue
        counts = module_results(meta)
        killed = counts["killed"] + counts["timeout"] + counts["caught by type check"]
        checked = killed + counts["survived"] + counts["no tests"] + counts["suspicious"] + counts["segfault"]
        score = f"{100 * killed / checked:.1f} %" if checked else "-"
        total = sum(counts.values())
        run = runs.get(module, {})
        took = f"{run['seconds']} s" if run else "-"
        if run.get("sample"):
            took += f" (sample of {run['sample']}, seed {run['seed']})"
        print(
            f"| {module} | {total} | {checked + counts['equivalent']} | {counts['killed']} | {counts['timeout']} "
            f"| {counts['survived']} | {counts['no tests']} | {counts['equivalent']} | {score} | {took} |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
