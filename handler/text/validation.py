"""Checks every text passes before anything else reads it, whichever surface it came through."""

from __future__ import annotations

from handler.errors import InvalidRequestError


def require_unicode(text: str, name: str = "the text") -> None:
    """``InvalidRequestError`` when ``text`` holds a lone UTF-16 surrogate (JSON can carry one: "\\ud800")."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidRequestError(
            f"{name} holds an unpaired UTF-16 surrogate at character {error.start:,}; send valid Unicode text"
        ) from None
