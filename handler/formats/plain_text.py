"""Plain text (``.txt``, and any file whose suffix names no other format): decoded, translated paragraph by
paragraph with its line-ending style kept; the fan-out cuts it at blank lines (``handler.text.parts.plan_parts``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from handler.formats.base import FileTranslator, Progress, TextFormat
from handler.options import TranslateOptions
from handler.text.parts import Part, plan_parts

if TYPE_CHECKING:  # the service is only handed through: formats import the options, not the runtime
    from handler.service import TranslationService


class PlainText(TextFormat):
    name = "text"
    suffixes = (".txt",)
    content_type = "text/plain; charset=utf-8"

    def cut(self, text: str, max_chars: int, name: str) -> tuple[str, list[Part]] | None:
        return plan_parts(text, max_chars)

    def translate_part(self, text: str, index: int, translator: FileTranslator) -> str:
        return translator.text(text, self.name) if text.strip() else text


PLAIN_TEXT = PlainText()


def translate_text(
    service: TranslationService,
    text: str,
    options: TranslateOptions | None = None,
    *,
    deadline: float | None = None,
    progress: Progress | None = None,
) -> str:
    """A whole text translated as a file is (in ``options.format``, plain text by default), its paragraphs and its
    line-ending style (LF or CRLF) kept: what a ``.txt`` upload's translation holds."""
    fmt = options.format if options is not None else PLAIN_TEXT.name
    return FileTranslator(service, options, deadline, progress).text(text, fmt)
