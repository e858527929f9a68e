"""How often one object event's path enters each storage and format module, traced with ``sys.setprofile``.

The path an uploaded file takes must read from top to bottom: the dispatcher decides once what the object is, the
fan-out or the upload pipeline does its work over the format's interface, and neither comes back. A module is
*entered* when control comes into it from another traced module: a call into one of its functions from outside
it, or a return into it from a function of another traced module ("back to bulk"); calls inside a module are its
own business. The object stores (``object_store``, ``folder_store``, ``retry``) are I/O, called as often as there are
objects to read and write, and are not counted.
"""

from __future__ import annotations

import random
import sys
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import pytest

from handler.adapters.gcp import GcpAdapter
from handler.coldstart import Startup
from handler.storage.object_store import GcsStore
from tests.events import GCS_OBJECT_FINALIZED, load_event
from tests.fixture_corpus import fixture_pairs

HANDLER = Path(__file__).resolve().parents[2] / "handler"
TRACED = ("storage", "formats")
NOT_COUNTED = {"handler.storage.object_store", "handler.storage.folder_store", "handler.storage.retry"}
MAX_ENTRIES = 3
PART_CHARS = 1_000

T = TypeVar("T")


def _module_of(path: str) -> str | None:
    try:
        relative = Path(path).resolve().relative_to(HANDLER)
    except ValueError:
        return None
    if relative.parts[0] not in TRACED:
        return None
    parts = ["handler", *relative.with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def module_entries(call: Callable[[], T]) -> tuple[T, Counter[str]]:
    """``call()``'s result and, per traced module, how many calls entered it from outside it."""
    entries: Counter[str] = Counter()
    cache: dict[str, str | None] = {}

    def module(frame: FrameType | None) -> str | None:
        if frame is None:
            return None
        path = frame.f_code.co_filename
        if path not in cache:
            cache[path] = _module_of(path)
        return cache[path]

    def counted(frame: FrameType | None) -> str | None:
        name = module(frame)
        return None if name in NOT_COUNTED else name

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event not in ("call", "return") or frame.f_code.co_name.startswith("<"):
            return  # comprehensions and lambdas are the enclosing function's own
        inner, outer = counted(frame), counted(frame.f_back)
        if inner == outer:
            return
        if event == "call" and inner is not None:
            entries[inner] += 1
        elif event == "return" and inner is not None and outer is not None:
            entries[outer] += 1  # back from another traced module

    sys.setprofile(profile)
    try:
        result = call()
    finally:
        sys.setprofile(None)
    return result, entries


def _book(characters: int) -> str:
    sentences = [pair.zh for pair in fixture_pairs()]
    paragraphs, index = [], 0
    while sum(len(p) + 2 for p in paragraphs) < characters:
        paragraphs.append("".join(sentences[(index + n) % len(sentences)] for n in range(4)))
        index += 4
    return "\n\n".join(paragraphs) + "\n"


def _deliver(adapter: GcpAdapter, bucket: str, name: str, part: bool) -> Any:
    event = load_event(GCS_OBJECT_FINALIZED)
    event["data"].update(bucket=bucket, name=name, id=f"{bucket}/{name}/1")
    handle = adapter.handle_part_event if part else adapter.handle_storage_event
    return handle(event["type"], event["data"])


@pytest.fixture
def fanned_out(gcs_client: Any, startup: Startup) -> tuple[GcpAdapter, str, Counter[str], list[str]]:
    """A Cloud Storage upload planned into parts, through the GCP adapter: (adapter, bucket, the upload event's
    entries, the part objects' names)."""
    bucket = f"trace-{uuid.uuid4().hex[:10]}"
    gcs_client.create_bucket(bucket)
    config = startup.config.with_overrides(part_chars=PART_CHARS)
    adapter = GcpAdapter(replace(startup, config=config), GcsStore(gcs_client))
    gcs_client.bucket(bucket).blob("long.txt").upload_from_string(_book(3_000).encode("utf-8"))
    planned, entries = module_entries(lambda: _deliver(adapter, bucket, "long.txt", part=False))
    assert planned["status"] == "planned", planned
    parts = [blob.name for blob in gcs_client.list_blobs(bucket, prefix=config.work_prefix) if "/parts/" in blob.name]
    assert len(parts) == planned["parts"] >= 3
    return adapter, bucket, entries, parts


def test_a_part_event_enters_no_storage_or_format_module_more_than_three_times(
    fanned_out: tuple[GcpAdapter, str, Counter[str], list[str]], gcs_client: Any
) -> None:
    adapter, bucket, planning, parts = fanned_out
    random.Random(5).shuffle(parts)
    traced = [module_entries(lambda name=name: _deliver(adapter, bucket, name, part=True)) for name in parts]
    results = [result for result, _ in traced]
    assert [r.get("assembly") for r in results].count("assembled") == 1, results
    first, last = traced[0][1], traced[-1][1]  # a part alone; the part that completes the set and assembles
    small = "short.txt"  # an upload translated in one invocation: shown, not held to the part events' measure
    gcs_client.bucket(bucket).blob(small).upload_from_string("你好。".encode())
    whole = module_entries(lambda: _deliver(adapter, bucket, small, part=False))[1]
    print(f"\nupload (plans): {dict(planning)}\npart: {dict(first)}\nlast part (assembles): {dict(last)}")
    print(f"upload (translated whole): {dict(whole)}")
    for name, counts in (("the upload", planning), ("a part", first), ("the last part", last)):
        over = {module: count for module, count in counts.items() if count > MAX_ENTRIES}
        assert not over, f"{name}'s event enters {over} more than {MAX_ENTRIES} times"
