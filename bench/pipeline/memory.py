"""Memory figures a benchmark process measures of itself (Linux ``/proc/self/status``).

``ru_maxrss`` is not one: Linux keeps a process's high-water mark across ``fork`` and ``exec``, so a child
started from a parent with a large RSS reports the parent's figure (a first ``make bench`` printed 3,853 MB for
every engine). ``VmHWM`` is the peak resident set of this process image alone, ``VmRSS`` the current one.
"""

from __future__ import annotations

from pathlib import Path

STATUS = Path("/proc/self/status")


def _status_mb(field: str, status: Path = STATUS) -> float:
    for line in status.read_text(encoding="ascii").splitlines():
        if line.startswith(f"{field}:"):
            value, unit = line.split()[1:3]
            if unit != "kB":
                raise RuntimeError(f"{status}: {field} is in {unit!r}, expected kB")
            return int(value) / 1024
    raise RuntimeError(f"{status} has no {field} line: this benchmark measures memory on Linux only")


def peak_rss_mb() -> float:
    """This process's own peak resident set size in MB (VmHWM)."""
    return _status_mb("VmHWM")


def current_rss_mb() -> float:
    """This process's resident set size now, in MB (VmRSS)."""
    return _status_mb("VmRSS")
