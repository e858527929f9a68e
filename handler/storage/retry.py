"""Retrying an object store's transient failures with backoff, inside one invocation and only while its deadline
allows.

The file adapters wrap their store for each event: ``RetryingStore(store, deadline)``. Every call (size, read,
write, version, conditional write, listing) is tried up to ``RetryPolicy.attempts`` times when it fails with an
error the store calls transient (``store.transient(error)``: a dropped or refused connection, a timeout, a
truncated body, HTTP 5xx / 429); any other error (403, 404, a failed precondition) is raised at once. Between
attempts it waits ``first_backoff_s`` × 2^(attempt − 1), at most ``max_backoff_s``, times a random factor from 0.5
to 1 (jitter, so that concurrent invocations do not retry in step). A retry starts only when the invocation's
deadline is further away than the wait; otherwise, and after the last attempt, ``StorageError`` is raised (the
adapter logs it once and fails the invocation, so the platform retries the event later).

The stores' own SDK retries are off (``S3Store``: botocore ``total_max_attempts=1``; ``GcsStore``: ``retry=None``)
and each attempt is bounded by the store's connect and read timeouts, so this loop is the only one and knows
the deadline. Every call is safe to repeat: reads, whole-object writes of the same bytes, and conditional writes
whose second try after a lost answer finds its own object (the callers treat "already there" as done).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from handler.errors import StorageError
from handler.storage.object_store import OUTPUT_CONTENT_TYPE, ObjectRef, VersionedObject, VersionedStore

logger = logging.getLogger(__name__)

T = TypeVar("T")


class TransientAware(VersionedStore, Protocol):
    def transient(self, error: BaseException) -> bool: ...


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4  # tries per call, the first included
    first_backoff_s: float = 0.5
    max_backoff_s: float = 4.0

    def backoff(self, failed_attempts: int, draw: Callable[[], float] = random.random) -> float:
        """Seconds to wait after ``failed_attempts`` failures (1, 2, ...), jittered."""
        ceiling = min(self.max_backoff_s, self.first_backoff_s * 2 ** (failed_attempts - 1))
        return float(ceiling * (0.5 + 0.5 * draw()))


class RetryingStore:
    """``store`` with transient failures retried while ``deadline`` (a ``time.monotonic()`` value) allows."""

    def __init__(
        self,
        store: TransientAware,
        deadline: float | None,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = store
        self.scheme = store.scheme
        self.deadline = deadline
        self.policy = policy or RetryPolicy()
        self._sleep = sleep

    def _call(self, action: str, target: str, operation: Callable[[], T]) -> T:
        failed = 0
        while True:
            try:
                return operation()
            except Exception as error:
                if not self.store.transient(error):
                    raise
                failed += 1
                reason = f"{type(error).__name__}: {error}"
                if failed >= self.policy.attempts:
                    raise StorageError(
                        f"{action} {target} failed {failed} times (last: {reason}); the storage service is "
                        f"unavailable, so the event fails and the platform retries it"
                    ) from error
                wait = self.policy.backoff(failed)
                left = None if self.deadline is None else self.deadline - time.monotonic()
                if left is not None and left <= wait:
                    raise StorageError(
                        f"{action} {target} failed ({reason}) and the invocation has {max(left, 0.0):.1f} s left "
                        f"before its deadline, too little to retry; the event fails and the platform retries it"
                    ) from error
                logger.warning(
                    "%s %s failed (attempt %d of %d: %s); retrying in %.2f s",
                    action,
                    target,
                    failed,
                    self.policy.attempts,
                    reason,
                    wait,
                )
                self._sleep(wait)

    # --- ObjectStore ---------------------------------------------------------------------------------------------
    def size(self, ref: ObjectRef) -> int:
        return self._call("reading the size of", str(ref), lambda: self.store.size(ref))

    def read(self, ref: ObjectRef) -> bytes:
        return self._call("reading", str(ref), lambda: self.store.read(ref))

    def write(
        self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str], content_type: str = OUTPUT_CONTENT_TYPE
    ) -> None:
        self._call("writing", str(ref), lambda: self.store.write(ref, data, metadata, content_type))

    # --- VersionedStore ------------------------------------------------------------------------------------------
    def version(self, ref: ObjectRef) -> str | None:
        return self._call("reading the version of", str(ref), lambda: self.store.version(ref))

    def read_versioned(self, ref: ObjectRef) -> VersionedObject | None:
        return self._call("reading", str(ref), lambda: self.store.read_versioned(ref))

    def write_if(
        self,
        ref: ObjectRef,
        data: bytes,
        metadata: Mapping[str, str],
        version: str | None,
        content_type: str = OUTPUT_CONTENT_TYPE,
    ) -> bool:
        return self._call("writing", str(ref), lambda: self.store.write_if(ref, data, metadata, version, content_type))

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        target = f"{self.scheme}://{bucket}/{prefix}*"
        return self._call("listing", target, lambda: self.store.list_keys(bucket, prefix))

    def delete(self, ref: ObjectRef, version: str | None = None) -> bool:
        """The wrapped store's ``delete`` (S3Store, GcsStore, FolderStore), retried like every other call."""
        delete = self.store.delete  # type: ignore[attr-defined]  # not part of TransientAware: the state's stores
        return bool(self._call("deleting", str(ref), lambda: delete(ref, version)))
