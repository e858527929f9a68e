"""The adapters' cold start: build the configuration and load + warm the model once, keeping any failure.

Every adapter entry module (``handler.aws_lambda``, ``handler.gcp``, the local server) calls ``start()`` once at
import, so the model load happens during the platform's init phase and never behind the first request. A load
failure does not stop the import: the error is kept and reported on every request (HTTP 503, or an exception for
file events) with the loader's message, which names the file and the fix. A bad setting is kept the same way and
answered 500 ``configuration_error`` with the message naming the variable: a retry cannot mend it, and the
process stays up (a platform would otherwise restart it in a loop, failing the same way each time).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

from handler import runtime
from handler.config import RuntimeConfig
from handler.errors import ConfigurationError, ModelUnavailableError, TranslatorError
from handler.service import TranslationService

logger = logging.getLogger(__name__)


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

    def health(self) -> dict[str, object]:
        """What ``GET /healthz`` reports: model name, bundle hash, warm state, cold-start timings, limits."""
        report: dict[str, object] = {
            "status": "ok" if self.service is not None else "unavailable",
            "warm": self.service is not None,
            "cold_start": runtime.cold_start_report(),
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
        service = runtime.get_service(config)
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
    # one record, a JSON line where the adapter configured logging (handler.access_log), which every platform
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
            "cold_start": runtime.cold_start_report(),
        },
    )
    return Startup(config, service, None, elapsed)


def _code(error: TranslatorError | None) -> str:
    return error.code if error is not None else ModelUnavailableError.code
