"""The file formats the runtime translates, one module each, all on one interface (``handler.formats.base``).

``FORMATS`` is the one place a format is listed: the upload pipeline (``handler.storage.files``), the fan-out
(``handler.storage.bulk``), DeepL's document API and LibreTranslate's ``/translate_file``, and the command line all
take a file's format from here (``format_for`` by suffix, ``accepted_format`` where a suffix outside ``FILE_SUFFIXES``
is refused, ``format_named`` for ``--format``). A new format is one new module providing a ``FileFormat``, plus its
entry in ``FORMATS``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from handler.config import ENV_MAX_FILE_BYTES
from handler.errors import InvalidRequestError, RequestTooLargeError
from handler.formats.base import FileFormat, FileTranslator, SourceFile, UnsupportedFormatError
from handler.formats.epub import EPUB
from handler.formats.gettext import GETTEXT
from handler.formats.html import HTML
from handler.formats.markdown import MARKDOWN
from handler.formats.opendocument import ODT
from handler.formats.plain_text import PLAIN_TEXT
from handler.formats.powerpoint import POWERPOINT
from handler.formats.spreadsheet import XLSX
from handler.formats.subtitles import SRT, VTT
from handler.formats.word_format import WORD
from handler.formats.xliff import XLIFF
from handler.options import TranslateOptions

if TYPE_CHECKING:  # the service is only handed through: formats import the options, not the runtime
    from handler.service import TranslationService

FORMATS: tuple[FileFormat, ...] = (
    PLAIN_TEXT,
    HTML,
    MARKDOWN,
    SRT,
    VTT,
    WORD,
    POWERPOINT,
    XLSX,
    XLIFF,
    GETTEXT,
    ODT,
    EPUB,
)

_BY_SUFFIX: dict[str, FileFormat] = {suffix: fmt for fmt in FORMATS for suffix in fmt.suffixes}
FORMATS_BY_NAME: Mapping[str, FileFormat] = {fmt.name: fmt for fmt in FORMATS}

# the suffixes a document API accepts (lower-case), in the order its messages list them
FILE_SUFFIXES: tuple[str, ...] = tuple(_BY_SUFFIX)
FORMAT_NAMES: tuple[str, ...] = tuple(FORMATS_BY_NAME)


def suffix_of(name: str) -> str:
    """A file name's lower-case suffix (``"report.DOCX"`` -> ``".docx"``), or ``""`` without one."""
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 or (dot == 0 and len(name) > 1) else ""


def format_for(name: str) -> FileFormat:
    """A file's format by its suffix; plain text for any suffix no format names (an upload event's ``.log``)."""
    return _BY_SUFFIX.get(suffix_of(name), PLAIN_TEXT)


def accepted_format(name: str) -> FileFormat:
    """A document API's file's format by its suffix; ``UnsupportedFormatError`` listing ``FILE_SUFFIXES``."""
    suffix = suffix_of(name)
    found = _BY_SUFFIX.get(suffix)
    if found is None:
        shown = f"{suffix!r}" if suffix else "no suffix"
        raise UnsupportedFormatError(
            f"{name!r} has {shown}; this server translates documents with the suffixes {', '.join(FILE_SUFFIXES)}"
        )
    return found


def format_named(name: str) -> FileFormat:
    """The format called ``name`` (``--format``); ``InvalidRequestError`` listing the names."""
    found = FORMATS_BY_NAME.get(name)
    if found is None:
        raise InvalidRequestError(f"unknown file format {name!r}; use one of {', '.join(FORMAT_NAMES)}")
    return found


def check_size(size: int, limit: int, name: str, *, written: str = "") -> None:
    """``RequestTooLargeError`` (HTTP 413) when a file of ``size`` bytes is over ``limit``
    (``TRANSLATE_MAX_FILE_BYTES``): the one size check, before a file is read (``written``: what the message adds,
    e.g. that nothing was written)."""
    if size > limit:
        raise RequestTooLargeError(f"{name} is {size:,} bytes; the limit is {limit:,} ({ENV_MAX_FILE_BYTES}){written}")


def read_file(
    name: str, size: int, read: Callable[[], bytes], limit: int, *, written: str = "", encoding: str | None = None
) -> tuple[FileFormat, SourceFile]:
    """The file ``name``'s format (``format_for``) and the file read in it: its ``size`` checked against ``limit``
    before ``read()`` fetches it, and the bytes read again (an object replaced meanwhile), decoded as ``encoding``
    when named (else detected); ``InvalidRequestError`` when its format cannot read it."""
    check_size(size, limit, name, written=written)
    data = read()
    check_size(len(data), limit, name, written=written)
    fmt = format_for(name)
    return fmt, fmt.read(data, name, encoding)


def content_type_for(name: str) -> str:
    """What a translation of the file ``name`` is stored and served as: its format's content type."""
    return format_for(name).content_type


@dataclass(frozen=True)
class TranslatedFile:
    """A whole file's translation: its bytes, and what was read (the source encoding, the characters billed)."""

    data: bytes
    source: SourceFile
    content_type: str


def translate_file(
    data: bytes,
    name: str,
    service: TranslationService,
    options: TranslateOptions | None = None,
    *,
    deadline: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    file_format: FileFormat | None = None,
    encoding: str | None = None,
) -> TranslatedFile:
    """A file's bytes translated whole in its format (``file_format``, else ``format_for(name)``), a text file
    decoded as ``encoding`` when named (else detected); ``name`` appears in errors. The one bytes-in, bytes-out
    entry for every format; the caller has checked the size."""
    fmt = file_format or format_for(name)
    source = fmt.read(data, name, encoding)
    translated = fmt.translate(source, FileTranslator(service, options, deadline, progress))
    return TranslatedFile(translated, source, fmt.content_type)


__all__ = [
    "FILE_SUFFIXES",
    "FORMATS",
    "FORMATS_BY_NAME",
    "FORMAT_NAMES",
    "FileFormat",
    "FileTranslator",
    "SourceFile",
    "TranslatedFile",
    "UnsupportedFormatError",
    "accepted_format",
    "check_size",
    "content_type_for",
    "format_for",
    "format_named",
    "read_file",
    "suffix_of",
    "translate_file",
]
