"""The once-per-cold-start model load that adapters call at import time, and its report.

``get_service`` loads, checks and warms the bundle on its first call for a bundle folder and returns the same
``TranslationService`` afterwards (thread-safe; the first call's configuration wins for that folder).
``cold_start_report`` says whether a service is warm and how long importing, loading and warming took.
"""

from __future__ import annotations

import time

_IMPORT_BEGAN = time.perf_counter()
# Linux: seconds since boot, the clock /proc/self/stat's process start time is measured on
_IMPORT_BEGAN_SINCE_BOOT = time.clock_gettime(time.CLOCK_BOOTTIME) if hasattr(time, "CLOCK_BOOTTIME") else None

import os  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

from handler.config import RuntimeConfig  # noqa: E402
from handler.errors import TranslatorError  # noqa: E402
from handler.loader import load_model  # noqa: E402
from handler.onnx_model import child_reopen_seconds  # noqa: E402
from handler.service import TranslationService  # noqa: E402

# seconds spent importing this module and what it needs (onnxruntime, numpy, sentencepiece, the handler)
IMPORT_SECONDS = time.perf_counter() - _IMPORT_BEGAN
# the process that imported this module; a forked worker (gunicorn under functions-framework) has another pid
_IMPORT_PID = os.getpid()

_lock = threading.Lock()
_services: dict[Path, TranslationService] = {}
_report: dict[str, object] = {"warm": False, "load_s": None, "warmup_s": None, "error": None}


def get_service(config: RuntimeConfig | None = None) -> TranslationService:
    """The warm service for ``config.bundle_dir`` (default: ``RuntimeConfig.from_env()``), loading it once.

    Raises ``BundleError`` / ``ModelUnavailableError`` (message names the file and the fix) when the bundle
    cannot be loaded; a later call tries again.
    """
    config = config if config is not None else RuntimeConfig.from_env()
    key = Path(config.bundle_dir).resolve()
    with _lock:
        service = _services.get(key)
        if service is not None:
            return service
        try:
            loaded = load_model(config)
        except TranslatorError as error:
            _report.update(error=str(error))
            raise
        service = TranslationService(loaded, config)
        _services[key] = service
        _report.update(
            warm=True,
            bundle_dir=str(key),
            load_s=loaded.timings.get("load_s"),
            warmup_s=loaded.timings.get("warmup_s"),
            error=None,
        )
        return service


def _process_start_since_boot(pid: int) -> float | None:
    """When process ``pid`` started, in seconds since boot (Linux ``/proc``, 1/100 s); None elsewhere or if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of proc(5); fields[0] is field 3
    except (OSError, ValueError, IndexError):
        return None


def cold_start_report() -> dict[str, object]:
    """``{"warm", "import_s", "process_to_import_s", "load_s", "warmup_s", "error", "forked_worker", ...}``.

    Figures are in seconds. ``process_to_import_s`` is the time from the start of the process that imported this
    module to that import: interpreter start-up and whatever the entry point imported first. In a worker forked
    after the import (gunicorn under functions-framework), import, load and warm-up happened once in the
    parent and are the parent's figures; ``forked_worker`` is then true and ``worker_reopen_s`` is what the
    worker itself spent reopening and warming the model's sessions after the fork.
    """
    forked = os.getpid() != _IMPORT_PID
    started = _process_start_since_boot(_IMPORT_PID)
    report: dict[str, object] = {
        "import_s": round(IMPORT_SECONDS, 4),
        "process_to_import_s": None,
        "forked_worker": forked,
        "worker_reopen_s": None,
    }
    reopen_s = child_reopen_seconds()
    if forked and reopen_s is not None:
        report["worker_reopen_s"] = round(reopen_s, 4)
    if started is not None and _IMPORT_BEGAN_SINCE_BOOT is not None:
        report["process_to_import_s"] = round(max(0.0, _IMPORT_BEGAN_SINCE_BOOT - started), 2)
    with _lock:
        report.update(_report)
    return report
