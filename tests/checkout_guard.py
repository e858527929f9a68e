"""Fail the test run when anything it runs opens a file outside the checkout (issue: a fresh clone is the project).

A user who clones the repository has nothing beside it (no corpus or notes folder that a developer's machine may
have), so nothing the tests exercise may read there. ``install`` adds a Python audit hook (PEP 578) that sees every
``open``, ``os.listdir`` and ``os.scandir`` of this process: a path inside the checkout's parent folder but outside
the checkout raises ``OutsideCheckoutError`` at once and is recorded, so that the session fails even if some code
caught the error. The temporary folder, the interpreter and the virtual environment stay readable, unless one of
them holds the checkout's parent (a checkout made in the temporary folder): then only what lies outside the parent
is. When the checkout sits directly in ``/`` or in the temporary folder, its parent holds the system or everyone's
temporary files; the guard then forbids only the developer machines' data folder beside it (``BESIDE_DATA``).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _checkout(tests_dir: Path) -> Path:
    """The checkout holding ``tests/``; in mutmut's working copy (``mutants/`` of a checkout), the enclosing checkout.

    ``make mutation`` runs the tests in ``mutants/`` inside mutmut's own process, which keeps the audit hook after
    the tests and then walks the real ``handler/``: the enclosing checkout must stay readable, its parent not.
    """
    root = tests_dir.parent
    if root.name == "mutants" and (root.parent / "pyproject.toml").is_file():
        return root.parent
    return root


CHECKOUT = _checkout(Path(__file__).resolve().parent)
WATCHED_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})
BESIDE_DATA = "shared"  # the folder beside the checkout that developer machines (and CI) have and a clone does not


class OutsideCheckoutError(PermissionError):
    """A test opened a path outside the checkout."""


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class CheckoutGuard:
    def __init__(self, checkout: Path = CHECKOUT) -> None:
        self.checkout = str(checkout)
        parent = str(checkout.parent)
        temp = os.path.realpath(tempfile.gettempdir())
        broad_parent = parent == os.sep or os.path.realpath(parent) == temp
        self.forbidden = [str(checkout.parent / BESIDE_DATA)] if broad_parent else [parent]
        # a folder that holds the forbidden one (the temporary folder holding a checkout made there) allows nothing
        candidates = [temp, sys.prefix, sys.base_prefix, sys.exec_prefix]
        self.allowed = [self.checkout] + [
            folder for folder in candidates if not any(_within(root, folder) for root in self.forbidden)
        ]
        self.violations: list[str] = []
        self._suspended = threading.local()

    def is_outside(self, path: str) -> bool:
        absolute = os.path.abspath(path)
        if not any(_within(absolute, folder) for folder in self.forbidden):
            return False
        return not any(_within(absolute, folder) for folder in self.allowed)

    def audit(self, event: str, args: tuple[object, ...]) -> None:
        if event not in WATCHED_EVENTS or not args:
            return
        path = args[0]
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str) or not path:  # a file descriptor, or the current folder
            return
        if self.is_outside(path):
            if not getattr(self._suspended, "active", False):
                self.violations.append(f"{event} {os.path.abspath(path)}")
            raise OutsideCheckoutError(
                f"{event}({path!r}) reads outside the checkout {self.checkout}: a fresh clone has nothing there; "
                "use data in the repository (data/, tests/fixtures/) or data the test makes"
            )

    @contextmanager
    def expecting_violation(self) -> Iterator[None]:
        """Within this block a violation still raises but is not recorded (for the guard's own test)."""
        self._suspended.active = True
        try:
            yield
        finally:
            self._suspended.active = False


GUARD = CheckoutGuard()
# a folder the guard forbids: the checkout's parent, or the data folder beside a checkout made directly in a broad
# folder (a clone in /tmp); the guard's own tests read there
FORBIDDEN_BESIDE = Path(GUARD.forbidden[0])
_installed = False


def install() -> CheckoutGuard:
    global _installed
    if not _installed:
        sys.addaudithook(GUARD.audit)
        _installed = True
    return GUARD
