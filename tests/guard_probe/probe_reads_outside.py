"""Run only by tests/test_checkout_guard.py (its name keeps pytest from collecting it in the suite).

It reads a file beside the checkout and swallows the error, as careless code might: the session must still fail.
"""

from __future__ import annotations

import os

from tests.checkout_guard import FORBIDDEN_BESIDE


def test_reads_beside_the_checkout_and_swallows_the_error() -> None:
    try:
        with open(FORBIDDEN_BESIDE / "beside-the-checkout" / "notes.txt", "rb"):
            pass
    except OSError:
        pass
    try:
        os.listdir(FORBIDDEN_BESIDE)
    except OSError:
        pass
