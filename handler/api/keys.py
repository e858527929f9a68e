"""API keys: one scheme for this server's own API and the drop-in APIs, off unless keys are configured.

Keys come from ``TRANSLATE_API_KEYS`` (comma-separated) and ``TRANSLATE_API_KEYS_FILE`` (one key per line; blank
lines and ``#`` comments ignored); both may be set, and every key of either is accepted. An entry may follow its
key with a name and limits (``KEY;name=NAME;chars=N/PERIOD;rate=N/PERIOD``: ``handler.config.parse_key_entry``;
``handler.api.quotas`` counts and enforces them): only the key before the first ``;`` is what a client presents.
With no key configured every request passes (the deployment relies on the platform's own authentication: IAM on the
Function URL, an identity token on Cloud Functions).

A request presents at most one key; the first of these that is present is the one checked, the rest ignored:

1. ``X-API-Key: KEY``: first, because on Google Cloud ``Authorization`` may carry the platform's identity token;
2. ``Authorization: Bearer KEY`` or ``Authorization: DeepL-Auth-Key KEY`` (DeepL's clients; any other scheme,
   such as AWS SigV4's, is not a key and is skipped);
3. the drop-in API's own parameter: LibreTranslate's ``api_key``, DeepL's legacy ``auth_key``.

The check hashes the presented key and every configured key with SHA-256 and compares the digests with
``hmac.compare_digest`` against *all* configured keys (no early exit), so neither the time taken nor a length
difference tells an attacker how close a guess was or which key matched. Keys are never logged or echoed.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

API_KEY_HEADER = "x-api-key"
BEARER_SCHEMES = ("bearer", "deepl-auth-key")  # lower-case; Authorization schemes whose credential is a key
REALM = "zh-en-translate"


def presented_key(headers: Mapping[str, str], parameter: str | None = None) -> str | None:
    """The key a request presents (lower-case header names), by the precedence in this module's docstring."""
    header = headers.get(API_KEY_HEADER, "").strip()
    if header:
        return header
    scheme, _, credential = headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() in BEARER_SCHEMES and credential.strip():
        return credential.strip()
    return parameter or None


@dataclass(frozen=True)
class ApiKeys:
    """The configured keys, kept only as SHA-256 digests."""

    digests: tuple[bytes, ...] = ()

    @classmethod
    def of(cls, entries: tuple[str, ...]) -> ApiKeys:
        """The keys of ``TRANSLATE_API_KEYS``' entries: each before its first ``;`` (its name and limits aside, as
        ``handler.config.parse_key_entry`` reads them; the configuration has checked them)."""
        return cls(tuple(_digest(entry.split(";", 1)[0]) for entry in entries))

    @property
    def required(self) -> bool:
        return bool(self.digests)

    def accepts(self, key: str | None) -> bool:
        """True without configured keys; otherwise whether ``key`` is one of them (constant time over all)."""
        if not self.digests:
            return True
        presented = _digest(key or "")
        matched = False
        for digest in self.digests:
            matched |= hmac.compare_digest(presented, digest)
        return matched and bool(key)

    def www_authenticate(self) -> str:
        """The ``WWW-Authenticate`` value of a 401: the schemes a client may use."""
        return f'Bearer realm="{REALM}", ApiKey realm="{REALM}", header="X-API-Key"'


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
