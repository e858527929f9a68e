"""The three object stores keep one contract: a local folder (``FolderStore``), S3 (the moto server) and Cloud
Storage (the emulator): whole writes, versions, conditional writes, listings and deletes."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from handler.storage.folder_store import FolderStore
from handler.storage.object_store import GcsStore, ObjectRef, S3Store


@pytest.fixture(params=["folder", "s3", "gcs"])
def store_and_bucket(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Any, str]:
    bucket = f"store-{uuid.uuid4().hex[:12]}"
    if request.param == "folder":
        return FolderStore(tmp_path / "state"), bucket
    if request.param == "s3":
        client = request.getfixturevalue("s3_client")
        client.create_bucket(Bucket=bucket)
        return S3Store(client), bucket
    client = request.getfixturevalue("gcs_client")
    client.create_bucket(bucket)
    return GcsStore(client), bucket


def test_write_read_list_and_delete(store_and_bucket: tuple[Any, str]) -> None:
    store, bucket = store_and_bucket
    first = ObjectRef(store.scheme, bucket, "docs/a/source.txt")
    second = ObjectRef(store.scheme, bucket, "docs/b/result.txt")
    store.write(first, "你好".encode(), {"origin": "test"})
    store.write(second, b"hello", {})
    assert store.read(first) == "你好".encode()
    assert store.size(first) == len("你好".encode())
    assert store.read_versioned(first).metadata == {"origin": "test"}
    assert store.list_keys(bucket, "docs/") == ["docs/a/source.txt", "docs/b/result.txt"]
    assert store.list_keys(bucket, "docs/b") == ["docs/b/result.txt"]
    assert store.delete(first) is True
    assert store.delete(first) is False
    assert store.version(first) is None
    assert store.read_versioned(first) is None
    assert store.list_keys(bucket, "docs/") == ["docs/b/result.txt"]


def test_conditional_writes(store_and_bucket: tuple[Any, str]) -> None:
    store, bucket = store_and_bucket
    if store.scheme == "gs":
        pytest.skip("gcp-storage-emulator ignores ifGenerationMatch (real Cloud Storage honours it)")
    ref = ObjectRef(store.scheme, bucket, "manifest.json")
    assert store.write_if(ref, b"1", {}, None) is True
    assert store.write_if(ref, b"2", {}, None) is False  # exists already
    version = store.version(ref)
    assert version is not None
    assert store.write_if(ref, b"3", {}, version) is True
    assert store.write_if(ref, b"4", {}, version) is False  # the version moved on
    assert store.read(ref) == b"3"


def test_folder_store_lets_one_of_many_concurrent_creators_win(tmp_path: Path) -> None:
    store = FolderStore(tmp_path)
    ref = ObjectRef("file", "bucket", "once.json")
    results: list[bool] = []
    threads = [threading.Thread(target=lambda: results.append(store.write_if(ref, b"x", {}, None))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) == 1


@pytest.mark.parametrize("key", ["../escape", "/etc/passwd", "a/../../b", ".meta/x", "a//b", "", "a\x00b"])
def test_folder_store_refuses_keys_that_leave_its_folder(tmp_path: Path, key: str) -> None:
    store = FolderStore(tmp_path / "state")
    with pytest.raises(ValueError, match="cannot name a file"):
        store.write(ObjectRef("file", "bucket", key), b"x", {})
    assert not (tmp_path / "escape").exists()


def test_folder_store_keeps_the_content_type(tmp_path: Path) -> None:
    store = FolderStore(tmp_path)
    ref = ObjectRef("file", "bucket", "r.docx")
    store.write(ref, b"PK", {}, content_type="application/vnd.openxmlformats-officedocument.wordprocessingml.document")
    assert store.content_type(ref).endswith("wordprocessingml.document")
    assert [p.name for p in (tmp_path / "bucket").iterdir() if p.name.startswith(".tmp-")] == []


def test_state_lives_in_the_output_bucket_when_there_is_one_else_in_the_local_folder(tmp_path: Path) -> None:
    from handler.config import RuntimeConfig
    from handler.storage.state import bucket_state, local_state

    local = local_state(RuntimeConfig(state_dir=tmp_path / "state"))
    local.store.write(local.ref("glossaries/g1.json"), b"{}", {})
    assert (tmp_path / "state" / "state" / "_state" / "glossaries" / "g1.json").read_bytes() == b"{}"
    assert local.keys("glossaries/") == ["glossaries/g1.json"]
    assert bucket_state(RuntimeConfig(), lambda: FolderStore(tmp_path)) is None
    cloud = bucket_state(RuntimeConfig(output_bucket="out", state_prefix="s/"), lambda: FolderStore(tmp_path / "b"))
    assert cloud is not None and str(cloud.ref("documents/x")) == "file://out/s/documents/x"
