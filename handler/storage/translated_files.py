"""Translated files kept for download by an unguessable name (LibreTranslate's ``/translate_file`` and
``/download_file/<name>``), framework-free.

``put(name, data)`` keeps a translation in the state location (``handler.storage.state``: the local folder, or the
output bucket under ``TRANSLATE_STATE_PREFIX``) as ``files/<token>`` with its record ``files/<token>.json``, and
returns the download name ``<token>-<name>``: the token is 128 random bits (``secrets.token_hex``), so the name is
the only credential a download needs, as LibreTranslate's own ``translatedFileUrl`` is. ``get(download_name)``
returns the file while it is kept; LibreTranslate lets the same URL be fetched again, so a download does not delete
it. Files are kept ``RETENTION_S``: locally the next ``put`` deletes older ones; in a bucket, its lifecycle rule on
the state prefix does (infra templates).
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote, unquote

from handler.storage.state import StateLocation

FILES_DIR = "files/"
RETENTION_S = 24 * 3600
TOKEN_CHARS = 32  # hexadecimal digits
_DOWNLOAD_NAME = re.compile(rf"(?P<token>[0-9a-f]{{{TOKEN_CHARS}}})-(?P<name>.+)")


def valid_download_name(download_name: str) -> bool:
    """Whether ``download_name`` has the shape ``put`` gives (``<32 hexadecimal digits>-<name>``)."""
    return _DOWNLOAD_NAME.fullmatch(download_name) is not None


@dataclass(frozen=True)
class KeptFile:
    data: bytes
    name: str


class TranslatedFiles:
    def __init__(self, state: Callable[[], StateLocation]) -> None:
        self._state = state

    def put(self, name: str, data: bytes) -> str:
        """Keep ``data`` (the translation of the file ``name``); returns its download name ``<token>-<name>``,
        the name percent-encoded for a URL path."""
        state = self._state()
        self._purge_expired(state)
        token = secrets.token_hex(TOKEN_CHARS // 2)
        state.store.write_if(state.ref(FILES_DIR + token), data, {}, None, "application/octet-stream")
        record = {"name": name, "created": time.time(), "bytes": len(data)}
        state.store.write_if(
            state.ref(f"{FILES_DIR}{token}.json"), json.dumps(record).encode("utf-8"), {}, None, "application/json"
        )
        return f"{token}-{quote(name, safe='')}"

    def get(self, download_name: str) -> KeptFile | None:
        """The kept file of ``download_name`` (as ``put`` returned it, percent-encoded or not); None if unknown."""
        match = _DOWNLOAD_NAME.fullmatch(download_name)
        if match is None:
            return None
        state = self._state()
        found = state.store.read_versioned(state.ref(f"{FILES_DIR}{match['token']}.json"))
        if found is None:
            return None
        record = json.loads(found.data)
        if unquote(match["name"]) != record["name"] or float(record["created"]) < time.time() - RETENTION_S:
            return None
        kept = state.store.read_versioned(state.ref(FILES_DIR + match["token"]))
        return None if kept is None else KeptFile(kept.data, str(record["name"]))

    def _purge_expired(self, state: StateLocation) -> None:
        if state.store.scheme != "file":
            return  # a bucket's lifecycle rule expires them
        horizon = time.time() - RETENTION_S
        for key in state.keys(FILES_DIR):
            if not key.endswith(".json"):
                continue
            found = state.store.read_versioned(state.ref(key))
            if found is not None and float(json.loads(found.data).get("created", 0)) < horizon:
                state.store.delete(state.ref(key[: -len(".json")]))
                state.store.delete(state.ref(key))
