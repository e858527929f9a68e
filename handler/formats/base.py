"""What a file format provides: one small interface, so the upload pipeline, the fan-out, the document APIs and the
command line never branch on a format.

A format (one module of ``handler.formats`` each: ``plain_text``, ``html``, ``markdown``, ``subtitles``,
``word_format``, ``powerpoint``, ``spreadsheet``, ``xliff``, ``gettext``, ``opendocument``, ``epub``) declares

* its **name** (the command line's ``--format``, the fan-out manifest's ``file_format``), **suffixes** and the
  **content type** its translations are served and stored with;
* how its bytes are **read** (``read``: decoded text, or a binary file parsed; ``InvalidRequestError`` saying why
  it cannot be) into a ``SourceFile``, whose ``text`` is what the fan-out cuts and ``characters`` what is billed;
* how a read file is **translated** (``translate``: the translated file's bytes);
* where its text may be **cut** into parts (``cut``; None: never, the file is translated whole), how one part is
  translated (``translate_part``) and how the translated parts are **joined** back into a file (``join``).

The size limit is checked once, before a file is read (``handler.formats.read_file``); a format never sees a
file over it.
A new format is one new module here that provides a ``FileFormat``, plus its entry in ``handler.formats.FORMATS``.
Text formats share ``TextFormat``; the structured ones (a file of units, one a line: Word, PowerPoint, Excel, XLIFF,
gettext, OpenDocument) share ``UnitsFormat`` and only say how a file is parsed into a ``UnitsFile``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from handler.errors import InvalidRequestError
from handler.formats.encodings import decode_text
from handler.options import TranslateOptions
from handler.text.parts import Part, plan_parts_at

if TYPE_CHECKING:  # the service is only handed through: formats import the options, not the runtime
    from handler.service import TranslationService

Progress = Callable[[int, int], None]


class UnsupportedFormatError(InvalidRequestError):
    """A file whose suffix names no format the document APIs translate (HTTP 400)."""

    code = "invalid_request"


@dataclass(frozen=True)
class FileTranslator:
    """How a file's text reaches the service: the service with one file's options, deadline and progress."""

    service: TranslationService
    options: TranslateOptions | None = None
    deadline: float | None = None
    progress: Progress | None = None

    def text(self, text: str, fmt: str) -> str:
        """``text`` translated whole as ``fmt`` (``text``, ``html``, ``markdown``: markup kept), its line-ending
        style (LF or CRLF) kept."""
        crlf = "\r\n" in text
        options = replace(self.options, format=fmt) if self.options is not None else TranslateOptions(format=fmt)
        translation = self.service.translate_document(
            text.replace("\r\n", "\n"), options, deadline=self.deadline, progress=self.progress
        )
        return translation.replace("\n", "\r\n") if crlf else translation

    def lines(self, text: str) -> str:
        """A text of one unit a line (what the structured formats, subtitles and Word, hand over) translated as
        plain text without scores, into as many lines."""
        plain = replace(self.options or TranslateOptions(), format="text", scores=False)
        return self.service.translate_document(text, plain, deadline=self.deadline, progress=self.progress)


@dataclass(frozen=True)
class SourceFile:
    """A file read in its format: its name (for errors), bytes, the text its parts are cut from (a Word file's
    units, one a line), the source encoding's description, the characters it bills, and what the format parsed
    (``parsed``: a structured file's ``UnitsFile``; None for text formats)."""

    name: str
    data: bytes
    text: str
    encoding: str
    characters: int
    parsed: object = None


class FileFormat(Protocol):
    @property
    def name(self) -> str:
        """The format's name: ``--format``'s value, the fan-out manifest's ``file_format``."""
        ...

    @property
    def suffixes(self) -> tuple[str, ...]:
        """The lower-case suffixes of its files, the one it is stored under first."""
        ...

    @property
    def content_type(self) -> str:
        """What a translation in this format is stored and served as."""
        ...

    @property
    def service_format(self) -> str | None:
        """The service's format option (``TranslateOptions.format``: text, html, markdown) a file of this format
        is translated whole as; None for a format that hands the service its own lines (subtitles, Word), which
        therefore has no scores and no streamed output."""
        ...

    @property
    def binary(self) -> bool:
        """Whether its translations are bytes no terminal should be shown (a ``.docx``)."""
        ...

    @property
    def joins_from_source(self) -> bool:
        """Whether ``join`` reads the source file again (the fan-out then records and checks its sha256)."""
        ...

    def read(self, data: bytes, name: str, encoding: str | None = None) -> SourceFile:
        """The file read: decoded (as ``encoding`` when named, else detected: ``handler.formats.encodings``) or
        parsed; ``InvalidRequestError`` saying why it cannot be."""
        ...

    def translate(self, file: SourceFile, translator: FileTranslator) -> bytes:
        """The translated file's bytes."""
        ...

    def cut(self, text: str, max_chars: int, name: str) -> tuple[str, list[Part]] | None:
        """``(lead, parts)`` of at most ``max_chars`` characters where the format allows (see
        ``handler.text.parts``), or None: files of this format are never cut."""
        ...

    def translate_part(self, text: str, index: int, translator: FileTranslator) -> str:
        """Part ``index``'s translation, exactly as the whole file's translation translates that text."""
        ...

    def join(self, translation: str, source: Callable[[], bytes], name: str) -> bytes:
        """The translated file from its parts' translations joined in order (``source``: the source file's bytes,
        read only by a format that ``joins_from_source``)."""
        ...


class TextFormat:
    """What every text format shares: decoded on reading, encoded as UTF-8, joined by concatenation."""

    name = "text"
    suffixes: tuple[str, ...] = ()
    content_type = "text/plain; charset=utf-8"
    binary = False

    @property
    def service_format(self) -> str | None:
        return self.name

    joins_from_source = False

    def read(self, data: bytes, name: str, encoding: str | None = None) -> SourceFile:
        text, described = decode_text(data, name, encoding)
        return SourceFile(name, data, text, described, len(text))

    def translate(self, file: SourceFile, translator: FileTranslator) -> bytes:
        return self.translate_text(file.text, translator, file.name).encode("utf-8")

    def translate_text(self, text: str, translator: FileTranslator, name: str) -> str:
        """A decoded file's translation (the command line and the fan-out hand text)."""
        return translator.text(text, self.name)

    def cut(self, text: str, max_chars: int, name: str) -> tuple[str, list[Part]] | None:
        return None

    def translate_part(self, text: str, index: int, translator: FileTranslator) -> str:
        return self.translate_text(text, translator, f"part {index}")

    def join(self, translation: str, source: Callable[[], bytes], name: str) -> bytes:
        return translation.encode("utf-8")


@runtime_checkable
class UnitsFile(Protocol):
    """A structured file read for translation (a ``.docx``, ``.pptx``, ``.po``...): its units' lines, one unit a
    line, and ``rebuild`` to write the file with each unit's translation in its place (once per read)."""

    @property
    def text(self) -> str:
        """The units' lines joined by line feeds (what the fan-out cuts)."""
        ...

    @property
    def characters(self) -> int:
        """The characters it bills: its units' lines."""
        ...

    def rebuild(self, translations: Sequence[str]) -> bytes:
        """The translated file from one translation per unit, in order; ``TranslatorError`` when their number
        differs."""
        ...


class UnitLines:
    """A ``UnitsFile``'s ``text`` and ``characters``, from its ``lines`` (one unit a line)."""

    @property
    def lines(self) -> list[str]:
        raise NotImplementedError

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    @property
    def characters(self) -> int:
        return sum(len(line) for line in self.lines)


class UnitsFormat:
    """What every structured format shares (Word, PowerPoint, Excel, OpenDocument, XLIFF, gettext): the file is
    parsed, never decoded (``parse``: it says its own encoding); its units go to the service one a line
    (``FileTranslator.lines``: plain text, no scores, so no streamed output); the fan-out cuts only between lines,
    so never inside a unit, and joins the translated lines by parsing the source again."""

    name = ""
    suffixes: tuple[str, ...] = ()
    content_type = "application/octet-stream"
    encoding_description = ""  # the source-encoding description of its files ("Word .docx (binary)")
    binary = True
    service_format = None
    joins_from_source = True

    def parse(self, data: bytes, name: str) -> UnitsFile:
        """``data`` read for translation; ``InvalidRequestError`` saying why it cannot be."""
        raise NotImplementedError

    def read(self, data: bytes, name: str, encoding: str | None = None) -> SourceFile:
        """A structured file says its own encoding: ``encoding`` is not needed and not used."""
        parsed = self.parse(data, name)
        return SourceFile(name, data, parsed.text, self.encoding_description, parsed.characters, parsed)

    def translate(self, file: SourceFile, translator: FileTranslator) -> bytes:
        units = file.parsed if isinstance(file.parsed, UnitsFile) else self.parse(file.data, file.name)
        text = units.text
        return units.rebuild(translator.lines(text).split("\n") if text else [])

    def cut(self, text: str, max_chars: int, name: str) -> tuple[str, list[Part]] | None:
        return plan_parts_at(text, max_chars, [(found.start(), found.end()) for found in re.finditer("\n", text)])

    def translate_part(self, text: str, index: int, translator: FileTranslator) -> str:
        return translator.lines(text)

    def join(self, translation: str, source: Callable[[], bytes], name: str) -> bytes:
        return self.parse(source(), name).rebuild(translation.split("\n") if translation else [])
