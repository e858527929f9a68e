"""schemathesis against the live server: functions-framework as ``make run`` starts it, on the shipped default
model, its description fetched from ``GET /openapi.json`` (``st run``, the schemathesis command line).

Every operation of the description (69) gets its explicit examples, the coverage phase's boundary and
invalid values and ``MAX_EXAMPLES`` generated requests, valid and invalid, with a fixed seed (the same requests
each run), and the stateful phase's chains of operations (the links schemathesis infers). Every check runs: no
5xx; a documented status code, content type, body schema and headers (``X-Request-Id`` on every answer); invalid
data refused and valid data accepted (413 counts as a refusal: the limits over all texts are more than a schema
says; ``schemathesis.toml``); undocumented methods answered 405; and the rest of ``--checks all``. The run must end
without a failure and with exactly the two warnings ``schemathesis.toml`` explains (``EXPECTED_WARNINGS``: the
glossary routes). The server runs with
``TRANSLATE_MAX_CHARS=400`` so no generated text keeps the model long.

Bounds: at most ``MAX_EXAMPLES`` generated cases per operation and phase, ``REQUEST_TIMEOUT_S`` per request, and
the whole run is killed and fails after ``WALL_CLOCK_BOUND_S``, well above what a run takes (its measured duration
and request count: docs/reliability.md).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from handler.config import DEFAULT_BUNDLE_DIR
from handler.model.bundle import MANIFEST
from tests.adapters.conftest import function_env, start_functions_framework

pytestmark = [pytest.mark.slow, pytest.mark.shipped_model]

MAX_EXAMPLES = 12
# the suite's fixed seed (the same requests every run); `make schemathesis` runs it with a fresh one, printed
SEED = int(os.environ.get("SCHEMATHESIS_SEED") or 1)
REQUEST_TIMEOUT_S = 30
WALL_CLOCK_BOUND_S = 240
CONFIG = Path(__file__).with_name("schemathesis.toml")


@pytest.fixture(scope="module")
def shipped_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (DEFAULT_BUNDLE_DIR / MANIFEST).exists():
        pytest.skip(f"the shipped bundle {DEFAULT_BUNDLE_DIR} is not built (no {MANIFEST})")
    log_dir = tmp_path_factory.mktemp("schemathesis")
    # the glossaries, uploaded documents and translated files it makes go to a folder of the test's own
    state = tmp_path_factory.mktemp("schemathesis-state")
    env = function_env(
        Path(DEFAULT_BUNDLE_DIR), TRANSLATE_MAX_CHARS="400", TRANSLATE_MAX_TEXTS="8", TRANSLATE_STATE_DIR=str(state)
    )
    server, url = start_functions_framework("translate_http", env, log_dir)
    yield url
    server.stop()


def test_every_operation_answers_as_described(shipped_server_url: str, tmp_path: Path) -> None:
    command = [
        str(Path(sys.executable).with_name("st")),
        "--config-file",
        str(CONFIG),
        "run",
        f"{shipped_server_url}/openapi.json",
        "--checks",
        "all",
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--workers",
        "1",  # several workers hit a race inside schemathesis's coverage phase (a KeyError, not our server)
        "--request-timeout",
        str(REQUEST_TIMEOUT_S),
        "--generation-database",
        "none",
        "--no-color",
        "--output-truncate",
        "false",
        "--report",
        "junit",
        "--report-dir",
        str(tmp_path),
    ]
    began = time.monotonic()
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=WALL_CLOCK_BOUND_S, cwd=tmp_path)
    except subprocess.TimeoutExpired as timeout:
        pytest.fail(f"schemathesis ran past its {WALL_CLOCK_BOUND_S} s bound:\n{timeout.stdout}")
    print(f"schemathesis (seed {SEED}): {time.monotonic() - began:.1f} s\n{run.stdout[-1500:]}")
    replay = f"\nseed {SEED}: SEED={SEED} make schemathesis replays this run"
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:] + replay
    # every operation of the description is run (none left out), whatever their number
    assert re.search(r"(\d+) selected / \1 total", run.stdout) and "❌" not in run.stdout, run.stdout[-3000:]
    assert re.search(r"(\d+) generated, \1 passed", run.stdout), run.stdout[-3000:]
    # the two warnings schemathesis.toml explains, each about the glossary operations only, and no other
    warned = {warning: sorted(operations) for warning, operations in warnings_of(run.stdout).items()}
    assert warned == EXPECTED_WARNINGS, run.stdout[-5000:]


# what schemathesis warns of (schemathesis.toml says why): a generated glossary ID names no glossary (404; the stateful
# phase's inferred links do not reach these routes), and a glossary's entries follow rules no schema states (400)
EXPECTED_WARNINGS = {  # each list sorted
    "Missing test data": sorted(
        [
            "DELETE /v2/glossaries/{glossary_id}",
            "GET /v2/glossaries/{glossary_id}",
            "GET /v2/glossaries/{glossary_id}/entries",
            "HEAD /v2/glossaries/{glossary_id}",
            "HEAD /v2/glossaries/{glossary_id}/entries",
            "DELETE /v3/glossaries/{glossary_id}",
            "GET /v3/glossaries/{glossary_id}",
            "GET /v3/glossaries/{glossary_id}/entries",
            "HEAD /v3/glossaries/{glossary_id}",
            "HEAD /v3/glossaries/{glossary_id}/entries",
        ]
    ),
    "Schema validation mismatch": ["POST /v2/glossaries", "POST /v3/glossaries"],
}


def warnings_of(stdout: str) -> dict[str, list[str]]:
    """Each warning of a run's WARNINGS section and the operations it lists."""
    if "= WARNINGS =" not in stdout:
        return {}
    section = stdout.split("= WARNINGS =", 1)[1].split("= SUMMARY =", 1)[0]
    found: dict[str, list[str]] = {}
    current = None
    for line in section.splitlines():
        if line.startswith("No links point to these operations"):
            continue  # a group of the current warning's operations (by the operation that could supply their data)
        if line and not line.startswith((" ", "💡", "=")):
            current = line.split(":", 1)[0]
            found[current] = []
        elif line.startswith("  - ") and current is not None:
            found[current].append(line[4:].strip())
    return found


def test_the_description_schemathesis_runs_holds_every_drop_in_route() -> None:
    # the run above covers what GET /openapi.json describes: each DeepL and LibreTranslate route must be in it, with
    # every body type those APIs read, or their hostile bodies would go unfuzzed
    from handler.api.compat import deepl, libretranslate
    from handler.api.openapi import build_document, described_operations
    from handler.config import RuntimeConfig

    document = build_document(RuntimeConfig(bundle_dir=DEFAULT_BUNDLE_DIR))
    served = {
        (method, path) for api in (deepl, libretranslate) for path, methods in api.ROUTES.items() for method in methods
    }
    assert served <= described_operations(document)
    for path in ("/v2/translate", "/detect", "/translate"):
        content = document["paths"][path]["post"]["requestBody"]["content"]
        assert {"application/json", "application/x-www-form-urlencoded"} <= set(content), path
