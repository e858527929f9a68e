"""``make mutation MODULE=handler/config.py [SAMPLE=200]``: mutmut 3.8.1 on one module with the tests that reach it.

mutmut reads one ``[tool.mutmut]`` (``pyproject.toml``) for every run; this front door narrows it per run:
``only_mutate`` = the module, the test selection = ``TESTS_BY_MODULE[module]`` (torch-free tests that exercise it,
so the forked workers stay light). The module's old mutants and ``mutants/mutmut-stats.json`` are removed first,
so the run generates and checks the module afresh. ``SAMPLE=N`` checks a random sample of N of the module's mutants
(``random.Random(SEED)``, seed 20261201), for a module whose mutants would not finish on the shared machine.
Then ``python -m tests.mutation_scores MODULE`` prints the table row.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import time
from pathlib import Path

SEED = 20261201
RUN_TIMES = Path("mutants") / "run_times.json"  # module -> seconds of its last run (tests.mutation_scores)

TESTS_BY_MODULE: dict[str, list[str]] = {
    "handler/config.py": ["tests/mutation_kills/test_config.py", "tests/runtime_text/test_request_limits.py"],
    "handler/text/segmentation.py": [
        "tests/runtime_text/test_segmentation.py",
        "tests/fuzz/test_segmentation_fuzz.py",
        "tests/mutation_kills/test_segmentation.py",
    ],
    "handler/storage/files.py": ["tests/mutation_kills/test_file_translation.py"],
    "handler/formats/encodings.py": [
        "tests/mutation_kills/test_file_translation.py",
        "tests/runtime_text/test_file_decoding.py",
        "tests/fuzz/test_decoders_fuzz.py",
    ],
    "handler/service.py": [
        "tests/mutation_kills/test_service_options.py",
        "tests/mutation_kills/test_service_pipeline.py",
        "tests/runtime_text/test_request_limits.py",
        "tests/fuzz/test_pathological_texts.py",
    ],
    "handler/api/router.py": ["tests/mutation_kills/test_http_api.py", "tests/runtime_text/test_request_limits.py"],
    "handler/api/messages.py": ["tests/mutation_kills/test_http_api.py", "tests/runtime_text/test_request_limits.py"],
    "handler/api/page.py": ["tests/mutation_kills/test_http_api.py"],
    "handler/text/parts.py": ["tests/runtime_text/test_bulk_plan.py"],
    "handler/storage/retry.py": ["tests/mutation_kills/test_retry.py"],
    "handler/api/keys.py": ["tests/mutation_kills/test_api_keys.py"],
    "handler/storage/bulk.py": ["tests/mutation_kills/test_bulk.py"],
    "handler/text/script_conversion.py": [
        "tests/mutation_kills/test_script_conversion.py",
        "tests/runtime_text/test_script_conversion.py",
    ],
    "handler/text/glossary.py": ["tests/mutation_kills/test_glossary.py", "tests/fidelity/test_glossary.py"],
    "handler/text/numbers.py": ["tests/mutation_kills/test_numbers.py", "tests/fidelity/test_numbers.py"],
    "handler/text/markup.py": ["tests/mutation_kills/test_markup.py", "tests/fidelity/test_markup.py"],
    "handler/text/spans.py": [
        "tests/mutation_kills/test_spans.py",
        "tests/fidelity/test_spans.py",
        "tests/fidelity/test_numbers.py",
    ],
    "handler/api/compat/deepl.py": ["tests/mutation_kills/test_deepl.py"],
    "handler/api/compat/libretranslate.py": ["tests/mutation_kills/test_libretranslate.py"],
    "handler/api/quotas.py": ["tests/adapters/test_key_quotas.py"],
    "handler/decoder.py": ["tests/runtime/test_decoder_rows.py", "tests/runtime/test_decoder.py"],
    "handler/metrics.py": ["tests/adapters/test_metrics_local.py"],
    "handler/api/own_shapes.py": ["tests/adapters/test_request_shapes.py", "tests/mutation_kills/test_http_api.py"],
    "handler/storage/redis_client.py": ["tests/adapters/test_key_quotas_shared.py"],
}


def _fresh(module: str) -> None:
    mutants = Path("mutants")
    for suffix in ("", ".meta", ".spans"):
        (mutants / (module + suffix)).unlink(missing_ok=True)
    (mutants / "mutmut-stats.json").unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    module, sample = argv[0], int(argv[1]) if len(argv) > 1 and argv[1] else 0
    if module not in TESTS_BY_MODULE:
        print(f"no test selection for {module}; known: {', '.join(TESTS_BY_MODULE)}")
        return 2
    tests = [t for t in TESTS_BY_MODULE[module] if Path(t).exists()]

    import mutmut.__main__ as mutmut_main
    from mutmut import configuration

    base = configuration._load_config()
    configuration._config = dataclasses.replace(base, only_mutate=[module], pytest_add_cli_args_test_selection=tests)
    if sample:
        collect = mutmut_main.collect_source_file_mutation_data

        def sampled(*, mutant_names):  # type: ignore[no-untyped-def]
            mutants, by_path = collect(mutant_names=mutant_names)
            mutants = sorted(mutants, key=lambda m: m[1])
            chosen = random.Random(SEED).sample(mutants, min(sample, len(mutants)))
            print(f"    sample: {len(chosen)} of {len(mutants)} mutants of {module} (seed {SEED})")
            return chosen, by_path

        mutmut_main.collect_source_file_mutation_data = sampled  # type: ignore[assignment]
    _fresh(module)
    started = time.monotonic()
    print(f"mutmut on {module} with {' '.join(tests)}")
    mutmut_main.cli(["run", "--max-children", argv[2] if len(argv) > 2 else "2"], standalone_mode=False)
    seconds = time.monotonic() - started
    print(f"    run time: {seconds:.0f} s")
    runs = json.loads(RUN_TIMES.read_text(encoding="utf-8")) if RUN_TIMES.exists() else {}
    runs[module] = {"seconds": round(seconds), "sample": sample, "seed": SEED if sample else None}
    RUN_TIMES.write_text(json.dumps(runs, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
