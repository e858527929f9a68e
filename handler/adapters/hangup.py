"""Noticing a client that hung up on a streamed answer, before the next chunk is computed.

A server learns that its peer closed a connection only when it writes to it, and the first write after the close
still succeeds (the kernel buffers it; the peer answers with a reset). For a streamed translation that would mean
one more batch decoded for nobody. A closed peer's FIN is already readable, so before each chunk is asked for, the
socket is polled without blocking: end of stream there (``recv`` peeking returns ``b""``) means the client is gone,
and the stream is closed, which stops the decoding behind it. Bytes waiting there (a pipelined next request) are
left alone.
"""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator


def peer_closed(sock: socket.socket) -> bool:
    """Whether the peer of ``sock`` has closed its side (never blocks; an unusable socket counts as closed)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except (OSError, ValueError):
        return True


def until_peer_closes(chunks: Iterator[bytes], sock: socket.socket | None) -> Iterator[bytes]:
    """``chunks``, stopped (and closed) as soon as the peer of ``sock`` is seen gone; without a socket, as is."""
    try:
        while sock is None or not peer_closed(sock):
            try:
                chunk = next(chunks)
            except StopIteration:
                return
            yield chunk
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()
