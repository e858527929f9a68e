"""The body of a streamed ``POST /translate`` (``"stream": true``): the service's events as NDJSON lines or as
server-sent events, ending with the whole answer or an error.

Every event is one JSON object with a ``type``:

* ``segment``: a unit's English as soon as it and every unit before it are done (``handler.streaming``): ``index``
  (from 0), ``source``, ``source_span`` (``[start, end)`` in the text as given, null where not found as written),
  ``translation`` and, with ``"scores": true``, ``scores`` (its segments; their ``translation_span`` is within this
  event's ``translation``); with ``texts``, ``text`` says which text it belongs to;
* ``progress``: after every decoded batch, ``done`` and ``total`` source characters;
* ``done``, the last: everything the answer without ``stream`` carries (``translation`` or ``translations``,
  ``model``, ``bundle_hash``, ``elapsed_ms``, ``spans`` and ``scores`` when asked), plus ``segments`` (how many
  segment events came) and ``characters``;
* ``error``, the last when the work failed after the answer began (a deadline, a model error): the usual
  ``{"error": {"code", "message"}}`` with ``"type": "error"``; the message says how far it got.

``application/x-ndjson`` is one object a line; ``text/event-stream`` (when the ``Accept`` header weighs it above
NDJSON: ``wants_event_stream``) carries the same objects as ``event: <type>`` / ``data: <json>`` frames. Every chunk
is flushed by the adapter as it comes. What is refused (a bad option, a text over the limit, a missing key) is refused
before the answer begins, with its usual status, as without ``stream``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from handler.api.accept import preferred
from handler.api.messages import INTERNAL_ERROR_MESSAGE, status_for
from handler.api.scores import SCORES_FIELD, segments_json
from handler.errors import TranslatorError
from handler.service import StreamEvent, StreamFinished
from handler.streaming import StreamedUnit, StreamProgress

logger = logging.getLogger(__name__)

NDJSON_TYPE = "application/x-ndjson"
EVENT_STREAM_TYPE = "text/event-stream"
STREAM_FIELD = "stream"  # true: the answer is streamed
# what a stream can be sent as, the default first (as sent: UTF-8)
STREAM_TYPES = (f"{NDJSON_TYPE}; charset=utf-8", f"{EVENT_STREAM_TYPE}; charset=utf-8")


def wants_event_stream(accept: str) -> bool:
    """Whether an ``Accept`` header prefers server-sent events to NDJSON (``handler.api.accept.preferred``): the
    one of the higher ``q``, each weighed by the most specific range naming it (``text/*``, ``*/*`` included; ``q=0``
    is not acceptable); of equal weight, the one named more specifically, then NDJSON. So ``text/event-stream,
    application/x-ndjson;q=0.5`` gets events, ``text/event-stream, application/x-ndjson`` and ``*/*`` NDJSON.

    When it accepts neither (``Accept: text/html`` alone, or both at ``q=0``) the header is disregarded, as RFC 9110
    §12.5.1 allows instead of a 406, and the answer is NDJSON, as it always was: the body asked for a stream in so
    many words (``"stream": true``), the same request without it is answered JSON whatever ``Accept`` says (this API
    answers no 406 anywhere), and many HTTP libraries send an ``Accept`` their caller never chose
    (``application/json``): a 406 would fail a request that works today for a header nobody meant."""
    return preferred(accept, STREAM_TYPES) == STREAM_TYPES[1]


def stream_headers(event_stream: bool) -> dict[str, str]:
    media_type = EVENT_STREAM_TYPE if event_stream else NDJSON_TYPE
    return {
        "Content-Type": f"{media_type}; charset=utf-8",
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",  # a proxy in front (nginx) passes each chunk on at once
    }


@dataclass
class StreamOutcome:
    """How a stream ended, for its access line: complete, failed with an error code, or closed by the client."""

    units: int = 0
    error_code: str | None = None
    finished: bool = False


def encode_event(event: dict[str, Any], event_stream: bool) -> bytes:
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    if event_stream:
        return f"event: {event['type']}\ndata: {data}\n\n".encode()
    return (data + "\n").encode("utf-8")


def stream_body(
    events: Iterator[StreamEvent],
    *,
    many: bool,
    finished_json: Callable[[StreamFinished], dict[str, Any]],
    event_stream: bool,
    outcome: StreamOutcome,
) -> Iterator[bytes]:
    """The encoded events; a failure becomes a last ``error`` event. Closing this iterator closes ``events``, which
    stops the service's decoding before its next batch."""
    try:
        for event in events:
            if isinstance(event, StreamedUnit):
                outcome.units += 1
                yield encode_event(unit_json(event, many), event_stream)
            elif isinstance(event, StreamProgress):
                yield encode_event({"type": "progress", "done": event.done, "total": event.total}, event_stream)
            else:
                outcome.finished = True
                yield encode_event({"type": "done", **finished_json(event)}, event_stream)
    except TranslatorError as error:
        outcome.error_code = error.code
        if status_for(error) >= 500:
            logger.error(
                "a streamed translation failed after %d segments: %s: %s", outcome.units, type(error).__name__, error
            )
        yield encode_event(error_json(error.code, str(error)), event_stream)
    except Exception:
        outcome.error_code = "internal_error"
        logger.exception("a streamed translation failed with an unexpected error after %d segments", outcome.units)
        yield encode_event(error_json("internal_error", INTERNAL_ERROR_MESSAGE), event_stream)
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


def unit_json(unit: StreamedUnit, many: bool) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "segment", "index": unit.index}
    if many:
        event["text"] = unit.text
    event.update(
        source=unit.source,
        source_span=list(unit.source_span) if unit.source_span else None,
        translation=unit.translation,
    )
    if unit.segments:
        event[SCORES_FIELD] = segments_json(unit.segments)
    return event


def error_json(code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"code": code, "message": message}}
