"""The once-per-cold-start model load that adapters call at import time, and its report.

``get_service`` loads, checks and warms the bundle on its first call for a bundle folder and returns the same
``TranslationService`` afterwards (thread-safe; the first call's configuration wins for that folder).
``cold_start_report`` says whether a service is warm and how long importing, loading and warming took.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from handler import IMPORT_BEGAN, IMPORT_BEGAN_SINCE_BOOT
from handler.config import RuntimeConfig
from handler.errors import TranslatorError
from handler.loader import load_model
from handler.onnx_model import child_reopen_seconds
from handler.service import TranslationService

# seconds from the first import of the handler package to the end of this module's imports: the handler and what
# it needs (onnxruntime, numpy, sentencepiece), whichever adapter module the entry point imported first
IMPORT_SECONDS = time.perf_counter() - IMPORT_BEGAN
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

    Figures are in seconds. ``import_s`` runs from the first import of the ``handler`` package to the end of this
    module's imports; ``process_to_import_s`` from the start of the process that imported it to that first import:
    interpreter start-up and whatever the entry point imported before the handler. In a worker forked
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
    if started is not None and IMPORT_BEGAN_SINCE_BOOT is not None:
        report["process_to_import_s"] = round(max(0.0, IMPORT_BEGAN_SINCE_BOOT - started), 2)
    with _lock:
        report.update(_report)
    return report
