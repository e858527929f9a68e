"""HTML (``.html``, ``.htm``, ``.xhtml``): text nodes and inline text translated, markup kept
(``handler.text.markup``); translated whole, never cut."""

from __future__ import annotations

from handler.formats.base import TextFormat


class Html(TextFormat):
    name = "html"
    suffixes = (".html", ".htm", ".xhtml")
    content_type = "text/html; charset=utf-8"


HTML = Html()
