"""Usage and limits per API key: what each key of ``TRANSLATE_API_KEYS`` used, counted across every instance in the
store ``TRANSLATE_USAGE_STORE`` names (``handler.storage.usage``), and its limits enforced.

A key entry may carry limits (``handler.config.parse_key_entry``): ``chars=N/PERIOD``, the characters it may have
translated per period, and ``rate=N/PERIOD``, the requests it may send per period. Periods are calendar periods in
UTC (a second, a minute, an hour, a day, a month): the counters are fixed windows, each expiring with its period.

* ``count_request(key)``: every request a key presents to a keyed route (but the usage routes) counts against its
  ``rate``; over it, ``RateLimitedError`` (429) with the seconds to the next period.
* ``charge(key, characters)``: a translation's characters, before it runs (its texts' length, as DeepL bills them):
  added only if the key's ``chars`` quota still holds them, else ``QuotaExceededError`` (429; DeepL's 456); the
  returned ``Charge.refund()`` gives them back when the translation then fails.
* ``record(key, characters)``: characters known only once the work is done (a file's), added without a check: the
  file is counted, and the quota refuses the key's next request.
* ``usage(key)``: what ``/v2/usage`` and LibreTranslate's ``/usage`` report: the key's characters this period and
  its limit, its requests and their limit.

What each write costs, and where it is batched: a limit is checked in the store, one atomic conditional write per
limit per request (exact: two instances never both take a quota's last characters); a key without a ``chars`` limit
has its characters counted per month too (for ``/v2/usage``), batched in this process and written at most every
``FLUSH_S`` seconds or ``FLUSH_COUNTERS`` counters (``flush``; also when its usage is read and at exit), since no
answer depends on it. A key without ``rate`` has its requests not counted at all. Without keys nothing is counted.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import math
import threading
import time
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NamedTuple

from handler.config import KeyEntry, KeyLimit, Period, RuntimeConfig
from handler.errors import QuotaExceededError, RateLimitedError, StorageError

if TYPE_CHECKING:  # the stores are imported when the first count is written, not at a cold start
    from handler.storage.usage import Counters

logger = logging.getLogger(__name__)

CHARACTERS = "characters"
REQUESTS = "requests"
UNLIMITED_PERIOD: Period = "month"  # the period a key's characters are counted in when it has no chars limit
FLUSH_S = 5.0  # a batched count waits at most this long in the process before it is written
FLUSH_COUNTERS = 100  # ...or until this many counters wait
EXPIRY_MARGIN_S = 86_400  # a counter outlives its period by a day (the stores' expiry is not to the second)
_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400}


class Window(NamedTuple):
    """One period of a limit: its counter's label, and when it ends (seconds since the epoch)."""

    label: str
    ends: float


def window(period: str, now: float) -> Window:
    """The calendar period (UTC) ``now`` falls in."""
    if period in _SECONDS:
        length = _SECONDS[period]
        index = int(now // length)
        return Window(f"{period[0]}{index}", float((index + 1) * length))
    moment = datetime.fromtimestamp(now, UTC)
    following = datetime(moment.year + moment.month // 12, moment.month % 12 + 1, 1, tzinfo=UTC)
    return Window(f"M{moment.year:04d}-{moment.month:02d}", following.timestamp())


class Measured(NamedTuple):
    """A key's count of one measure in the current period, its limit (None: none), and the seconds left."""

    used: int
    limit: int | None
    period: Period
    resets_in_s: int


class KeyUsage(NamedTuple):
    """A key's usage: its characters, and its requests where it has a ``rate`` (else None: not counted)."""

    name: str
    characters: Measured
    requests: Measured | None


class Charge:
    """Characters taken from a key's count; ``refund`` gives them back once (a translation that failed)."""

    def __init__(self, refund: Callable[[], None] | None = None) -> None:
        self._refund = refund

    def refund(self) -> None:
        refund, self._refund = self._refund, None
        if refund is not None:
            refund()


NO_CHARGE = Charge()


class Quotas:
    """The usage and limits of one configuration's keys; the store is opened on first use (not at a cold start)."""

    def __init__(
        self,
        config: RuntimeConfig,
        counters: Callable[[], Counters] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._entries = {_digest(entry.key): entry for entry in config.key_entries}
        self._make_counters = counters or (lambda: _usage_counters(config))
        self._counters: Counters | None = None
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[int, int]] = {}  # batched counter -> (amount, expires_at)
        self._pending_since = 0.0
        if self._entries:  # the batch is written at exit (a weak reference: a Quotas dropped earlier is not kept)
            atexit.register(_flush_at_exit, weakref.ref(self))

    @property
    def active(self) -> bool:
        """Whether anything is counted: keys are configured."""
        return bool(self._entries)

    @property
    def counters(self) -> Counters:
        with self._lock:
            if self._counters is None:
                self._counters = self._make_counters()
            return self._counters

    def entry(self, key: str | None) -> KeyEntry | None:
        """The configured entry of ``key`` (checked before: one of the keys), or None."""
        return self._entries.get(_digest(key)) if key is not None else None

    # --- counting ---------------------------------------------------------------------------------------------
    def count_request(self, key: str | None) -> None:
        """One request of ``key`` against its ``rate``: ``RateLimitedError`` when the period's requests are sent."""
        entry = self.entry(key)
        limit = entry.limit(REQUESTS) if entry else None
        if entry is None or limit is None:
            return
        now = self._clock()
        current = window(limit.period, now)
        added = self.counters.add(_counter(entry, REQUESTS, current), 1, limit.allowed, _expiry(current))
        if not added.accepted:
            wait = _seconds_until(current, now)
            raise RateLimitedError(
                f"too many requests: the key {_label(entry)} may send {limit.allowed:,} per {limit.period} and has "
                f"sent them; the {limit.period} ends in {_duration(wait)} (Retry-After: {wait})",
                wait,
            )

    def charge(self, key: str | None, characters: int) -> Charge:
        """``characters`` against ``key``'s ``chars`` quota, before the work: ``QuotaExceededError`` when they are
        not left (nothing taken); the returned charge's ``refund`` gives them back."""
        entry = self.entry(key)
        if entry is None or characters <= 0:
            return NO_CHARGE
        limit = entry.limit(CHARACTERS)
        now = self._clock()
        if limit is None:
            counter, expires_at = self._unlimited_counter(entry, now)
            self._add_batched(counter, characters, expires_at, now)
            return Charge(lambda: self._add_batched(counter, -characters, expires_at, self._clock()))
        current = window(limit.period, now)
        counter = _counter(entry, CHARACTERS, current)
        added = self.counters.add(counter, characters, limit.allowed, _expiry(current))
        if not added.accepted:
            raise self._exceeded(entry, limit, added.total, characters, _seconds_until(current, now))
        return Charge(lambda: self._refund(counter, characters, _expiry(current)))

    def require_left(self, key: str | None) -> None:
        """``QuotaExceededError`` when ``key``'s ``chars`` quota has nothing left this period: a file, whose
        characters are counted once it is done (``record``), is refused before its work begins."""
        entry = self.entry(key)
        limit = None if entry is None else entry.limit(CHARACTERS)
        if entry is None or limit is None:
            return
        now = self._clock()
        current = window(limit.period, now)
        used = self.counters.total(_counter(entry, CHARACTERS, current))
        if used >= limit.allowed:
            wait = _seconds_until(current, now)
            raise QuotaExceededError(
                f"Quota exceeded: the key {_label(entry)} may translate {limit.allowed:,} characters per "
                f"{limit.period} and has none left; the {limit.period} ends in {_duration(wait)} (Retry-After: {wait})",
                wait,
            )

    def record(self, key: str | None, characters: int) -> None:
        """``characters`` of finished work (a file's), added without a check."""
        entry = self.entry(key)
        if entry is None or characters <= 0:
            return
        now = self._clock()
        limit = entry.limit(CHARACTERS)
        if limit is None:
            counter, expires_at = self._unlimited_counter(entry, now)
            self._add_batched(counter, characters, expires_at, now)
            return
        current = window(limit.period, now)
        self.counters.add(_counter(entry, CHARACTERS, current), characters, None, _expiry(current))

    def _refund(self, counter: str, characters: int, expires_at: int) -> None:
        try:
            self.counters.add(counter, -characters, None, expires_at)
        except StorageError as error:  # the key keeps the charge: counted, never lost
            logger.warning("a failed request's characters could not be given back: %s", error)

    @staticmethod
    def _exceeded(entry: KeyEntry, limit: KeyLimit, used: int, asked: int, wait: int) -> QuotaExceededError:
        left = max(0, limit.allowed - used)
        return QuotaExceededError(
            f"Quota exceeded: the key {_label(entry)} may translate {limit.allowed:,} characters per {limit.period}, "
            f"has {left:,} left and this request has {asked:,}; the {limit.period} ends in {_duration(wait)} "
            f"(Retry-After: {wait})",
            wait,
        )

    # --- batched counts (keys without a chars limit) --------------------------------------------------------------
    def _unlimited_counter(self, entry: KeyEntry, now: float) -> tuple[str, int]:
        current = window(UNLIMITED_PERIOD, now)
        return _counter(entry, CHARACTERS, current), _expiry(current)

    def _add_batched(self, counter: str, amount: int, expires_at: int, now: float) -> None:
        with self._lock:
            if not self._pending:
                self._pending_since = now
            waiting, _ = self._pending.get(counter, (0, expires_at))
            self._pending[counter] = (waiting + amount, expires_at)
            due = now - self._pending_since >= FLUSH_S or len(self._pending) >= FLUSH_COUNTERS
        if due:
            self._flush_quietly()

    def flush(self) -> None:
        """Write the batched counts now (``StorageError``: they stay batched, for the next flush)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        pending = {counter: value for counter, value in pending.items() if value[0]}
        if not pending:
            return
        try:
            self.counters.add_many(pending)
        except StorageError:
            with self._lock:  # put back, merged with what came meanwhile
                for counter, (amount, expires_at) in pending.items():
                    waiting, _ = self._pending.get(counter, (0, expires_at))
                    self._pending[counter] = (waiting + amount, expires_at)
            raise

    def _flush_quietly(self) -> None:
        try:
            self.flush()
        except StorageError as error:
            logger.warning("the batched usage counts could not be written (kept for the next try): %s", error)

    # --- reporting --------------------------------------------------------------------------------------------------
    def usage(self, key: str | None) -> KeyUsage | None:
        """``key``'s usage this period (its batched counts written first); None without keys."""
        entry = self.entry(key)
        if entry is None:
            return None
        self._flush_quietly()
        now = self._clock()
        characters = self._measured(entry, CHARACTERS, entry.limit(CHARACTERS), now)
        rate = entry.limit(REQUESTS)
        requests = self._measured(entry, REQUESTS, rate, now) if rate is not None else None
        return KeyUsage(entry.name, characters, requests)

    def _measured(self, entry: KeyEntry, measure: str, limit: KeyLimit | None, now: float) -> Measured:
        period = limit.period if limit is not None else UNLIMITED_PERIOD
        current = window(period, now)
        used = self.counters.total(_counter(entry, measure, current))
        return Measured(used, limit.allowed if limit else None, period, _seconds_until(current, now))


def _flush_at_exit(quotas: weakref.ref[Quotas]) -> None:
    alive = quotas()
    if alive is not None:
        alive._flush_quietly()


def _usage_counters(config: RuntimeConfig) -> Counters:
    from handler.storage.usage import usage_counters

    return usage_counters(config)


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def _owner(entry: KeyEntry) -> str:
    """Whose counters: ``name=NAME``, else a digest of the key (``sha256=`` and 32 hex digits; never the key)."""
    return f"name={entry.name}" if entry.name else f"sha256={_digest(entry.key).hex()[:32]}"


def _label(entry: KeyEntry) -> str:
    """The key as a message names it: its name, never the key."""
    return repr(entry.name) if entry.name else "(unnamed)"


def _counter(entry: KeyEntry, measure: str, current: Window) -> str:
    return f"{_owner(entry)}/{measure}/{current.label}"


def _expiry(current: Window) -> int:
    return int(current.ends) + EXPIRY_MARGIN_S


def _seconds_until(current: Window, now: float) -> int:
    return max(1, math.ceil(current.ends - now))


def _duration(seconds: int) -> str:
    """``seconds`` as a person reads it: 45 s, 12 min 5 s, 3 h 20 min, 23 days 4 h."""
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, rest = divmod(rest, 60)
    if days:
        return f"{days} day{'s' if days > 1 else ''} {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"
