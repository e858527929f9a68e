"""What each request and event did, counted in one place and reported the way each platform reads it.

**One record per request or event** (``Record``): the HTTP layer (``handler.api.router``) opens one for every request,
the file adapters one for every object event (``measuring``); while it is open, the service, the decoder and the
storage code add to it through context variables (``current_work``: characters asked, segments decoded or answered
from the translation memory, time queued and decoding, as ``handler.translation_memory.WorkCounts``; ``add``: bytes
read and written, document and fan-out milestones; ``refused``: the error code). When it closes it holds the figures
of ``FIGURES``, which ``finish`` hands to the process's one sink:

* ``emf`` (AWS Lambda's default): one CloudWatch embedded metric format record per request or event, a JSON line on
  standard output that CloudWatch Logs turns into metrics (namespace ``NAMESPACE``, dimensions ``Function``,
  ``Model`` and ``Route``: the route template, or the event's kind; refusals also by ``ErrorCode``). No API call, no
  library: written here (``emf_document``);
* ``log`` (Google Cloud's default): the same figures as fields of a JSON log line, from which the log-based metrics
  of ``infra/gcp/deploy.sh`` are read: an HTTP request's on its access line (the router adds ``Record.log_fields``),
  an event's on a line of its own (logger ``handler.metrics``);
* ``prometheus``: running totals, which the local server serves as Prometheus text at ``GET /metrics``
  (``prometheus_text``);
* ``off`` (the local server's default): nothing is kept or written.

The first record a process finishes also carries its cold start (``ColdStart`` 1, ``ColdStartTime``). A sink that
fails logs it and never fails the request. ``TRANSLATE_METRICS`` chooses (``auto``: by platform); docs/operations.md
says what each figure means and how to graph it.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from handler.errors import TranslatorError
from handler.translation_memory import WorkCounts, current_work

logger = logging.getLogger(__name__)  # the log sink's event lines

NAMESPACE = "ZhEnTranslate"  # the CloudWatch namespace of the EMF records
DIMENSIONS = ("Function", "Model", "Route")
REFUSAL_DIMENSIONS = ("Function", "ErrorCode")
AWS_LAMBDA, GOOGLE_CLOUD, LOCAL = "aws_lambda", "google_cloud", "local"
AUTOMATIC = {AWS_LAMBDA: "emf", GOOGLE_CLOUD: "log", LOCAL: "off"}  # TRANSLATE_METRICS=auto, by platform
FUNCTION_NAME_VARIABLES = {AWS_LAMBDA: "AWS_LAMBDA_FUNCTION_NAME", GOOGLE_CLOUD: "K_SERVICE"}


class Figure:
    """One figure of a record: its log field (and Prometheus name), its CloudWatch metric name and unit, and whether
    every record carries it (zeros included, so that averages are per request) or only those where it happened.
    (Plain classes here, not dataclasses: this module is imported at every cold start.)"""

    __slots__ = ("field", "metric", "unit", "always")

    def __init__(self, field: str, metric: str, unit: str, always: bool = False) -> None:
        self.field, self.metric, self.unit, self.always = field, metric, unit, always


FIGURES = (
    Figure("requests", "Requests", "Count", always=True),  # 1: a request or an event
    Figure("characters", "Characters", "Count", always=True),
    Figure("segments", "Segments", "Count", always=True),
    Figure("segments_from_memory", "SegmentsFromMemory", "Count", always=True),
    Figure("queue_wait_ms", "QueueWait", "Milliseconds", always=True),
    Figure("decode_ms", "DecodeTime", "Milliseconds", always=True),
    Figure("bytes_read", "BytesRead", "Bytes", always=True),
    Figure("bytes_written", "BytesWritten", "Bytes", always=True),
    Figure("duration_ms", "Duration", "Milliseconds", always=True),
    Figure("cold_start", "ColdStart", "Count"),
    Figure("cold_start_ms", "ColdStartTime", "Milliseconds"),
    Figure("documents_started", "DocumentsStarted", "Count"),
    Figure("documents_finished", "DocumentsFinished", "Count"),
    Figure("documents_failed", "DocumentsFailed", "Count"),
    Figure("fan_out_jobs_started", "FanOutJobsStarted", "Count"),
    Figure("fan_out_jobs_finished", "FanOutJobsFinished", "Count"),
    Figure("fan_out_parts_started", "FanOutPartsStarted", "Count"),
    Figure("fan_out_parts_finished", "FanOutPartsFinished", "Count"),
    Figure("fan_out_parts_failed", "FanOutPartsFailed", "Count"),
)
BY_FIELD = {figure.field: figure for figure in FIGURES}
REFUSALS = Figure("refusals", "Refusals", "Count")  # a record with an error code: one, by ErrorCode
# on an HTTP access line these figures are fields already, under their own names (handler.api.router)
ACCESS_LINE_FIELDS = {"requests", "duration_ms"}


class Record:
    """One request's or event's figures while it runs (``WorkCounts`` and ``add``) and when it is done. ``http``: an
    HTTP request, whose access line carries the figures (the log sink writes no line of its own)."""

    def __init__(
        self,
        route: str = "event",
        http: bool = False,
        request_id: str | None = None,
        error_code: str | None = None,
        began: float | None = None,
    ) -> None:
        self.route, self.http, self.request_id, self.error_code = route, http, request_id, error_code
        self.work = WorkCounts()
        self.counts: dict[str, float] = {}
        self.began = time.perf_counter() if began is None else began
        self.ended: float | None = None

    def add(self, name: str, value: float = 1) -> None:
        if name not in BY_FIELD:
            raise KeyError(f"{name!r} is not a figure of handler.metrics.FIGURES")
        self.counts[name] = self.counts.get(name, 0) + value

    def figures(self) -> dict[str, float]:
        """Every figure of ``FIGURES`` it carries: those that are ``always`` there, and the others that happened."""
        work = self.work
        ended = self.ended if self.ended is not None else time.perf_counter()
        values: dict[str, float] = {
            "requests": 1,
            "characters": work.characters,
            "segments": work.decoded + work.from_memory,
            "segments_from_memory": work.from_memory,
            "queue_wait_ms": round(work.queue_wait_s * 1000, 2),
            "decode_ms": round(work.decode_s * 1000, 2),
            "bytes_read": 0,
            "bytes_written": 0,
            "duration_ms": round((ended - self.began) * 1000, 2),
        }
        for name, value in self.counts.items():
            values[name] = values.get(name, 0) + value
        return {figure.field: values[figure.field] for figure in FIGURES if figure.field in values}

    def log_fields(self) -> dict[str, float]:
        """The figures for a log line: those that are not zero (an access line's own fields left out)."""
        skip = ACCESS_LINE_FIELDS if self.http else {"requests"}
        return {name: value for name, value in self.figures().items() if value and name not in skip}


current_record: contextvars.ContextVar[Record | None] = contextvars.ContextVar("metrics_record", default=None)


def add(name: str, value: float = 1) -> None:
    """Add to the open record's figure ``name`` (a field of ``FIGURES``); nothing when no record is open."""
    record = current_record.get()
    if record is not None:
        record.add(name, value)


def set_route(route: str) -> None:
    """The open record's route: what kind of event it turned out to be (``upload``, ``part``, ``document``)."""
    record = current_record.get()
    if record is not None:
        record.route = route


def refused(code: str) -> None:
    """The open record ended in a refusal or failure that was answered, not raised (its error code)."""
    record = current_record.get()
    if record is not None and record.error_code is None:
        record.error_code = code


def error_code_of(error: BaseException) -> str:
    return error.code if isinstance(error, TranslatorError) else "internal_error"


def open_record(record: Record) -> Callable[[], None]:
    """``record`` open in this context (``add``, ``current_work``) until the returned function is called (it does
    not finish the record: ``finish`` does)."""
    tokens = current_record.set(record), current_work.set(record.work)

    def close() -> None:
        current_work.reset(tokens[1])
        current_record.reset(tokens[0])

    return close


@contextmanager
def measuring(route: str = "event", request_id: str | None = None) -> Iterator[Record]:
    """One event's record: open for the block, its error code taken from what the block raises, finished after."""
    record = Record(route=route, request_id=request_id)
    close = open_record(record)
    try:
        yield record
    except BaseException as error:
        record.error_code = record.error_code or error_code_of(error)
        raise
    finally:
        close()
        finish(record)


# --- the process's sink -----------------------------------------------------------------------------------------
class _Process:
    """What every record of this process shares: the sink, the dimensions' values, and the cold start not yet told."""

    def __init__(self) -> None:
        self.sink: Callable[[Record], None] | None = None
        self.mode = "off"
        self.function = LOCAL
        self.model = "unknown"
        self.cold_start_ms: float | None = None
        self.lock = threading.Lock()


_process = _Process()


def configure(
    mode: str,
    platform: str,
    *,
    model: str | None = None,
    cold_start_s: float | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """Choose this process's sink (``TRANSLATE_METRICS``: ``auto`` follows ``platform``) and the values of its
    dimensions; the mode chosen. An adapter calls it once, at its cold start (``cold_start_s``: how long that took)."""
    environ = os.environ if environ is None else environ
    chosen = AUTOMATIC.get(platform, "off") if mode == "auto" else mode
    sinks: dict[str, Callable[[Record], None] | None] = {
        "emf": _write_emf,
        "log": _write_log_line,
        "prometheus": _PROMETHEUS.add,
        "off": None,
    }
    if chosen not in sinks:
        raise ValueError(f"unknown metrics mode {chosen!r}; use auto, {', '.join(sinks)}")
    variable = FUNCTION_NAME_VARIABLES.get(platform)
    with _process.lock:
        _process.sink = sinks[chosen]
        _process.mode = chosen
        _process.function = (environ.get(variable, "") if variable else "") or platform
        _process.model = model or "unknown"
        _process.cold_start_ms = None if cold_start_s is None else round(cold_start_s * 1000, 1)
    return chosen


def mode() -> str:
    return _process.mode


def finish(record: Record) -> None:
    """The record is done: the first of the process gets the cold start; the sink gets it (a failure is logged)."""
    if record.ended is None:
        record.ended = time.perf_counter()
    sink = _process.sink
    if sink is None:
        return
    with _process.lock:
        cold_start_ms, _process.cold_start_ms = _process.cold_start_ms, None
    if cold_start_ms is not None:
        record.add("cold_start")
        record.add("cold_start_ms", cold_start_ms)
    try:
        sink(record)
    except Exception:  # a figure lost is better than a request failed
        logger.exception("the metrics of %s could not be written", record.route)


# --- EMF ----------------------------------------------------------------------------------------------------------
def emf_document(record: Record, function: str, model: str, timestamp_ms: int | None = None) -> dict[str, object]:
    """``record`` as one CloudWatch embedded metric format document (docs: "Specification: Embedded metric format"):
    its figures as metrics of ``NAMESPACE`` by ``DIMENSIONS``, and a refusal by ``REFUSAL_DIMENSIONS``."""
    figures = record.figures()
    directives: list[dict[str, object]] = [
        {
            "Namespace": NAMESPACE,
            "Dimensions": [list(DIMENSIONS)],
            "Metrics": [{"Name": BY_FIELD[name].metric, "Unit": BY_FIELD[name].unit} for name in figures],
        }
    ]
    document: dict[str, object] = {
        "_aws": {
            "Timestamp": int(time.time() * 1000) if timestamp_ms is None else timestamp_ms,
            "CloudWatchMetrics": directives,
        },
        "Function": function[:1024],
        "Model": model[:1024],
        "Route": record.route[:1024],
    }
    document.update((BY_FIELD[name].metric, value) for name, value in figures.items())
    if record.error_code:
        directives.append(
            {
                "Namespace": NAMESPACE,
                "Dimensions": [list(REFUSAL_DIMENSIONS)],
                "Metrics": [{"Name": REFUSALS.metric, "Unit": REFUSALS.unit}],
            }
        )
        document["ErrorCode"] = record.error_code[:1024]
        document[REFUSALS.metric] = 1
    if record.request_id:
        document["request_id"] = record.request_id  # a property: finds the record's log lines
    return document


_STDOUT_LOCK = threading.Lock()


def _write_emf(record: Record) -> None:
    """One EMF document, one line on standard output (which Lambda sends to CloudWatch Logs)."""
    line = json.dumps(emf_document(record, _process.function, _process.model), separators=(",", ":"))
    with _STDOUT_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


# --- log fields -------------------------------------------------------------------------------------------------
def _write_log_line(record: Record) -> None:
    """An event's figures as the fields of one JSON log line (an HTTP request's are on its access line)."""
    if record.http:
        return
    fields: dict[str, object] = {"event": "metrics", "route": record.route, **record.log_fields()}
    if record.error_code:
        fields["error_code"] = record.error_code
    if record.request_id:
        fields["request_id"] = record.request_id
    level = logging.ERROR if record.error_code == "internal_error" else logging.INFO
    outcome = f"failed ({record.error_code})" if record.error_code else "done"
    logger.log(level, "event %s %s", record.route, outcome, extra=fields)


# --- Prometheus -------------------------------------------------------------------------------------------------
class PrometheusTotals:
    """Running totals of every record by route (refusals by error code too), as Prometheus text (version 0.0.4)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}

    def add(self, record: Record) -> None:
        route = (("route", record.route),)
        with self._lock:
            for name, value in record.figures().items():
                key = (name, route)
                self._totals[key] = self._totals.get(key, 0) + value
            if record.error_code:
                key = (REFUSALS.field, (("error_code", record.error_code),))
                self._totals[key] = self._totals.get(key, 0) + 1

    def text(self) -> str:
        with self._lock:
            totals = dict(self._totals)
        lines: list[str] = []
        for figure in (*FIGURES, REFUSALS):
            series = sorted((labels, value) for (name, labels), value in totals.items() if name == figure.field)
            if not series:
                continue
            name, scale = prometheus_name(figure)
            lines += [f"# HELP {name} {figure.metric} ({figure.unit}), summed.", f"# TYPE {name} counter"]
            for labels, value in series:
                shown = ",".join(f'{key}="{_label(text)}"' for key, text in labels)
                lines.append(f"{name}{{{shown}}} {value * scale:g}")
        return "\n".join(lines) + "\n"


def prometheus_name(figure: Figure) -> tuple[str, float]:
    """A figure's Prometheus counter name and the factor to its base unit (milliseconds are summed in seconds)."""
    if figure.unit == "Milliseconds":
        return f"translate_{figure.field.removesuffix('_ms')}_seconds_total", 0.001
    return f"translate_{figure.field}_total", 1.0


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


_PROMETHEUS = PrometheusTotals()


def prometheus_text() -> str | None:
    """The running totals as Prometheus text, or None unless ``TRANSLATE_METRICS=prometheus`` chose them."""
    return _PROMETHEUS.text() if _process.mode == "prometheus" else None
