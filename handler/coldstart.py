"""The cold start, once per process: the module-level model load the adapters trigger at import, and its report.

``start()`` builds the configuration and loads + warms the model, keeping any failure in the ``Startup`` it
returns. Every adapter entry module (``handler.adapters.aws_lambda``, ``handler.adapters.gcp``, the local server)
calls it once at import, so the model load happens during the platform's init phase and never behind the first
request. A load failure does not stop the import: the error is kept and reported on every request (HTTP 503, or an
exception for file events) with the loader's message, which names the file and the fix. A bad setting is kept the
same way and answered 500 ``configuration_error`` with the message naming the variable: a retry cannot mend it,
and the process stays up (a platform would otherwise restart it in a loop, failing the same way each time).

``get_service`` loads, checks and warms the bundle on its first call for a bundle folder and returns the same
``TranslationService`` afterwards (thread-safe; the first call's configuration wins for that folder).
``cold_start_report`` says whether a service is warm and how long importing, loading and warming took.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from handler import IMPORT_BEGAN, IMPORT_BEGAN_SINCE_BOOT, metrics
from handler.config import RuntimeConfig
from handler.errors import ConfigurationError, ModelUnavailableError, TranslatorError
from handler.model import file_hashes


def _begin_hashing_the_configured_bundle() -> None:
    """Start the sha256 of the environment's bundle's files on background threads before the imports below (ONNX
    Runtime, numpy, the service: a few tenths of a second on one core), so that the loader finds them mostly done
    (``handler.model.file_hashes``; the loader still compares every one with the manifest before the start ends)."""
    try:
        config = RuntimeConfig.from_env()
    except ConfigurationError:
        return  # start() reports it
    if config.verify_hashes:
        file_hashes.begin(config.bundle_dir)


_begin_hashing_the_configured_bundle()

from handler.model import licence as bundle_licence  # noqa: E402
from handler.model.loader import load_model  # noqa: E402
from handler.model.sessions import child_reopen_seconds  # noqa: E402
from handler.service import TranslationService  # noqa: E402

logger = logging.getLogger(__name__)

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
            # the load's three parts, side by side (their longest is most of load_s): the files' sha256, the
            # tokenizer, the ONNX Runtime sessions
            check_s=loaded.timings.get("check_s"),
            tokenizer_s=loaded.timings.get("tokenizer_s"),
            sessions_s=loaded.timings.get("sessions_s"),
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


def seconds_since_process_start() -> float:
    """Seconds from this process's start (Linux ``/proc``; elsewhere from the handler's first import) to now."""
    started = _process_start_since_boot(os.getpid())
    if started is not None and hasattr(time, "CLOCK_BOOTTIME"):
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    return time.perf_counter() - IMPORT_BEGAN


def cold_start_report() -> dict[str, object]:
    """``{"warm", "import_s", "process_to_import_s", "load_s", "warmup_s", "error", "forked_worker", ...}``.

    Once warm it also has ``check_s``, ``tokenizer_s`` and ``sessions_s``: the parts of ``load_s``, which run at
    the same time (``handler.model.loader.load_model``).

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


@dataclass(frozen=True)
class Startup:
    """What a cold start produced: the configuration and either a warm service or the reason there is none."""

    config: RuntimeConfig
    service: TranslationService | None
    error: TranslatorError | None
    start_s: float  # seconds this cold start spent in ``start()``

    def require_service(self) -> TranslationService:
        """The warm service, or the start's error: ``ConfigurationError`` (a bad setting, named) or
        ``ModelUnavailableError`` carrying the load failure's message."""
        if self.service is not None:
            return self.service
        if isinstance(self.error, (ModelUnavailableError, ConfigurationError)):
            raise self.error
        raise ModelUnavailableError(f"the translator is not available: {self.error}")

    @cached_property
    def licence(self) -> bundle_licence.BundleLicence:
        """The served bundle's licence (manifest, else model card), read once; unknown when the folder is no bundle."""
        try:
            return bundle_licence.read(self.config.bundle_dir)
        except bundle_licence.LicenceError:
            return bundle_licence.classify(None)

    def report_metrics(self, platform: str) -> str:
        """Choose the process's metrics sink for ``platform`` (``handler.metrics``, ``TRANSLATE_METRICS``), naming
        the model and this cold start's time, from the process's start to now; the mode chosen. An adapter calls it
        once its cold start is over."""
        model = self.service.info().get("model") if self.service is not None else None
        return metrics.configure(
            self.config.metrics, platform, model=str(model or "unavailable"), cold_start_s=seconds_since_process_start()
        )

    def health(self) -> dict[str, object]:
        """What ``GET /healthz`` reports: model name, bundle hash, warm state, cold-start timings, limits, and the
        bundle's licence (name or null when unknown, whether it allows commercial use, the demo notice or null)."""
        report: dict[str, object] = {
            "status": "ok" if self.service is not None else "unavailable",
            "warm": self.service is not None,
            "cold_start": cold_start_report(),
            "licence": self.licence.to_dict(),
            "limits": {
                "max_chars": self.config.max_chars,
                "max_texts": self.config.max_texts,
                "max_file_bytes": self.config.max_file_bytes,
                "default_beam_size": self.config.beam_size,
            },
        }
        if self.service is not None:
            report.update(self.service.info())
        else:
            report["error"] = {"code": _code(self.error), "message": str(self.error)}
        return report


def start(config: RuntimeConfig | None = None, environ: Mapping[str, str] | None = None) -> Startup:
    """Build the configuration (unless given) and load + warm the model; never raises."""
    began = time.perf_counter()
    try:
        config = config if config is not None else RuntimeConfig.from_env(environ)
    except ConfigurationError as error:
        logger.error("configuration error, the translator will answer 500 configuration_error: %s", error)
        return Startup(RuntimeConfig(), None, error, time.perf_counter() - began)
    try:
        service = get_service(config)
    except TranslatorError as error:
        answer = "500 configuration_error" if isinstance(error, ConfigurationError) else f"503 {error.code}"
        logger.error("model did not load, the translator will answer %s: %s", answer, error)
        return Startup(config, None, error, time.perf_counter() - began)
    except Exception as error:  # an unexpected failure inside the loader: keep it, report it, stay up
        logger.exception("model did not load (unexpected error)")
        wrapped = ModelUnavailableError(f"the model failed to load: {type(error).__name__}: {error}")
        return Startup(config, None, wrapped, time.perf_counter() - began)
    elapsed = time.perf_counter() - began
    info = service.info()
    startup = Startup(config, service, None, elapsed)
    # one record, a JSON line where the adapter configured logging (handler.api.access_log), which every platform
    # keeps in its logs (Lambda, Cloud Functions, a terminal)
    logger.info(
        "translator ready: model %s bundle %s",
        info.get("model"),
        info.get("bundle_hash"),
        extra={
            "event": "translator_ready",
            "model": info.get("model"),
            "bundle_hash": info.get("bundle_hash"),
            "bundle_dir": str(config.bundle_dir),
            "cold_start": cold_start_report(),
            "licence": startup.licence.to_dict(),  # a non-commercial demo's notice is in every platform's logs
        },
    )
    return startup


def _code(error: TranslatorError | None) -> str:
    return error.code if error is not None else ModelUnavailableError.code
