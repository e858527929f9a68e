"""Counters of what each API key used, shared by every instance of the function: the store behind
``handler.api.quotas`` (which decides what is counted, per key and period).

Every store answers the same three calls (``Counters``):

* ``add(counter, amount, limit, expires_at)``: adds ``amount`` to ``counter`` atomically unless the total would
  pass ``limit`` (None: no limit, always added), and says whether it did and the total it saw: the check and the
  addition are one step in the store, so two instances never both take the last unit of a quota;
* ``add_many(amounts)``: adds each counter's amount, no limit (the batched counts of keys without one), each
  counter with its expiry;
* ``total(counter)``: the count so far (0 for a counter never written).

A counter expires at ``expires_at`` (seconds since the epoch; the store's own expiry where it has one). The stores,
chosen by ``TRANSLATE_USAGE_STORE`` (``usage_counters``):

* ``SqliteCounters``: the local server (the variable empty, no output bucket): one SQLite file in
  ``TRANSLATE_STATE_DIR`` (``usage.sqlite3``) in WAL mode; each addition is one ``INSERT ... ON CONFLICT DO UPDATE
  ... WHERE`` statement, which SQLite runs under its database write lock, held across processes;
* ``DynamoCounters`` (``dynamodb:TABLE``): one item per counter, ``UpdateItem`` with ``ADD`` and a
  ``ConditionExpression``, DynamoDB's atomic counter (the table: partition key ``counter`` (S), TTL on
  ``expires_at``; infra/aws/template.yaml creates it);
* ``RedisCounters`` (``redis://HOST:PORT``, Memorystore): a Lua script the server runs atomically (``EVALSHA``),
  ``INCRBY`` and ``EXPIREAT`` pipelined for batches;
* ``ProcessCounters``: one process's memory, for a deployment without the variable (each instance counts alone:
  only for keys without limits; a key with one makes ``usage_counters`` refuse, ``ConfigurationError``).

A store that cannot be reached raises ``StorageError``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from handler.config import ENV_API_KEYS, ENV_USAGE_STORE, RuntimeConfig
from handler.errors import ConfigurationError, StorageError

if TYPE_CHECKING:  # sqlite3 (5 ms) and the Redis client (ssl: 3-6 ms) are imported by the store that uses them
    import sqlite3

    from handler.storage.redis_client import RedisClient

logger = logging.getLogger(__name__)

SQLITE_NAME = "usage.sqlite3"  # in TRANSLATE_STATE_DIR
DYNAMODB_KEY = "counter"  # the table's partition key (S)
DYNAMODB_TOTAL = "total"
DYNAMODB_EXPIRES = "expires_at"  # the table's TTL attribute
PURGE_EVERY_S = 3600.0  # how often a process deletes the expired rows of the SQLite file


class Added(NamedTuple):
    """What ``add`` did: whether the amount was added, and the counter's total (after it, or as it stood)."""

    accepted: bool
    total: int


class Counters(Protocol):
    def add(self, counter: str, amount: int, limit: int | None, expires_at: int) -> Added: ...

    def add_many(self, amounts: Mapping[str, tuple[int, int]]) -> None: ...

    def total(self, counter: str) -> int: ...


def usage_counters(config: RuntimeConfig) -> Counters:
    """The counters ``config.usage_store`` names; empty: the state folder's file on the local server (no output
    bucket), this process's memory on a deployment, which ``ConfigurationError`` refuses where a key has limits (each
    instance would let a key have them again)."""
    store = config.usage_store
    if store.startswith("dynamodb:"):
        return DynamoCounters(store.removeprefix("dynamodb:"))
    if store.startswith(("redis://", "rediss://")):
        from handler.storage.redis_client import RedisClient

        return RedisCounters(RedisClient(store))
    if not config.output_bucket:
        return SqliteCounters(Path(config.state_dir) / SQLITE_NAME)
    limited = sum(1 for entry in config.key_entries if entry.limits)
    if limited:
        raise ConfigurationError(
            f"{ENV_API_KEYS} gives {limited} key(s) limits, but {ENV_USAGE_STORE} is empty: each instance of a "
            f"deployment would count alone; set {ENV_USAGE_STORE} (AWS: the template's KeyQuotas=enabled, "
            "dynamodb:TABLE; Google Cloud: deploy.sh's USAGE_REDIS=1, redis://HOST:PORT)"
        )
    return ProcessCounters()


class ProcessCounters:
    """This process's memory."""

    def __init__(self) -> None:
        self._totals: dict[str, int] = {}
        self._lock = threading.Lock()

    def add(self, counter: str, amount: int, limit: int | None, expires_at: int) -> Added:
        with self._lock:
            total = self._totals.get(counter, 0)
            if limit is not None and total + amount > limit:
                return Added(False, total)
            self._totals[counter] = total + amount
            return Added(True, total + amount)

    def add_many(self, amounts: Mapping[str, tuple[int, int]]) -> None:
        with self._lock:
            for counter, (amount, _expires_at) in amounts.items():
                self._totals[counter] = self._totals.get(counter, 0) + amount

    def total(self, counter: str) -> int:
        with self._lock:
            return self._totals.get(counter, 0)


class SqliteCounters:
    """One SQLite file that several processes share (the local server's workers, two servers on one folder)."""

    _ADD = (
        "INSERT INTO counters (counter, total, expires_at) VALUES (?, ?, ?) "
        "ON CONFLICT (counter) DO UPDATE SET total = total + excluded.total, "
        "expires_at = max(expires_at, excluded.expires_at) WHERE ? IS NULL OR total + excluded.total <= ? "
        "RETURNING total"
    )

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._pid = 0
        self._lock = threading.Lock()
        self._purged = 0.0

    def _run(self, work: Callable[[sqlite3.Connection], Any]) -> Any:
        """``work`` on this process's connection (a forked worker opens its own), one thread at a time;
        ``StorageError`` when SQLite fails."""
        import sqlite3

        with self._lock:
            try:
                if self._connection is None or self._pid != os.getpid():
                    self._connection, self._pid = self._open(), os.getpid()
                return work(self._connection)
            except sqlite3.Error as error:
                raise StorageError(f"the usage file {self.path} failed: {error}") from None

    def _open(self) -> sqlite3.Connection:
        import sqlite3

        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")  # WAL: no fsync a write; a power cut may lose the last ones
        connection.execute(
            "CREATE TABLE IF NOT EXISTS counters "
            "(counter TEXT PRIMARY KEY, total INTEGER NOT NULL, expires_at INTEGER NOT NULL)"
        )
        return connection

    def add(self, counter: str, amount: int, limit: int | None, expires_at: int) -> Added:
        if limit is not None and amount > limit:
            return Added(False, self.total(counter))
        row = self._run(lambda db: db.execute(self._ADD, (counter, amount, expires_at, limit, limit)).fetchone())
        if row is None:  # the condition held the update back
            return Added(False, self.total(counter))
        return Added(True, int(row[0]))

    def add_many(self, amounts: Mapping[str, tuple[int, int]]) -> None:
        def write(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                for counter, (amount, expires_at) in amounts.items():
                    db.execute(self._ADD, (counter, amount, expires_at, None, None)).fetchall()
                now = time.time()
                if now - self._purged > PURGE_EVERY_S:
                    db.execute("DELETE FROM counters WHERE expires_at < ?", (int(now),))
                    self._purged = now
            finally:
                db.execute("COMMIT")

        self._run(write)

    def total(self, counter: str) -> int:
        row = self._run(lambda db: db.execute("SELECT total FROM counters WHERE counter = ?", (counter,)).fetchone())
        return int(row[0]) if row else 0


class DynamoCounters:
    """A DynamoDB table (``dynamodb:TABLE``), through boto3 (imported on first use, not at a cold start)."""

    def __init__(self, table: str, client: Any = None) -> None:
        self.table = table
        self._client = client
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                import boto3
                from botocore.config import Config

                # standard retries (throttling, 5xx, dropped connections): a retried ADD whose first answer was lost
                # may count twice, never lose a count
                config = Config(connect_timeout=3, read_timeout=5, retries={"mode": "standard", "max_attempts": 3})
                self._client = boto3.client("dynamodb", config=config)
            return self._client

    def _update(self, counter: str, amount: int, expires_at: int, limit: int | None) -> Any:
        arguments: dict[str, Any] = {
            "TableName": self.table,
            "Key": {DYNAMODB_KEY: {"S": counter}},
            "UpdateExpression": "ADD #total :amount SET #expires = :expires",
            "ExpressionAttributeNames": {"#total": DYNAMODB_TOTAL, "#expires": DYNAMODB_EXPIRES},
            "ExpressionAttributeValues": {":amount": {"N": str(amount)}, ":expires": {"N": str(expires_at)}},
            "ReturnValues": "UPDATED_NEW",
        }
        if limit is not None:
            arguments["ConditionExpression"] = "attribute_not_exists(#total) OR #total <= :room"
            arguments["ExpressionAttributeValues"][":room"] = {"N": str(limit - amount)}
        return self.client.update_item(**arguments)

    def add(self, counter: str, amount: int, limit: int | None, expires_at: int) -> Added:
        if limit is not None and amount > limit:
            return Added(False, self.total(counter))
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            answer = self._update(counter, amount, expires_at, limit)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return Added(False, self.total(counter))
            raise StorageError(f"the usage table {self.table} failed: {error}") from None
        except BotoCoreError as error:
            raise StorageError(f"the usage table {self.table} failed: {error}") from None
        return Added(True, int(answer["Attributes"][DYNAMODB_TOTAL]["N"]))

    def add_many(self, amounts: Mapping[str, tuple[int, int]]) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        for counter, (amount, expires_at) in amounts.items():  # (no batch form of UpdateItem: one call per counter)
            try:
                self._update(counter, amount, expires_at, None)
            except (BotoCoreError, ClientError) as error:
                raise StorageError(f"the usage table {self.table} failed: {error}") from None

    def total(self, counter: str) -> int:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            answer = self.client.get_item(TableName=self.table, Key={DYNAMODB_KEY: {"S": counter}}, ConsistentRead=True)
        except (BotoCoreError, ClientError) as error:
            raise StorageError(f"the usage table {self.table} failed: {error}") from None
        return int(answer.get("Item", {}).get(DYNAMODB_TOTAL, {}).get("N", 0))


# KEYS[1] the counter; ARGV: the amount, the limit (-1: none), the expiry. Returns {1 if added, the total}.
ADD_SCRIPT = b"""
local total = tonumber(redis.call('GET', KEYS[1]) or '0')
local amount = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
if limit >= 0 and total + amount > limit then
  return {0, total}
end
total = redis.call('INCRBY', KEYS[1], amount)
redis.call('EXPIREAT', KEYS[1], ARGV[3])
return {1, total}
"""


class RedisCounters:
    """A Redis server (``redis://HOST:PORT``: Memorystore, or any Redis)."""

    def __init__(self, client: RedisClient) -> None:
        self.client = client
        self._sha: bytes | None = None

    def add(self, counter: str, amount: int, limit: int | None, expires_at: int) -> Added:
        from handler.storage.redis_client import RedisReplyError

        arguments = (1, counter, amount, -1 if limit is None else limit, expires_at)
        reply = None
        if self._sha is not None:
            (reply,) = self.client.pipeline([("EVALSHA", self._sha, *arguments)])
            if isinstance(reply, RedisReplyError) and not str(reply).startswith("NOSCRIPT"):
                raise StorageError(f"the usage store {self.client.address} refused the script: {reply}")
        if reply is None or isinstance(reply, RedisReplyError):  # first use, or the server lost its scripts
            reply = self._evaluate(arguments)
        assert isinstance(reply, list) and len(reply) == 2
        added, total = reply
        return Added(added == 1, int(total))  # type: ignore[arg-type]

    def _evaluate(self, arguments: tuple[int | str, ...]) -> Any:
        from handler.storage.redis_client import RedisReplyError

        load, reply = self.client.pipeline([("SCRIPT", "LOAD", ADD_SCRIPT), ("EVAL", ADD_SCRIPT, *arguments)])
        if isinstance(reply, RedisReplyError) or isinstance(load, RedisReplyError):
            raise StorageError(f"the usage store {self.client.address} refused the script: {reply!r} {load!r}")
        if isinstance(load, bytes):
            self._sha = load
        return reply

    def add_many(self, amounts: Mapping[str, tuple[int, int]]) -> None:
        from handler.storage.redis_client import RedisReplyError

        commands: list[tuple[str | int, ...]] = []
        for counter, (amount, expires_at) in amounts.items():
            commands += [("INCRBY", counter, amount), ("EXPIREAT", counter, expires_at)]
        for reply in self.client.pipeline(commands) if commands else []:
            if isinstance(reply, RedisReplyError):
                raise StorageError(f"the usage store {self.client.address} failed: {reply}")

    def total(self, counter: str) -> int:
        from handler.storage.redis_client import RedisReplyError

        try:
            reply = self.client.command("GET", counter)
        except RedisReplyError as error:
            raise StorageError(f"the usage store {self.client.address} failed: {error}") from None
        return int(reply) if isinstance(reply, bytes) else 0
