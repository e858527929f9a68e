"""Hypothesis settings of the fuzz tests: reproducible and bounded.

* ``derandomize=True`` and no example database: every run (CI, a laptop) tries the same inputs, and a failure
  found once is found again.
* a fixed ``max_examples`` per test (``examples(n)``), scaled down under mutmut (``MUTANT_UNDER_TEST`` is set in
  its workers), where each mutant reruns the tests;
* a deadline per case: a generous hang guard on a shared 2-core machine, not a timing assertion.
"""

from __future__ import annotations

import os
from datetime import timedelta

from hypothesis import HealthCheck, settings

CASE_DEADLINE = timedelta(seconds=5)
UNDER_MUTMUT = bool(os.environ.get("MUTANT_UNDER_TEST"))

FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=CASE_DEADLINE,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def examples(count: int) -> settings:
    """The fuzz settings with ``count`` examples (a tenth of them, at least 10, under mutmut)."""
    return settings(FUZZ, max_examples=max(10, count // 10) if UNDER_MUTMUT else count)
