"""Retrying a store's transient failures: which errors, how often, how long between tries, and the deadline.

The store is an in-memory versioned store behind the ``VersionedStore`` protocol whose calls fail on a script,
with real botocore errors classified by the real ``S3Store.transient`` (what the AWS adapter wraps). The clock is
controlled: ``time.monotonic`` reads a fake clock that the retry loop's ``sleep`` advances, so "the deadline is
0.3 s away" is exact.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from handler.errors import StorageError
from handler.storage.object_store import OUTPUT_CONTENT_TYPE, ObjectRef, S3Store, VersionedObject
from handler.storage.retry import RetryingStore, RetryPolicy

REF = ObjectRef("s3", "inbox", "notes/a.txt")


def client_error(status: int, code: str, operation: str = "PutObject") -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}, operation
    )


def unavailable() -> ClientError:
    return client_error(503, "ServiceUnavailable")


class FlakyStore:
    """A versioned in-memory store; ``failures[operation]`` lists the errors its next calls raise, in order."""

    scheme = "s3"

    def __init__(self, failures: dict[str, list[BaseException]] | None = None) -> None:
        self.failures = {name: list(errors) for name, errors in (failures or {}).items()}
        self.calls: list[tuple[object, ...]] = []
        self.objects: dict[ObjectRef, VersionedObject] = {}
        self.content_types: dict[ObjectRef, str] = {}
        self._classifier = S3Store(client=object())

    def transient(self, error: BaseException) -> bool:
        return self._classifier.transient(error)

    def _attempt(self, operation: str, *arguments: object) -> None:
        self.calls.append((operation, *arguments))
        pending = self.failures.get(operation)
        if pending:
            raise pending.pop(0)

    def size(self, ref: ObjectRef) -> int:
        self._attempt("size", ref)
        return len(self.objects[ref].data)

    def read(self, ref: ObjectRef) -> bytes:
        self._attempt("read", ref)
        return self.objects[ref].data

    def write(self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str], content_type: str = "text/plain") -> None:
        self._attempt("write", ref, data, dict(metadata))
        self.objects[ref] = VersionedObject(data, f"v{len(self.calls)}", dict(metadata))

    def version(self, ref: ObjectRef) -> str | None:
        self._attempt("version", ref)
        found = self.objects.get(ref)
        return None if found is None else found.version

    def read_versioned(self, ref: ObjectRef) -> VersionedObject | None:
        self._attempt("read_versioned", ref)
        return self.objects.get(ref)

    def write_if(
        self,
        ref: ObjectRef,
        data: bytes,
        metadata: Mapping[str, str],
        version: str | None,
        content_type: str = OUTPUT_CONTENT_TYPE,
    ) -> bool:
        self._attempt("write_if", ref, data, dict(metadata), version, content_type)
        if self.version_of(ref) != version:
            return False
        self.objects[ref] = VersionedObject(data, f"v{len(self.calls)}", dict(metadata))
        self.content_types[ref] = content_type
        return True

    def version_of(self, ref: ObjectRef) -> str | None:
        found = self.objects.get(ref)
        return None if found is None else found.version

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        self._attempt("list_keys", bucket, prefix)
        return sorted(r.key for r in self.objects if r.bucket == bucket and r.key.startswith(prefix))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(time, "monotonic", fake.monotonic)
    return fake


FIXED = RetryPolicy(attempts=3, first_backoff_s=1.0, max_backoff_s=1.0)  # every wait is 0.5-1 s


def retrying(
    store: FlakyStore, clock: Clock, deadline_in: float | None = 60.0, policy: RetryPolicy | None = FIXED
) -> RetryingStore:
    deadline = None if deadline_in is None else clock.now + deadline_in
    return RetryingStore(store, deadline, policy, sleep=clock.sleep)


# --- the backoff -------------------------------------------------------------------------------------------------


def test_the_default_policy_tries_four_times_from_half_a_second_doubling_up_to_four_seconds() -> None:
    policy = RetryPolicy()
    assert (policy.attempts, policy.first_backoff_s, policy.max_backoff_s) == (4, 0.5, 4.0)
    assert [policy.backoff(n, draw=lambda: 1.0) for n in (1, 2, 3, 4, 5, 9)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_the_jitter_scales_the_wait_between_half_and_all_of_it() -> None:
    policy = RetryPolicy(first_backoff_s=0.25, max_backoff_s=10.0)
    assert policy.backoff(1, draw=lambda: 0.0) == 0.125
    assert policy.backoff(1, draw=lambda: 0.5) == 0.1875
    assert policy.backoff(3, draw=lambda: 0.0) == 0.5
    assert policy.backoff(3, draw=lambda: 1.0) == 1.0
    assert isinstance(policy.backoff(1, draw=lambda: 1), float)


def test_the_default_jitter_is_random_within_the_band() -> None:
    waits = {RetryPolicy().backoff(2) for _ in range(50)}
    assert all(0.5 <= wait <= 1.0 for wait in waits)
    assert len(waits) > 40  # not one fixed value


# --- which errors are retried -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        unavailable(),
        client_error(500, "InternalError"),
        client_error(429, "TooManyRequests"),
        client_error(400, "RequestTimeout"),
        client_error(200, "SlowDown"),
        EndpointConnectionError(endpoint_url="http://127.0.0.1:1"),
        ReadTimeoutError(endpoint_url="http://127.0.0.1:1"),
        ConnectionResetError("connection reset by peer"),
        TimeoutError("timed out"),
    ],
    ids=lambda error: type(error).__name__ + ":" + str(error)[:30],
)
def test_a_transient_failure_is_retried_and_the_call_then_succeeds(clock: Clock, error: BaseException) -> None:
    store = FlakyStore({"read": [error]})
    store.objects[REF] = VersionedObject(b"hello", "v0", {})
    assert retrying(store, clock).read(REF) == b"hello"
    assert store.calls == [("read", REF), ("read", REF)]
    assert len(clock.sleeps) == 1


@pytest.mark.parametrize(
    "error",
    [
        client_error(403, "AccessDenied", "GetObject"),
        client_error(404, "NoSuchKey", "GetObject"),
        client_error(400, "InvalidArgument", "GetObject"),
        client_error(412, "PreconditionFailed", "GetObject"),
        ValueError("not a storage failure"),
        KeyError("missing"),
    ],
    ids=lambda error: type(error).__name__ + ":" + str(error)[:30],
)
def test_a_client_error_is_raised_at_once_without_a_retry(clock: Clock, error: Exception) -> None:
    store = FlakyStore({"read": [error]})
    store.objects[REF] = VersionedObject(b"hello", "v0", {})
    with pytest.raises(type(error)) as caught:
        retrying(store, clock).read(REF)
    assert caught.value is error  # the store's own error, not wrapped
    assert store.calls == [("read", REF)]
    assert clock.sleeps == []


# --- how often, how long ------------------------------------------------------------------------------------------


def test_a_lasting_failure_gives_up_after_the_policy_attempts_with_a_storage_error(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    last = client_error(500, "InternalError")
    store = FlakyStore({"read": [unavailable(), unavailable(), last, unavailable()]})
    store.objects[REF] = VersionedObject(b"hello", "v0", {})
    with caplog.at_level(logging.WARNING, logger="handler.storage.retry"), pytest.raises(StorageError) as caught:
        retrying(store, clock).read(REF)
    assert len(store.calls) == 3
    assert len(clock.sleeps) == 2
    assert all(0.5 <= wait <= 1.0 for wait in clock.sleeps)
    assert caught.value.__cause__ is last
    assert str(caught.value) == (
        f"reading {REF} failed 3 times (last: ClientError: {last}); the storage service is unavailable, so the "
        "event fails and the platform retries it"
    )
    warnings = [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert warnings[0].startswith(f"reading {REF} failed (attempt 1 of 3: ClientError: ")
    assert warnings[1].startswith(f"reading {REF} failed (attempt 2 of 3: ClientError: ")
    assert warnings[0].endswith(f"; retrying in {clock.sleeps[0]:.2f} s")
    assert all(record.name == "handler.storage.retry" for record in caplog.records)


def test_the_last_allowed_attempt_may_succeed(clock: Clock) -> None:
    store = FlakyStore({"read": [unavailable(), unavailable()]})
    store.objects[REF] = VersionedObject(b"hello", "v0", {})
    assert retrying(store, clock).read(REF) == b"hello"
    assert len(store.calls) == 3


def test_a_single_attempt_policy_never_retries(clock: Clock) -> None:
    store = FlakyStore({"read": [unavailable()]})
    store.objects[REF] = VersionedObject(b"hello", "v0", {})
    with pytest.raises(StorageError, match=r"failed 1 times"):
        retrying(store, clock, policy=RetryPolicy(attempts=1)).read(REF)
    assert len(store.calls) == 1
    assert clock.sleeps == []


def test_the_default_policy_waits_with_exponential_backoff(clock: Clock) -> None:
    store = FlakyStore({"read": [unavailable()] * 5})
    store.objects[REF] = VersionedObject(b"hello", "v0", {})
    with pytest.raises(StorageError, match=r"failed 4 times"):
        retrying(store, clock, policy=None).read(REF)
    assert len(store.calls) == 4
    for wait, ceiling in zip(clock.sleeps, (0.5, 1.0, 2.0), strict=True):
        assert ceiling / 2 <= wait <= ceiling


def test_without_a_deadline_every_attempt_is_made(clock: Clock) -> None:
    store = FlakyStore({"read": [unavailable(), unavailable()]})
    store.objects[REF] = VersionedObject(b"hello", "v0", {})
    assert retrying(store, clock, deadline_in=None).read(REF) == b"hello"
    assert len(clock.sleeps) == 2


# --- the deadline ---------------------------------------------------------------------------------------------


def test_no_retry_is_scheduled_past_the_invocations_deadline(clock: Clock) -> None:
    error = unavailable()
    store = FlakyStore({"write": [error]})
    with pytest.raises(StorageError) as caught:
        retrying(store, clock, deadline_in=0.3).write(REF, b"x", {})
    assert clock.sleeps == []  # every wait is at least 0.5 s: the retry would end past the deadline
    assert len(store.calls) == 1
    assert caught.value.__cause__ is error
    assert str(caught.value) == (
        f"writing {REF} failed (ClientError: {error}) and the invocation has 0.3 s left before its deadline, too "
        "little to retry; the event fails and the platform retries it"
    )


def test_a_deadline_already_past_says_zero_seconds_left(clock: Clock) -> None:
    store = FlakyStore({"write": [unavailable()]})
    with pytest.raises(StorageError, match=r"the invocation has 0\.0 s left before its deadline"):
        retrying(store, clock, deadline_in=-5.0).write(REF, b"x", {})


def test_retries_go_on_while_the_deadline_allows_them_and_stop_before_it(clock: Clock) -> None:
    store = FlakyStore({"read": [unavailable()] * 10})
    store.objects[REF] = VersionedObject(b"hello", "v0", {})
    policy = RetryPolicy(attempts=10, first_backoff_s=1.0, max_backoff_s=1.0)
    started = clock.now
    with pytest.raises(StorageError, match=r"too little to retry"):
        retrying(store, clock, deadline_in=3.2, policy=policy).read(REF)
    assert 2 <= len(clock.sleeps) <= 6
    assert clock.now - started < 3.2  # never slept past the deadline
    assert len(store.calls) == len(clock.sleeps) + 1


def test_a_wait_that_ends_exactly_at_the_deadline_is_not_started(clock: Clock) -> None:
    store = FlakyStore({"read": [unavailable()]})
    store.objects[REF] = VersionedObject(b"hello", "v0", {})
    exact = RetryPolicy(attempts=3, first_backoff_s=2.0, max_backoff_s=2.0)

    class NoJitter(RetryPolicy):
        def backoff(self, failed_attempts: int, draw: Callable[[], float] = lambda: 1.0) -> float:
            return super().backoff(failed_attempts, draw=lambda: 1.0)

    policy = NoJitter(exact.attempts, exact.first_backoff_s, exact.max_backoff_s)
    with pytest.raises(StorageError, match=r"2\.0 s left"):
        retrying(store, clock, deadline_in=2.0, policy=policy).read(REF)
    store = FlakyStore({"read": [unavailable()]})
    store.objects[REF] = VersionedObject(b"hello", "v0", {})
    assert retrying(store, clock, deadline_in=2.001, policy=policy).read(REF) == b"hello"
    assert clock.sleeps == [2.0]


# --- every call goes through the loop with its own arguments --------------------------------------------------


def test_each_operation_is_retried_and_passes_its_arguments(clock: Clock) -> None:
    store = FlakyStore(
        {
            name: [unavailable()]
            for name in ("size", "read", "write", "version", "read_versioned", "write_if", "list_keys")
        }
    )
    wrapped = retrying(store, clock)
    assert wrapped.scheme == "s3"
    assert wrapped.store is store
    wrapped.write(REF, b"abc", {"source": "x"})
    assert wrapped.size(REF) == 3
    assert wrapped.read(REF) == b"abc"
    version = wrapped.version(REF)
    assert version == store.version_of(REF) and version is not None
    found = wrapped.read_versioned(REF)
    assert found is not None and found.data == b"abc" and found.metadata == {"source": "x"}
    other = ObjectRef("s3", "inbox", "notes/b.txt")
    assert wrapped.write_if(other, b"new", {"k": "v"}, None, "application/json") is True
    assert store.content_types[other] == "application/json"
    assert wrapped.write_if(other, b"again", {}, None) is False  # it exists now: the condition fails, no retry
    assert wrapped.write_if(REF, b"abcd", {}, version) is True
    assert store.content_types[REF] == OUTPUT_CONTENT_TYPE
    assert wrapped.list_keys("inbox", "notes/") == ["notes/a.txt", "notes/b.txt"]
    assert wrapped.list_keys("inbox", "notes/b") == ["notes/b.txt"]
    by_operation: dict[str, list[tuple[object, ...]]] = {}
    for call in store.calls:
        by_operation.setdefault(str(call[0]), []).append(call[1:])
    assert by_operation["write"] == [(REF, b"abc", {"source": "x"})] * 2
    assert by_operation["write_if"][:2] == [(other, b"new", {"k": "v"}, None, "application/json")] * 2
    assert by_operation["write_if"][2] == (other, b"again", {}, None, OUTPUT_CONTENT_TYPE)
    assert by_operation["write_if"][3] == (REF, b"abcd", {}, version, OUTPUT_CONTENT_TYPE)
    assert by_operation["list_keys"][:2] == [("inbox", "notes/")] * 2
    assert len(clock.sleeps) == 7  # one retry per operation


@pytest.mark.parametrize(
    ("operation", "action", "target"),
    [
        (lambda s: s.size(REF), "reading the size of", str(REF)),
        (lambda s: s.read(REF), "reading", str(REF)),
        (lambda s: s.write(REF, b"x", {}), "writing", str(REF)),
        (lambda s: s.version(REF), "reading the version of", str(REF)),
        (lambda s: s.read_versioned(REF), "reading", str(REF)),
        (lambda s: s.write_if(REF, b"x", {}, None), "writing", str(REF)),
        (lambda s: s.list_keys("inbox", "parts/"), "listing", "s3://inbox/parts/*"),
    ],
)
def test_a_failure_names_the_action_and_the_object(
    clock: Clock, operation: Callable[[RetryingStore], object], action: str, target: str
) -> None:
    names = ("size", "read", "write", "version", "read_versioned", "write_if", "list_keys")
    store = FlakyStore({name: [unavailable()] * 3 for name in names})
    with pytest.raises(StorageError) as caught:
        operation(retrying(store, clock))
    assert str(caught.value).startswith(f"{action} {target} failed 3 times (last: ClientError: ")


def test_the_listing_target_uses_the_stores_scheme(clock: Clock) -> None:
    store = FlakyStore({"list_keys": [unavailable()]})
    store.scheme = "gs"
    with pytest.raises(StorageError, match=r"^listing gs://bucket/p/\* failed \(ClientError"):
        retrying(store, clock, deadline_in=0.1).list_keys("bucket", "p/")
