"""Owners: whose stored glossaries and documents a caller sees.

On a deployment without API keys (``TRANSLATE_API_KEYS`` unset) everything stored belongs to one owner,
``SHARED_OWNER``: every caller sees everything. With keys configured a stored thing belongs to the key that created
it: its owner is ``owner_of(key)``, the first 128 bits of the key's SHA-256 in hexadecimal, which names the key
without revealing it. A caller whose owner differs is answered exactly as for something never created (404), so a
key cannot even learn that another key's glossary or document exists.
"""

from __future__ import annotations

import hashlib

SHARED_OWNER = "shared"
OWNER_HEX_DIGITS = 32


def owner_of(key: str | None, keys_required: bool) -> str:
    """The owner of what a caller presenting ``key`` stores and may read: ``SHARED_OWNER`` without keys, else the
    key's digest (``key`` is then one of the configured keys, checked before)."""
    if not keys_required:
        return SHARED_OWNER
    return hashlib.sha256((key or "").encode("utf-8", "surrogatepass")).hexdigest()[:OWNER_HEX_DIGITS]
