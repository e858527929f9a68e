#!/usr/bin/env bash
# Installs into a virtual environment the one way every environment of the project is made (make's .venv,
# .venv-run and .venv-lock, and the tests' throwaway ones): VENV is created with $PYTHON (default python3) when it
# is missing, the pinned and hashed installer of requirements/installer.txt goes in first, and only then does that
# installer read the lock files given after VENV. The machine's own pip (23.2.1 in Python 3.11.7's venv) installs
# nothing but the installer: one hashed wheel with no dependencies, which any pip reads alike. The Dockerfile does
# the same in each stage that installs a lock file. Why: docs/decisions.md, "The installer is pinned too".
#
# usage: requirements/install.sh VENV PIP-INSTALL-ARGUMENTS...
#   DRY_RUN=1 resolves the lock files without installing them (pip's --dry-run --ignore-installed), after
#   installing the installer for real: tests/ship/test_install.py checks every lock file that way.
set -euo pipefail

[[ $# -ge 2 ]] || { echo "usage: $0 VENV PIP-INSTALL-ARGUMENTS..." >&2; exit 2; }
venv="$1"
shift
installer="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/installer.txt"

test -x "$venv/bin/python" || "${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes -r "$installer"
if [[ "${DRY_RUN:-0}" == 1 ]]; then
    set -- --dry-run --ignore-installed "$@"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
