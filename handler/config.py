"""Runtime configuration: one typed object built once at start-up from explicit values and the environment.

Precedence: an explicit argument beats an environment variable beats the default. Every variable name is a
constant here (and documented in the README); a bad value raises ``ConfigurationError`` naming the variable.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar

from handler.errors import ConfigurationError

# --- environment variable names -------------------------------------------------------------------------
ENV_BUNDLE_DIR = "TRANSLATE_BUNDLE_DIR"
ENV_THREADS = "TRANSLATE_THREADS"
ENV_DECODE_STREAMS = "TRANSLATE_DECODE_STREAMS"
ENV_SPINNING = "TRANSLATE_THREAD_SPINNING"
ENV_VERIFY_HASHES = "TRANSLATE_VERIFY_HASHES"
ENV_MAX_CHARS = "TRANSLATE_MAX_CHARS"
ENV_MAX_TEXTS = "TRANSLATE_MAX_TEXTS"
ENV_MAX_FILE_BYTES = "TRANSLATE_MAX_FILE_BYTES"
ENV_BEAM_SIZE = "TRANSLATE_BEAM_SIZE"
ENV_BATCH_TOKENS = "TRANSLATE_BATCH_TOKENS"
ENV_CORS_ORIGINS = "TRANSLATE_CORS_ORIGINS"
ENV_OUTPUT_BUCKET = "TRANSLATE_OUTPUT_BUCKET"
ENV_OUTPUT_PREFIX = "TRANSLATE_OUTPUT_PREFIX"
ENV_DEADLINE_MARGIN_S = "TRANSLATE_DEADLINE_MARGIN_S"
ENV_EVENT_TIMEOUT_S = "TRANSLATE_EVENT_TIMEOUT_S"
ENV_REQUEST_TIMEOUT_S = "TRANSLATE_REQUEST_TIMEOUT_S"
ENV_GLOSSARY_FILE = "TRANSLATE_GLOSSARY_FILE"
ENV_API_KEYS = "TRANSLATE_API_KEYS"
ENV_API_KEYS_FILE = "TRANSLATE_API_KEYS_FILE"
ENV_LOG_TEXT = "TRANSLATE_LOG_TEXT"
ENV_PART_CHARS = "TRANSLATE_PART_CHARS"
ENV_WORK_PREFIX = "TRANSLATE_WORK_PREFIX"
ENV_MEMORY_BYTES = "TRANSLATE_MEMORY_BYTES"
ENV_STATE_DIR = "TRANSLATE_STATE_DIR"
ENV_STATE_PREFIX = "TRANSLATE_STATE_PREFIX"
ENV_DOCUMENT_BUCKET = "TRANSLATE_DOCUMENT_BUCKET"
ENV_DOCUMENT_PREFIX = "TRANSLATE_DOCUMENT_PREFIX"
ENV_MAX_QUEUE_S = "TRANSLATE_MAX_QUEUE_S"
ENV_METRICS = "TRANSLATE_METRICS"
ENV_USAGE_STORE = "TRANSLATE_USAGE_STORE"

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BUNDLE_DIR = REPO_ROOT / "model_artifacts" / "default"

MAX_BEAM_SIZE = 8
METRICS_MODES = ("auto", "emf", "log", "prometheus", "off")  # TRANSLATE_METRICS (handler.metrics)


def _automatic_count() -> int:
    """Threads or parts when the setting is 0: one per CPU this process may use, at most 2."""
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(2, available))


@dataclass(frozen=True)
class RuntimeConfig:
    """Everything the runtime reads from its environment, with defaults suited to a 2048 MB function."""

    bundle_dir: Path = DEFAULT_BUNDLE_DIR
    threads: int = 0  # ONNX Runtime intra-op threads; 0 = one per available CPU, at most 2
    thread_spinning: bool = False  # spinning slows a loop that alternates ORT calls with Python work
    # a beam search of 4 or more sentences runs as this many parts side by side (handler.model.parallel_search);
    # 0 = one per available CPU, at most 2
    decode_streams: int = 0
    verify_hashes: bool = True
    max_chars: int = 20_000  # per request (all texts together)
    max_texts: int = 64  # per request
    max_file_bytes: int = 2_000_000  # per uploaded file (S3 / Cloud Storage events)
    beam_size: int = 4  # default beam size when a request does not choose
    batch_tokens: int = 2_048  # source tokens per decoding batch (padded)
    cors_origins: tuple[str, ...] = ()  # empty = same origin only; "*" allows any
    output_bucket: str = ""  # file events: where translations go ("" = the input bucket)
    output_prefix: str = "translated/"
    deadline_margin_s: float = 10.0  # stop file work this long before the platform's deadline
    # the time limit of one storage-event invocation where the platform reports no time left (Cloud Functions: the
    # deploy's --timeout, 540 s at most for events); Lambda events use the invocation's own remaining time
    event_timeout_s: float = 540.0
    # the time limit of one HTTP request where the platform reports no time left (Cloud Run and Cloud Functions: the
    # HTTP service's --timeout, which infra/gcp/deploy.sh writes here); a request's answer must end this long after
    # it arrived, less deadline_margin_s. 0 = no limit known (make run, the local server); Lambda uses the
    # invocation's own remaining time
    request_timeout_s: float = 0.0
    glossary_file: Path | None = None  # the deployment's glossary (JSON object or TSV), for every request and file
    # keys every translating route requires (handler.api.keys); empty = none required. ``from_env`` adds the keys
    # of ``api_keys_file`` (TRANSLATE_API_KEYS_FILE) to those of TRANSLATE_API_KEYS. Each entry is a key, optionally
    # with its name and limits (``KEY;name=NAME;chars=N/PERIOD;rate=N/PERIOD``: ``key_entries`` reads them)
    api_keys: tuple[str, ...] = ()
    api_keys_file: Path | None = None
    log_text: bool = False  # debug only: the access log also records request and response bodies
    part_chars: int = 20_000  # plain-text files longer than this fan out in parts of at most this many; 0 = never
    work_prefix: str = "_bulk/"  # key prefix of fan-out manifests, parts and part results (output bucket)
    memory_bytes: int = 16 * 1024 * 1024  # bound of the sentence translation memory (handler.translation_memory)
    # where uploaded documents and stored glossaries live (handler.storage.state): a deployment with an output
    # bucket keeps them there under state_prefix; the local server keeps them in state_dir
    state_dir: Path = Path(".translate-state")
    state_prefix: str = "_state/"
    # DeepL's document API on AWS/GCP (handler.storage.documents): an uploaded document is written to this bucket (the
    # input bucket, whose upload events translate it) under document_prefix; "" = documents stay local (the local
    # server), or are refused where the state is in a bucket
    document_bucket: str = ""
    document_prefix: str = "_documents/"
    # past this many seconds of work queued in the decoder (at its measured speed), a request is refused at once with
    # 429 and Retry-After instead of waiting without limit (handler.decoder)
    max_queue_s: float = 30.0
    # where each request's and event's figures go (handler.metrics): "auto" (Lambda: EMF records; Google Cloud: log
    # fields; the local server: none), "emf", "log", "prometheus" (the local server's GET /metrics) or "off"
    metrics: str = "auto"
    # where each key's usage is counted across instances (handler.storage.usage): "dynamodb:TABLE", "redis://HOST:PORT"
    # (rediss:// with TLS); "" = the state folder (the local server), or each instance alone on a deployment
    usage_store: str = ""

    def __post_init__(self) -> None:
        checks: list[tuple[bool, str, str]] = [
            (self.threads >= 0, ENV_THREADS, "0 (automatic) or a positive number of threads"),
            (self.decode_streams >= 0, ENV_DECODE_STREAMS, "0 (automatic) or a positive number of parts"),
            (self.max_chars > 0, ENV_MAX_CHARS, "a positive number of characters"),
            (self.max_texts > 0, ENV_MAX_TEXTS, "a positive number of texts"),
            (self.max_file_bytes > 0, ENV_MAX_FILE_BYTES, "a positive number of bytes"),
            (1 <= self.beam_size <= MAX_BEAM_SIZE, ENV_BEAM_SIZE, f"an integer from 1 to {MAX_BEAM_SIZE}"),
            (self.batch_tokens >= 64, ENV_BATCH_TOKENS, "at least 64 tokens"),
            (self.deadline_margin_s >= 0, ENV_DEADLINE_MARGIN_S, "a non-negative number of seconds"),
            (
                self.event_timeout_s > self.deadline_margin_s,
                ENV_EVENT_TIMEOUT_S,
                f"the function's time limit in seconds, more than {ENV_DEADLINE_MARGIN_S}",
            ),
            (
                self.request_timeout_s == 0 or self.request_timeout_s > self.deadline_margin_s,
                ENV_REQUEST_TIMEOUT_S,
                f"0 (no time limit) or the HTTP request timeout in seconds, more than {ENV_DEADLINE_MARGIN_S}",
            ),
            (self.part_chars == 0 or self.part_chars >= 1_000, ENV_PART_CHARS, "0 (no fan-out) or at least 1000"),
            (self.memory_bytes >= 0, ENV_MEMORY_BYTES, "0 (no translation memory) or a positive number of bytes"),
            (self.max_queue_s > 0, ENV_MAX_QUEUE_S, "a positive number of seconds"),
            (self.metrics in METRICS_MODES, ENV_METRICS, " or ".join(METRICS_MODES)),
            (
                self.work_prefix.endswith("/")
                and not self.work_prefix.startswith(self.output_prefix or "\0")
                and not (self.output_prefix or "").startswith(self.work_prefix),
                ENV_WORK_PREFIX,
                f"a key prefix ending in '/' that neither contains nor is inside {ENV_OUTPUT_PREFIX}",
            ),
            (
                self.state_prefix.endswith("/")
                and len(self.state_prefix) > 1
                and not any(
                    prefix and (self.state_prefix.startswith(prefix) or prefix.startswith(self.state_prefix))
                    for prefix in (self.output_prefix, self.work_prefix)
                ),
                ENV_STATE_PREFIX,
                f"a key prefix ending in '/' that neither contains nor is inside {ENV_OUTPUT_PREFIX} or "
                f"{ENV_WORK_PREFIX}",
            ),
            (
                self.document_prefix.endswith("/")
                and len(self.document_prefix) > 1
                and not any(
                    prefix and (self.document_prefix.startswith(prefix) or prefix.startswith(self.document_prefix))
                    for prefix in (self.output_prefix, self.work_prefix, self.state_prefix)
                ),
                ENV_DOCUMENT_PREFIX,
                f"a key prefix ending in '/' that neither contains nor is inside {ENV_OUTPUT_PREFIX}, "
                f"{ENV_WORK_PREFIX} or {ENV_STATE_PREFIX}",
            ),
        ]
        for ok, variable, allowed in checks:
            if not ok:
                name = _FIELD_BY_ENV[variable]
                raise ConfigurationError(f"{variable}={getattr(self, name)!r} is not allowed; use {allowed}")
        self._check_keys()

    def _check_keys(self) -> None:
        """Every key entry reads (``parse_key_entry``), no key or name is given twice, the usage store is one."""
        entries = self.key_entries
        for what, values in (("key", [e.key for e in entries]), ("name", [e.name for e in entries if e.name])):
            if len(set(values)) < len(values):
                repeated = next(value for value, count in Counter(values).items() if count > 1)
                keys = [entry.key for entry in entries]
                where = [number for number, key in enumerate(keys, 1) if key == repeated][:2]
                shown = f"key {where[1]} repeats key {where[0]}" if what == "key" else f"name {repeated!r} is repeated"
                raise ConfigurationError(f"{ENV_API_KEYS}: {shown}; give each key and each name once")
        if self.usage_store and not re.fullmatch(_USAGE_STORE, self.usage_store):
            raise ConfigurationError(  # (the value may hold a password: not repeated)
                f"{ENV_USAGE_STORE} is not a usage store; use dynamodb:TABLE, redis://[:PASSWORD@]HOST[:PORT][/DB] "
                "(rediss:// for TLS) or leave it empty"
            )

    @property
    def key_entries(self) -> tuple[KeyEntry, ...]:
        """``api_keys`` read: each key with its name and limits."""
        return tuple(parse_key_entry(entry, number) for number, entry in enumerate(self.api_keys, 1))

    @property
    def intra_op_threads(self) -> int:
        return self.threads or _automatic_count()

    @property
    def decoding_streams(self) -> int:
        return self.decode_streams or _automatic_count()

    def request_deadline(self, arrived: float) -> float | None:
        """An HTTP request's deadline (a ``time.monotonic()`` value) where the platform reports no time left: its
        arrival plus ``request_timeout_s`` less ``deadline_margin_s``; None without a request timeout."""
        if not self.request_timeout_s:
            return None
        return arrived + self.request_timeout_s - self.deadline_margin_s

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> RuntimeConfig:
        """Build the configuration from ``environ`` (default ``os.environ``); keyword overrides win."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for variable, name in _FIELD_BY_ENV.items():
            raw = environ.get(variable)
            if raw is None or raw.strip() == "":
                continue
            values[name] = _PARSERS[name](variable, raw.strip())
        values.update({k: v for k, v in overrides.items() if v is not None})
        if values.get("api_keys_file") is not None:
            from_file = read_key_file(values["api_keys_file"], ENV_API_KEYS_FILE)
            values["api_keys"] = tuple(dict.fromkeys((*values.get("api_keys", ()), *from_file)))
        return cls(**values)

    def with_overrides(self, **overrides: Any) -> RuntimeConfig:
        return replace(self, **overrides)


# --- API key entries: KEY[;name=NAME][;chars=N/PERIOD][;rate=N/PERIOD] ------------------------------------------
Period = Literal["second", "minute", "hour", "day", "month"]
PERIODS: dict[str, Period] = {  # each spelling a period may take -> its name
    "s": "second", "sec": "second", "second": "second",
    "min": "minute", "minute": "minute",
    "h": "hour", "hour": "hour",
    "d": "day", "day": "day",
    "month": "month",
}  # fmt: skip
LIMIT_MEASURES = {"chars": "characters", "rate": "requests"}  # an entry's limit attributes -> what they count
# (patterns compiled on their first use, by re's cache: nothing at a cold start without keys)
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
_USAGE_STORE = r"dynamodb:[A-Za-z0-9_.-]{3,255}|rediss?://[^\s/?#]+(/[0-9]{1,2})?"


class KeyLimit(NamedTuple):  # (a NamedTuple: a third of a frozen dataclass's cost at a cold start)
    """At most ``allowed`` characters or requests (``measure``) per ``period`` (a calendar period in UTC)."""

    measure: str  # "characters" or "requests"
    allowed: int
    period: Period


class KeyEntry(NamedTuple):
    """One configured API key: the secret a client presents, its name (counters and logs; optional) and limits."""

    key: str
    name: str = ""
    limits: tuple[KeyLimit, ...] = ()

    def limit(self, measure: str) -> KeyLimit | None:
        return next((limit for limit in self.limits if limit.measure == measure), None)


def parse_key_entry(entry: str, number: int = 1) -> KeyEntry:
    """A key entry: the key, then ``;``-separated attributes, each at most once: ``name=NAME`` (letters, digits,
    ``.``, ``_``, ``-``; at most 64), ``chars=N/PERIOD`` (characters per period) and ``rate=N/PERIOD`` (requests per
    period); PERIOD is second (s, sec), minute (min), hour (h), day (d) or month. A plain key has none."""
    key, *attributes = entry.split(";")
    where = f"{ENV_API_KEYS}: key {number}"
    if not key or any(ch.isspace() or ch == "," for ch in key):
        raise ConfigurationError(f"{where} is empty or holds a comma or a space; a key is one token before any ';'")
    values: dict[str, str] = {}
    for attribute in attributes:
        field, equals, value = attribute.partition("=")
        if not equals or field not in ("name", *LIMIT_MEASURES) or field in values:
            # (an unknown one is not repeated: it may be a key that holds a ';')
            found = f"a repeated setting {field!r}" if field in values else "an unknown setting"
            raise ConfigurationError(
                f"{where} has {found} after a ';'; after the key come ';name=NAME', ';chars=N/PERIOD' and "
                "';rate=N/PERIOD', each at most once (a key holds no ';')"
            )
        values[field] = value
    name = values.pop("name", "")
    if name and not re.fullmatch(_NAME, name):
        raise ConfigurationError(f"{where}: name={name!r}; a name is 1-64 letters, digits, '.', '_' or '-'")
    limits = tuple(_key_limit(field, value, where) for field, value in values.items())
    return KeyEntry(key, name, limits)


def _key_limit(field: str, value: str, where: str) -> KeyLimit:
    count, slash, period = value.partition("/")
    if not slash or not count.isdigit() or int(count) <= 0 or period not in PERIODS:
        raise ConfigurationError(
            f"{where}: {field}={value!r}; write a positive count per period, e.g. {field}=60/minute (periods: "
            "second or s, minute or min, hour or h, day or d, month)"
        )
    return KeyLimit(LIMIT_MEASURES[field], int(count), PERIODS[period])


def parse_key_list(raw: str) -> tuple[str, ...]:
    """``TRANSLATE_API_KEYS``: comma-separated keys, spaces around each trimmed, empty entries dropped."""
    return tuple(key.strip() for key in raw.split(",") if key.strip())


def read_key_file(path: Path, variable: str) -> tuple[str, ...]:
    """The keys in ``path``: one per line, blank lines and ``#`` comments ignored; at least one key."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"{variable}={str(path)!r} cannot be read: {type(error).__name__}") from None
    keys = tuple(line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#"))
    if not keys:
        raise ConfigurationError(f"{variable}={str(path)!r} holds no key; write one key per line")
    for number, key in enumerate(keys, 1):
        if "," in key or any(ch.isspace() for ch in key):
            raise ConfigurationError(f"{variable}: key {number} holds a comma or a space; keys are single tokens")
    return keys


T = TypeVar("T")


def _number(kind: Callable[[str], T], what: str) -> Callable[[str, str], T]:
    def parse(variable: str, raw: str) -> T:
        try:
            return kind(raw)
        except ValueError:
            raise ConfigurationError(f"{variable}={raw!r} is not {what}") from None

    return parse


def _boolean(variable: str, raw: str) -> bool:
    lowered = raw.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigurationError(f"{variable}={raw!r} is not a boolean; use true/false, 1/0, yes/no or on/off")


def _origins(variable: str, raw: str) -> tuple[str, ...]:
    origins = tuple(o.strip().rstrip("/") for o in raw.split(",") if o.strip())
    for origin in origins:
        if origin != "*" and not origin.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"{variable} has {origin!r}; use '*' or comma-separated origins such as https://example.com"
            )
    return origins


_FIELD_BY_ENV: dict[str, str] = {
    ENV_BUNDLE_DIR: "bundle_dir",
    ENV_THREADS: "threads",
    ENV_DECODE_STREAMS: "decode_streams",
    ENV_SPINNING: "thread_spinning",
    ENV_VERIFY_HASHES: "verify_hashes",
    ENV_MAX_CHARS: "max_chars",
    ENV_MAX_TEXTS: "max_texts",
    ENV_MAX_FILE_BYTES: "max_file_bytes",
    ENV_BEAM_SIZE: "beam_size",
    ENV_BATCH_TOKENS: "batch_tokens",
    ENV_CORS_ORIGINS: "cors_origins",
    ENV_OUTPUT_BUCKET: "output_bucket",
    ENV_OUTPUT_PREFIX: "output_prefix",
    ENV_DEADLINE_MARGIN_S: "deadline_margin_s",
    ENV_EVENT_TIMEOUT_S: "event_timeout_s",
    ENV_REQUEST_TIMEOUT_S: "request_timeout_s",
    ENV_GLOSSARY_FILE: "glossary_file",
    ENV_API_KEYS: "api_keys",
    ENV_API_KEYS_FILE: "api_keys_file",
    ENV_LOG_TEXT: "log_text",
    ENV_PART_CHARS: "part_chars",
    ENV_WORK_PREFIX: "work_prefix",
    ENV_MEMORY_BYTES: "memory_bytes",
    ENV_STATE_DIR: "state_dir",
    ENV_STATE_PREFIX: "state_prefix",
    ENV_DOCUMENT_BUCKET: "document_bucket",
    ENV_DOCUMENT_PREFIX: "document_prefix",
    ENV_MAX_QUEUE_S: "max_queue_s",
    ENV_METRICS: "metrics",
    ENV_USAGE_STORE: "usage_store",
}

_PARSERS: dict[str, Callable[[str, str], Any]] = {
    "bundle_dir": lambda _variable, raw: Path(raw),
    "threads": _number(int, "an integer"),
    "decode_streams": _number(int, "an integer"),
    "thread_spinning": _boolean,
    "verify_hashes": _boolean,
    "max_chars": _number(int, "an integer"),
    "max_texts": _number(int, "an integer"),
    "max_file_bytes": _number(int, "an integer"),
    "beam_size": _number(int, "an integer"),
    "batch_tokens": _number(int, "an integer"),
    "cors_origins": _origins,
    "output_bucket": lambda _variable, raw: raw,
    "output_prefix": lambda _variable, raw: raw,
    "deadline_margin_s": _number(float, "a number"),
    "event_timeout_s": _number(float, "a number"),
    "request_timeout_s": _number(float, "a number"),
    "glossary_file": lambda _variable, raw: Path(raw),
    "api_keys": lambda _variable, raw: parse_key_list(raw),
    "api_keys_file": lambda _variable, raw: Path(raw),
    "log_text": _boolean,
    "part_chars": _number(int, "an integer"),
    "work_prefix": lambda _variable, raw: raw,
    "memory_bytes": _number(int, "an integer"),
    "state_dir": lambda _variable, raw: Path(raw),
    "state_prefix": lambda _variable, raw: raw,
    "document_bucket": lambda _variable, raw: raw,
    "document_prefix": lambda _variable, raw: raw,
    "max_queue_s": _number(float, "a number"),
    "metrics": lambda _variable, raw: raw.lower(),
    "usage_store": lambda _variable, raw: raw,
}

assert set(_PARSERS) == set(_FIELD_BY_ENV.values()) == {f.name for f in fields(RuntimeConfig)}
