"""Markdown (``.md``, ``.markdown``): paragraphs and inline text translated, code, links' targets and markup kept
(``handler.text.markup``); translated whole, never cut."""

from __future__ import annotations

from handler.formats.base import TextFormat


class Markdown(TextFormat):
    name = "markdown"
    suffixes = (".md", ".markdown")
    content_type = "text/markdown; charset=utf-8"


MARKDOWN = Markdown()
