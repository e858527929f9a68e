"""This server's own request shape, declared once (``handler.api.shapes``): ``POST /translate``'s body is one text or
several, the flags of what the answer carries and how it comes, and the options of ``handler.options.TranslateOptions``
(its own declaration, composed as the shape's ``OPTIONS``); no other field is taken. ``handler.api.router`` reads a
request into it and ``handler.api.openapi`` describes it as ``TranslateRequest``, from the same declaration.
"""

from __future__ import annotations

from handler.api.shapes import Flag, JsonText, JsonTexts, NoReserved, OneOf, Shape, param
from handler.options import TranslateOptions
from handler.text.markup import FORMATS

SPANS_FIELD = "spans"  # true: the response lists each translation's protected spans and glossary hits
# the formats handler.text.markup cuts with private-use characters: a text of those may not hold them (it refuses one)
MARKUP_FORMATS = tuple(name for name in FORMATS if name != "text")
EXACTLY_ONE = 'give exactly one of "text" (a string) or "texts" (a list of strings); found {found}'


class TranslateRequest(Shape):
    """``POST /translate``: ``text`` or ``texts``, exactly one; each flag true or false (absent: false); every other
    field one of the options."""

    RULES = (
        OneOf(("text", "texts"), EXACTLY_ONE),
        NoReserved("text", "format", MARKUP_FORMATS, None),
        NoReserved("texts", "format", MARKUP_FORMATS, None),
    )
    OPTIONS = TranslateOptions
    text: str | None = param(JsonText(description="one text: the answer's translation"))
    texts: list[str] | None = param(
        JsonTexts(description="several texts: the answer's translations, in order (an empty list: none)")
    )
    spans: bool = param(Flag(description="true: list each translation's protected spans"), False)
    stream: bool = param(
        Flag(
            description="true: the answer is streamed, application/x-ndjson (one TranslateStreamEvent a line) or, "
            "with Accept: text/event-stream, server-sent events: a segment event per sentence (a block of html and "
            "markdown) as soon as it is done, progress events, and a last done event carrying the whole answer, or "
            "an error event when the work fails after the answer began"
        ),
        False,
    )
    options: TranslateOptions
