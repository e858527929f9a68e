"""Where the function keeps state that must outlive a cold start: uploaded documents and stored glossaries.

A deployment with an output bucket (``TRANSLATE_OUTPUT_BUCKET``: AWS and GCP) keeps it in that bucket under
``TRANSLATE_STATE_PREFIX`` (default ``_state/``), so every instance of the function sees the same state; the local
server keeps it in the folder ``TRANSLATE_STATE_DIR`` (default ``.translate-state`` in the working directory)
through ``handler.storage.folder_store.FolderStore``. Either way the callers see one ``StateLocation``: a store with
the ``VersionedStore`` interface and ``delete``, a bucket and a key prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from handler.config import RuntimeConfig
from handler.storage.object_store import ObjectRef, VersionedStore

LOCAL_BUCKET = "state"  # the bucket name a FolderStore's state lives under (a sub-folder of TRANSLATE_STATE_DIR)


class StateStore(VersionedStore, Protocol):
    def delete(self, ref: ObjectRef, version: str | None = None) -> bool: ...


@dataclass(frozen=True)
class StateLocation:
    store: StateStore
    bucket: str
    prefix: str  # ends in "/"

    def ref(self, key: str) -> ObjectRef:
        """The object ``key`` (relative to this location's prefix)."""
        return ObjectRef(self.store.scheme, self.bucket, self.prefix + key)

    def keys(self, under: str = "") -> list[str]:
        """The keys under ``under``, relative to this location's prefix."""
        return [key[len(self.prefix) :] for key in self.store.list_keys(self.bucket, self.prefix + under)]


def local_state(config: RuntimeConfig) -> StateLocation:
    """The local server's state: the folder ``config.state_dir``."""
    from handler.storage.folder_store import FolderStore

    return StateLocation(FolderStore(config.state_dir), LOCAL_BUCKET, config.state_prefix)


def bucket_state(config: RuntimeConfig, make_store: Callable[[], StateStore]) -> StateLocation | None:
    """A deployment's state in its output bucket, or None when no output bucket is configured."""
    if not config.output_bucket:
        return None
    return StateLocation(make_store(), config.output_bucket, config.state_prefix)
