"""A small Redis client for the usage counters (``handler.storage.usage.RedisCounters``): RESP2 over a socket, the
handful of commands the counters send (``EVALSHA``/``EVAL``, ``GET``, ``INCRBY``, ``EXPIREAT``, ``AUTH``,
``SELECT``), pipelined where several go at once. Written here instead of adding redis-py to the runtime's lock files:
the counters need 4 commands, and a Google Cloud deployment with Memorystore is the only one that reaches it.

``redis://[:PASSWORD@]HOST[:PORT][/DB]`` (Memorystore's AUTH string as the password), ``rediss://`` for TLS (the
server's certificate checked against the system's trust store). Connections are pooled per client; a connection that
failed is dropped, never reused. Every socket operation is bounded by ``timeout_s``.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from handler.errors import StorageError

Reply = int | bytes | None | list["Reply"]
DEFAULT_PORT = 6379


class RedisReplyError(Exception):
    """An error reply of the server (``-ERR ...``, ``-NOSCRIPT ...``)."""


@dataclass(frozen=True)
class RedisAddress:
    host: str
    port: int
    password: str | None
    database: int
    tls: bool

    @classmethod
    def parse(cls, url: str) -> RedisAddress:
        parts = urlsplit(url)
        database = parts.path.strip("/")
        return cls(
            host=parts.hostname or "localhost",
            port=parts.port or DEFAULT_PORT,
            password=unquote(parts.password) if parts.password else None,
            database=int(database) if database else 0,
            tls=parts.scheme == "rediss",
        )

    def __str__(self) -> str:  # never the password
        return f"{'rediss' if self.tls else 'redis'}://{self.host}:{self.port}/{self.database}"


def encode(arguments: Sequence[str | int | bytes]) -> bytes:
    """One command as RESP2's array of bulk strings."""
    out = [b"*%d\r\n" % len(arguments)]
    for argument in arguments:
        data = argument if isinstance(argument, bytes) else str(argument).encode("utf-8")
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class _Connection:
    def __init__(self, address: RedisAddress, timeout_s: float) -> None:
        raw = socket.create_connection((address.host, address.port), timeout=timeout_s)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if address.tls:
            import ssl  # (3-6 ms: only where TLS is asked)

            raw = ssl.create_default_context().wrap_socket(raw, server_hostname=address.host)
        self.socket = raw
        self.reader = raw.makefile("rb")
        if address.password is not None:
            self.call([["AUTH", address.password]])
        if address.database:
            self.call([["SELECT", address.database]])

    def call(self, commands: Sequence[Sequence[str | int | bytes]]) -> list[Reply | RedisReplyError]:
        """Send every command at once (a pipeline) and read their replies in order."""
        self.socket.sendall(b"".join(encode(command) for command in commands))
        return [self._reply() for _ in commands]

    def _reply(self) -> Reply | RedisReplyError:
        line = self.reader.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("the Redis server closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest
        if kind == b"-":
            return RedisReplyError(rest.decode("utf-8", "replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            size = int(rest)
            if size < 0:
                return None
            data = self.reader.read(size + 2)
            if len(data) != size + 2:
                raise ConnectionError("the Redis server closed the connection")
            return data[:-2]
        if kind == b"*":
            count = int(rest)
            if count < 0:
                return None
            items: list[Reply] = []
            for _ in range(count):
                item = self._reply()
                if isinstance(item, RedisReplyError):
                    raise item
                items.append(item)
            return items
        raise ConnectionError(f"not a RESP reply: {line[:20]!r}")

    def close(self) -> None:
        try:
            self.reader.close()
            self.socket.close()
        except OSError:
            pass


class RedisClient:
    """Commands to one Redis server over pooled connections (thread-safe)."""

    def __init__(self, url: str, timeout_s: float = 5.0, pool_size: int = 8) -> None:
        self.address = RedisAddress.parse(url)
        self.timeout_s = timeout_s
        self.pool_size = pool_size
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    def pipeline(self, commands: Sequence[Sequence[str | int | bytes]]) -> list[Reply | RedisReplyError]:
        """The replies of ``commands`` sent together (an error reply is returned in its place, not raised);
        ``StorageError`` when the server cannot be reached or the connection fails (nothing is retried: a command
        whose answer was lost may have run)."""
        with self._lock:
            connection = self._idle.pop() if self._idle else None
        try:
            if connection is None:
                connection = _Connection(self.address, self.timeout_s)
            replies = connection.call(commands)
        except (OSError, ValueError, RedisReplyError) as error:
            if connection is not None:
                connection.close()
            raise StorageError(f"the usage store {self.address} failed: {type(error).__name__}: {error}") from None
        with self._lock:
            if len(self._idle) < self.pool_size:
                self._idle.append(connection)
                connection = None
        if connection is not None:
            connection.close()
        return replies

    def command(self, *arguments: str | int | bytes) -> Reply:
        """One command's reply; an error reply raises ``RedisReplyError``."""
        (reply,) = self.pipeline([arguments])
        if isinstance(reply, RedisReplyError):
            raise reply
        return reply

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
