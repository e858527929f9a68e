"""``make audit``'s verdict (``build.audit_report``) never counts a package it could not check as audited.

pip-audit's JSON report, where the index mirror had no per-version JSON, and a PyPI JSON API on loopback: a pin
that is the latest release is checked against the project JSON's vulnerabilities; any other is NOT AUDITED and
counted; a known vulnerability fails; AUDIT_STRICT=1 fails on what was not audited. Bound: ~2 s.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.local_run import REPO_ROOT

PROJECTS = {  # what the JSON API answers for /pypi/<name>/json
    "latest-clean": {"info": {"version": "1.0"}, "vulnerabilities": []},
    "latest-vulnerable": {
        "info": {"version": "2.0"},
        "vulnerabilities": [{"id": "GHSA-test-0001", "fixed_in": ["2.1"], "withdrawn": None}],
    },
    "latest-withdrawn": {"info": {"version": "4.0"}, "vulnerabilities": [{"id": "PYSEC-0", "withdrawn": "2025"}]},
    "older-pin": {"info": {"version": "3.0"}, "vulnerabilities": []},
}
LOCK = """audited==5.0 \\
    --hash=sha256:00
latest-clean==1.0 \\
    --hash=sha256:00
Latest_Vulnerable==2.0 \\
    --hash=sha256:00
latest-withdrawn==4.0 \\
    --hash=sha256:00
older-pin==1.0 \\
    --hash=sha256:00
missing==0.1 \\
    --hash=sha256:00
"""


def _skipped(name: str) -> dict[str, str]:
    return {"name": name, "skip_reason": f"Dependency not found on PyPI and could not be audited: {name}"}


@pytest.fixture(scope="module")
def json_api() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the base class's name
            name = self.path.removeprefix("/pypi/").removesuffix("/json")
            project = PROJECTS.get(name)
            body = json.dumps(project).encode() if project else b"not found"
            self.send_response(200 if project else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/pypi"
    server.shutdown()


def _report(json_api: str, lock: Path, dependencies: list[dict[str, object]], strict: bool = False) -> tuple[int, str]:
    env = {**os.environ, "AUDIT_PYPI_URL": json_api, "AUDIT_STRICT": "1" if strict else "0"}
    done = subprocess.run(
        [sys.executable, "-m", "build.audit_report", str(lock)],
        input=json.dumps({"dependencies": dependencies, "fixes": []}),
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=60,
    )
    return done.returncode, done.stdout + done.stderr


def test_only_what_was_checked_is_audited_and_a_vulnerability_fails(json_api: str, tmp_path: Path) -> None:
    lock = tmp_path / "runtime.txt"
    lock.write_text(LOCK)
    dependencies: list[dict[str, object]] = [{"name": "audited", "version": "5.0", "vulns": []}]
    dependencies += [_skipped(name) for name in PROJECTS]
    dependencies.append(_skipped("missing"))
    status, printed = _report(json_api, lock, dependencies)
    assert status == 1, printed
    assert "VULNERABLE latest-vulnerable 2.0: GHSA-test-0001 (fixed in 2.1)" in printed
    assert (
        "NOT AUDITED (the index has no per-version JSON, and the pin is not the latest release): 1: "
        "older-pin 1.0 (latest 3.0)" in printed
    )
    assert "NOT AUDITED (the index serves neither its per-version nor its project JSON): 1: missing 0.1" in printed
    assert (
        "pip-audit: 6 pinned packages, 4 audited (1 by pip-audit, 3 from the project JSON), 2 NOT AUDITED; "
        "1 with known vulnerabilities" in printed
    )
    assert "not audited: 2 of 6 pinned packages have no vulnerability check" in printed
    assert "no known vulnerabilities" not in printed.lower()


def test_what_was_not_audited_is_said_and_fails_only_when_strict(json_api: str, tmp_path: Path) -> None:
    lock = tmp_path / "runtime.txt"
    lock.write_text(LOCK)
    dependencies = [_skipped("latest-clean"), _skipped("older-pin")]
    status, printed = _report(json_api, lock, dependencies)
    assert status == 0 and "1 NOT AUDITED" in printed and "no known vulnerabilities" not in printed.lower(), printed
    status, printed = _report(json_api, lock, dependencies, strict=True)
    assert status == 1, printed
    status, printed = _report(json_api, lock, [_skipped("latest-clean"), _skipped("latest-withdrawn")], strict=True)
    assert status == 0 and "no known vulnerabilities in the 2 pinned packages" in printed, printed
