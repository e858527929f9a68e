"""The two-pane web page: the template with this deployment's limits injected, and its security headers (a
Content-Security-Policy that allows exactly the page's own inline script, by hash)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

from handler.coldstart import Startup
from handler.config import ENV_MAX_CHARS, MAX_BEAM_SIZE
from handler.errors import ConfigurationError

WEB_PAGE = Path(__file__).resolve().parent / "web" / "index.html"
PAGE_CONFIG_PLACEHOLDER = "__TRANSLATOR_PAGE_CONFIG__"
# on the page, besides its own Content-Security-Policy (script hashes) and SECURITY_HEADERS
PAGE_SECURITY_HEADERS: dict[str, str] = {
    "Cache-Control": "no-cache",
    "Permissions-Policy": "accelerometer=(), camera=(), geolocation=(), gyroscope=(), magnetometer=(), "
    "microphone=(), payment=(), usb=()",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


# --- the web page -----------------------------------------------------------------------------------------
def render_page(startup: Startup, key_required: bool) -> bytes:
    """The page with the server's limits injected, so its counter warns before the server refuses, and the served
    bundle's licence notice when it is a non-commercial demo."""
    config = startup.config
    page_config = {
        "maxChars": config.max_chars,
        "maxTexts": config.max_texts,
        "defaultBeamSize": config.beam_size,
        "maxBeamSize": MAX_BEAM_SIZE,
        "maxCharsVariable": ENV_MAX_CHARS,
        "available": startup.service is not None,
        "keyRequired": key_required,
        "error": None if startup.error is None else str(startup.error),
        # the served bundle's demo notice (a non-commercial licence), shown in the header; None for other bundles
        "licenceNotice": startup.licence.notice,
    }
    # safe inside <script type="application/json">: no "<" can close the element
    encoded = json.dumps(page_config, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
    template = WEB_PAGE.read_text(encoding="utf-8")
    if PAGE_CONFIG_PLACEHOLDER not in template:
        raise ConfigurationError(f"{WEB_PAGE} lacks the {PAGE_CONFIG_PLACEHOLDER} placeholder")
    return template.replace(PAGE_CONFIG_PLACEHOLDER, encoded).encode("utf-8")


_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.DOTALL)


def page_security_policy(page: bytes) -> str:
    """Allow exactly the page's own inline script (by hash), its inline style and requests to its own origin."""
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(page)
    )
    return (
        f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; connect-src 'self'; "
        "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
