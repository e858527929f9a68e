"""The flags of a ``POST /translate`` request beside its texts and its options (``handler.options``): what the answer
carries and how it comes. Declared once, for the router that reads them and the OpenAPI document that describes them.
"""

from __future__ import annotations

from handler.api.streamed import STREAM_FIELD

SPANS_FIELD = "spans"  # true: the response lists each translation's protected spans and glossary hits

# each flag (true or false; absent: false) and what it does
FLAGS = {
    SPANS_FIELD: "true: list each translation's protected spans",
    STREAM_FIELD: "true: the answer is streamed, application/x-ndjson (one TranslateStreamEvent a line) or, with "
    "Accept: text/event-stream, server-sent events: a segment event per sentence (a block of html and markdown) as "
    "soon as it is done, progress events, and a last done event carrying the whole answer, or an error event when "
    "the work fails after the answer began",
}
