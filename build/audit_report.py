"""``make audit``'s verdict on pip-audit's JSON report of the runtime lock files (read on stdin).

    pip-audit --disable-pip --require-hashes --format json -r requirements/runtime-aws.txt ... \\
        | python -m build.audit_report requirements/runtime-aws.txt ...   # the lock files: their pins

pip-audit asks PyPI's per-version JSON (``/pypi/<name>/<version>/json``) for each pin's known vulnerabilities. An
index mirror that does not serve it (the development machines' answers 404) leaves the package "skipped", and
pip-audit still says "No known vulnerabilities found". This report never counts such a package as audited:

* a pin that is the project's latest release is checked against the ``vulnerabilities`` of the project JSON
  (``/pypi/<name>/json``, which such mirrors do serve, and which lists the known vulnerabilities of the latest
  release, from the same PyPI advisory data pip-audit reads);
* any other is listed as NOT AUDITED with the reason, and the summary gives how many packages were audited and
  how many were not.

Exit status 1 on a known vulnerability, or on a package not audited when ``AUDIT_STRICT=1``; else 0.
``AUDIT_PYPI_URL`` is the JSON API's root (default ``https://pypi.org/pypi``).
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PYPI_URL = "https://pypi.org/pypi"
TIMEOUT_S = 20.0

ProjectJson = Callable[[str], Mapping[str, Any] | None]  # a project's JSON, or None when it cannot be read


@dataclass
class Verdict:
    pinned: int = 0
    by_pip_audit: int = 0
    by_project_json: list[str] = field(default_factory=list)
    vulnerable: list[str] = field(default_factory=list)  # "name version: id (fixed in ...), ..."
    not_audited: list[tuple[str, str]] = field(default_factory=list)  # ("name version", reason)

    @property
    def audited(self) -> int:
        return self.by_pip_audit + len(self.by_project_json)

    def lines(self) -> list[str]:
        out = [f"VULNERABLE {line}" for line in self.vulnerable]
        if self.by_project_json:
            out.append(
                f"audited from PyPI's project JSON (the pin is the latest release): {len(self.by_project_json)}: "
                + ", ".join(self.by_project_json)
            )
        for reason in sorted({reason for _, reason in self.not_audited}):
            names = [name for name, why in self.not_audited if why == reason]
            out.append(f"NOT AUDITED ({reason}): {len(names)}: " + ", ".join(names))
        out.append(
            f"pip-audit: {self.pinned} pinned packages, {self.audited} audited ({self.by_pip_audit} by pip-audit, "
            f"{len(self.by_project_json)} from the project JSON), {len(self.not_audited)} NOT AUDITED; "
            f"{len(self.vulnerable)} with known vulnerabilities"
        )
        if self.not_audited:
            out.append(
                f"not audited: {len(self.not_audited)} of {self.pinned} pinned packages have no vulnerability check "
                "(no known vulnerability is claimed for them); AUDIT_STRICT=1 makes this fail"
            )
        elif not self.vulnerable:
            out.append(f"no known vulnerabilities in the {self.pinned} pinned packages")
        return out


def _vulnerability_line(name: str, version: str, vulns: list[Mapping[str, Any]]) -> str:
    described = [
        f"{v.get('id')} (fixed in {', '.join(v.get('fix_versions') or v.get('fixed_in') or []) or 'no release'})"
        for v in vulns
    ]
    return f"{name} {version}: " + ", ".join(described)


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins(paths: list[Path]) -> dict[str, str]:
    """``name==version`` of the lock files (pip-compile's hashed format), by normalised name."""
    pins: dict[str, str] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            found = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", line)
            if found:
                pins[normalise(found.group(1))] = found.group(2)
    return pins


def judge(dependencies: list[Mapping[str, Any]], project_json: ProjectJson, pins: Mapping[str, str]) -> Verdict:
    """Every pinned package of pip-audit's report: audited by pip-audit, from the project JSON, or not at all."""
    verdict = Verdict(pinned=len(dependencies))
    for dependency in dependencies:
        name = str(dependency.get("name"))
        version = str(dependency.get("version") or pins.get(normalise(name)) or "?")
        if "skip_reason" not in dependency:
            verdict.by_pip_audit += 1
            if dependency.get("vulns"):
                verdict.vulnerable.append(_vulnerability_line(name, version, dependency["vulns"]))
            continue
        project = project_json(name)
        if project is None:
            reason = "the index serves neither its per-version nor its project JSON"
            verdict.not_audited.append((f"{name} {version}", reason))
            continue
        latest = str((project.get("info") or {}).get("version"))
        if latest != version:
            reason = "the index has no per-version JSON, and the pin is not the latest release"
            verdict.not_audited.append((f"{name} {version} (latest {latest})", reason))
            continue
        verdict.by_project_json.append(f"{name} {version}")
        vulns = [v for v in project.get("vulnerabilities") or [] if not v.get("withdrawn")]
        if vulns:
            verdict.vulnerable.append(_vulnerability_line(name, version, vulns))
    return verdict


def pypi_project_json(root: str) -> ProjectJson:
    def fetch(name: str) -> Mapping[str, Any] | None:
        try:
            with urllib.request.urlopen(f"{root.rstrip('/')}/{name}/json", timeout=TIMEOUT_S) as response:
                loaded = json.load(response)
        except (urllib.error.URLError, OSError, ValueError):
            return None
        return loaded if isinstance(loaded, Mapping) else None

    return fetch


def main(argv: list[str] | None = None) -> int:
    locks = [Path(arg) for arg in (sys.argv[1:] if argv is None else argv)]
    report = json.load(sys.stdin)
    project_json = pypi_project_json(os.environ.get("AUDIT_PYPI_URL", PYPI_URL))
    verdict = judge(report.get("dependencies") or [], project_json, lock_pins(locks))
    print("\n".join(verdict.lines()), flush=True)
    strict = os.environ.get("AUDIT_STRICT") == "1"
    return 1 if verdict.vulnerable or (verdict.not_audited and strict) else 0


if __name__ == "__main__":
    sys.exit(main())
