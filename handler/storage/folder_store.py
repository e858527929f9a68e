"""A local folder as an object store: what the local server keeps documents and glossaries in.

``FolderStore`` has the interface of ``handler.storage.object_store.S3Store`` and ``GcsStore`` (``ObjectStore``,
``VersionedStore`` and ``delete``), so the code that keeps state in a deployment's bucket keeps it in a folder on
a laptop. Object ``bucket/key`` is the file ``root/bucket/key``; its metadata and content type sit beside it in
``root/bucket/.meta/key.json``.

Writes are atomic: the bytes go to a temporary file in the same folder, then ``os.replace`` puts them in place, so a
reader sees the old object or the whole new one. Conditional writes (``write_if``) and deletes hold a lock (a
``threading.Lock`` for the threads of one process and ``fcntl.flock`` on ``root/.lock`` for the processes of one
server), so of two concurrent writers at most one succeeds. A version is a random token each write stores in the
metadata file.

Keys are checked: an absolute key, a ``..`` or ``.meta`` component, or a NUL is a ``ValueError``, so no key leads
out of the folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import threading
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from handler.storage.object_store import OUTPUT_CONTENT_TYPE, ObjectRef, VersionedObject

_META = ".meta"


class FolderStore:
    """Objects as files under ``root`` (created on first write)."""

    scheme = "file"

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()

    # ---- ObjectStore ----------------------------------------------------------------------------------------
    def transient(self, error: BaseException) -> bool:
        """A local disk's failures do not go away on their own: never retried."""
        return False

    def size(self, ref: ObjectRef) -> int:
        return self._path(ref).stat().st_size

    def read(self, ref: ObjectRef) -> bytes:
        return self._path(ref).read_bytes()

    def write(
        self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str], content_type: str = OUTPUT_CONTENT_TYPE
    ) -> None:
        with self._locked():
            self._write(ref, data, metadata, content_type)

    # ---- VersionedStore -------------------------------------------------------------------------------------
    def version(self, ref: ObjectRef) -> str | None:
        if not self._path(ref).is_file():
            return None
        return str(self._stored(ref).get("version", ""))

    def read_versioned(self, ref: ObjectRef) -> VersionedObject | None:
        with self._locked():
            version = self.version(ref)
            if version is None:
                return None
            return VersionedObject(self.read(ref), version, self.metadata(ref))

    def write_if(
        self,
        ref: ObjectRef,
        data: bytes,
        metadata: Mapping[str, str],
        version: str | None,
        content_type: str = OUTPUT_CONTENT_TYPE,
    ) -> bool:
        with self._locked():
            if self.version(ref) != version:
                return False
            self._write(ref, data, metadata, content_type)
            return True

    def list_keys(self, bucket: str, prefix: str) -> list[str]:
        folder = self._path(ObjectRef(self.scheme, bucket, "probe")).parent
        if not folder.is_dir():
            return []
        keys = []
        for path in folder.rglob("*"):
            relative = path.relative_to(folder)
            if path.is_file() and relative.parts[0] != _META and not path.name.startswith(".tmp-"):
                key = relative.as_posix()
                if key.startswith(prefix):
                    keys.append(key)
        return sorted(keys)

    # ---- beyond the protocols -------------------------------------------------------------------------------
    def metadata(self, ref: ObjectRef) -> dict[str, str]:
        return dict(self._stored(ref).get("metadata", {}))

    def content_type(self, ref: ObjectRef) -> str:
        return str(self._stored(ref).get("content_type", OUTPUT_CONTENT_TYPE))

    def delete(self, ref: ObjectRef, version: str | None = None) -> bool:
        """Remove the object (only while it is at ``version``, when given); False when it was not there."""
        with self._locked():
            current = self.version(ref)
            if current is None or (version is not None and current != version):
                return False
            self._path(ref).unlink()
            self._meta_path(ref).unlink(missing_ok=True)
            return True

    # ---- internals ------------------------------------------------------------------------------------------
    def _write(self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str], content_type: str) -> None:
        stored = {"metadata": dict(metadata), "content_type": content_type, "version": uuid.uuid4().hex}
        meta = json.dumps(stored).encode("utf-8")
        _replace_atomically(self._meta_path(ref), meta)
        _replace_atomically(self._path(ref), data)

    def _stored(self, ref: ObjectRef) -> dict[str, Any]:
        try:
            return dict(json.loads(self._meta_path(ref).read_text(encoding="utf-8")))
        except FileNotFoundError:
            return {}

    def _path(self, ref: ObjectRef) -> Path:
        return self.root / _checked_part(ref.bucket, "bucket") / _checked_part(ref.key, "key")

    def _meta_path(self, ref: ObjectRef) -> Path:
        return self.root / _checked_part(ref.bucket, "bucket") / _META / (_checked_part(ref.key, "key") + ".json")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with self._lock, open(self.root / ".lock", "a+b") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)


def _checked_part(name: str, what: str) -> str:
    path = PurePosixPath(name)
    if (
        not name
        or "\x00" in name
        or "\\" in name
        or path.is_absolute()
        or any(part in ("..", ".", _META, "") for part in name.split("/"))
        or path.name.startswith(".tmp-")
    ):
        raise ValueError(f"{what} {name!r} cannot name a file inside the store's folder")
    return name


def _replace_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
