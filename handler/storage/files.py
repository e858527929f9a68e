"""Translate one uploaded text file into an output object, for any object store (S3, Cloud Storage).

Steps, each of which can refuse with a clear error before anything is written:

1. plan the output: ``output bucket`` (the input bucket unless ``TRANSLATE_OUTPUT_BUCKET`` is set) and
   ``output prefix + input key``: deterministic, so the same event delivered twice gives the same object. A
   configuration that would trigger itself again is refused (``SelfTriggerError``), and so is a key that could
   lead the output out of the output prefix wherever the keys are read as paths (``UnsafeKeyError``: a ``.`` or
   ``..`` segment between slash or backslash separators, also once percent-decoded, a leading separator, a control
   character). The key is used exactly as the event names it, never decoded again;
2. check the size against ``TRANSLATE_MAX_FILE_BYTES`` before downloading;
3. read and decode (UTF-8 with or without BOM, UTF-16/32 with BOM, GB18030/GBK; binary files refused);
4. translate paragraph by paragraph under the invocation's deadline (``DeadlineExceededError`` before the
   platform would kill us); ``.html``/``.htm`` files as HTML and ``.md``/``.markdown`` files as Markdown
   (``format_for``: text nodes and inline text translated, markup kept), ``.srt``/``.vtt`` files as subtitles
   (``handler.formats.subtitles``: cue text translated, numbers, timings, settings and headers kept), ``.docx``
   files as Word documents (``handler.formats.word``: binary, not decoded; the text of paragraphs, tables,
   headers, footers, notes and comments translated, formatting runs mapped back, everything else kept), anything
   else as plain text (``translate_file_bytes`` is the one bytes-in, bytes-out entry point for every format);
5. write the whole result (UTF-8 text, or the ``.docx``) in one request, with the format's content type
   (``content_type_for``) and metadata naming the source object and the model bundle.
"""

from __future__ import annotations

import codecs
import logging
import re
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import quote, unquote

from handler.config import ENV_MAX_FILE_BYTES, ENV_OUTPUT_BUCKET, ENV_OUTPUT_PREFIX, RuntimeConfig
from handler.errors import (
    ConfigurationError,
    DeadlineExceededError,
    InvalidRequestError,
    RequestTooLargeError,
    TranslatorError,
)
from handler.service import TranslateOptions, TranslationService
from handler.storage.object_store import OUTPUT_CONTENT_TYPE, ObjectRef, ObjectStore
from handler.formats.subtitles import SUBTITLE_FORMATS, translate_subtitles

logger = logging.getLogger(__name__)

# the metadata written on every output object (S3 shows them as x-amz-meta-*); values are ASCII, keys
# percent-encoded (RFC 3986) because S3 metadata cannot carry other characters
META_SOURCE_BUCKET = "source-bucket"
META_SOURCE_KEY = "source-key"
META_SOURCE_ENCODING = "source-encoding"
META_MODEL = "model"
META_BUNDLE_HASH = "bundle-hash"

# the one suffix -> format table (lower-cased), for single files and the fan-out alike: markup is translated whole
MARKUP_SUFFIXES = {".html": "html", ".htm": "html", ".xhtml": "html", ".md": "markdown", ".markdown": "markdown"}
SUBTITLE_SUFFIXES = {".srt": "srt", ".vtt": "vtt"}  # translated by handler.formats.subtitles
DOCUMENT_SUFFIXES = {".docx": "docx"}  # binary; translated by handler.formats.word
WORD_FORMAT = "docx"
DOCX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
WORD_ENCODING = "Word .docx (binary)"  # the source-encoding description of a .docx
# the output's content type by format; text formats not named here are text/plain (OUTPUT_CONTENT_TYPE)
CONTENT_TYPES = {
    WORD_FORMAT: DOCX_CONTENT_TYPE,
    "html": "text/html; charset=utf-8",
    "markdown": "text/markdown; charset=utf-8",
    "srt": "application/x-subrip; charset=utf-8",
    "vtt": "text/vtt; charset=utf-8",
}

# byte-order marks, longest first (the UTF-32 LE mark begins with the UTF-16 LE one)
_BOMS: tuple[tuple[bytes, str, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32LE with BOM"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32BE with BOM"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8 with BOM"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16LE with BOM"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16BE with BOM"),
)
_ALLOWED_CONTROLS = frozenset("\t\n\r\f\v")
_MAX_CONTROL_SHARE = 0.01  # more control characters than this (or any NUL) means "binary"
SUPPORTED_ENCODINGS = "UTF-8 (with or without BOM), UTF-16 or UTF-32 with a byte-order mark, or GB18030/GBK"


class UploadRefusedError(TranslatorError):
    """An upload this function never translates, however often its event is delivered: logged and reported as
    refused, not raised, since a retry cannot succeed."""

    code = "upload_refused"


class SelfTriggerError(UploadRefusedError, ConfigurationError):
    """Writing the output would trigger this function again (or overwrite the input)."""

    code = "self_trigger"


class UnsafeKeyError(UploadRefusedError, InvalidRequestError):
    """The object key, read as a path, could climb out of the output prefix (``..``, absolute, encoded)."""

    code = "unsafe_key"


_SEPARATORS = re.compile(r"[/\\]")


def check_key(source: ObjectRef) -> None:
    """``UnsafeKeyError`` unless ``source.key`` stays below any prefix put in front of it, read as a path."""
    key = source.key
    problem = ""
    if not key:
        problem = "it is empty"
    elif any(unicodedata.category(ch) == "Cc" for ch in key):
        problem = "it holds a control character"
    else:
        forms = [key]
        while (decoded := unquote(forms[-1])) != forms[-1] and len(forms) < 4:  # %2F, %252F, ...
            forms.append(decoded)
        for form in forms:
            segments = _SEPARATORS.split(form)
            if segments[0] == "" or re.match(r"^[A-Za-z]:$", segments[0]):
                problem = "it starts with a path separator or a drive" + (" once decoded" if form != key else "")
            elif any(segment in (".", "..") for segment in segments):
                problem = "it has a '.' or '..' path segment" + (" once percent-decoded" if form != key else "")
            if problem:
                break
    if problem:
        raise UnsafeKeyError(
            f"refusing to translate {source}: {problem}, so its output key could lead outside the output prefix "
            f"wherever keys are read as paths (sync tools, file systems); rename the object"
        )


@dataclass(frozen=True)
class FileTranslation:
    source: ObjectRef
    output: ObjectRef
    encoding: str
    characters: int
    bytes_written: int
    seconds: float


def plan_output(source: ObjectRef, config: RuntimeConfig) -> ObjectRef:
    """Where the translation of ``source`` goes; ``SelfTriggerError`` when that would trigger us again,
    ``UnsafeKeyError`` when the key could lead it out of the output prefix."""
    check_key(source)
    bucket = config.output_bucket or source.bucket
    prefix = config.output_prefix
    if bucket == source.bucket:
        if not prefix:
            raise SelfTriggerError(
                f"refusing to translate {source}: {ENV_OUTPUT_PREFIX} is empty and the output bucket is the "
                f"input bucket, so the output would overwrite the input and trigger this function again. "
                f"Set {ENV_OUTPUT_PREFIX} (e.g. 'translated/') or {ENV_OUTPUT_BUCKET} to another bucket"
            )
        if source.key.startswith(prefix):
            raise SelfTriggerError(
                f"refusing to translate {source}: it is under the output prefix {prefix!r} of the same bucket, "
                f"so it is a translation this function wrote, and translating it would trigger the function "
                f"again. Limit the trigger to keys outside {prefix!r} or set {ENV_OUTPUT_BUCKET} to another bucket"
            )
    output = ObjectRef(source.scheme, bucket, prefix + source.key)
    if output == source:  # unreachable after the checks above; the one rule that must never break
        raise SelfTriggerError(f"refusing to write onto the input object {source}")
    if not output.key.startswith(prefix):  # nor this one
        raise UnsafeKeyError(f"refusing to write {output}: it is not under the output prefix {prefix!r}")
    return output


def decode_text(data: bytes, name: str = "the file") -> tuple[str, str]:
    """Decode ``data`` to text; returns ``(text, encoding description)``. ``InvalidRequestError`` if not text."""
    for bom, codec, description in _BOMS:
        if data.startswith(bom):
            try:
                return _checked(data[len(bom) :].decode(codec), name), description
            except UnicodeDecodeError as error:
                raise InvalidRequestError(
                    f"{name} starts with a {description.split(' ')[0]} byte-order mark but is not valid "
                    f"{description.split(' ')[0]} (byte {error.start:,}); save it again as UTF-8"
                ) from None
    if b"\x00" in data:
        raise InvalidRequestError(
            f"{name} looks binary (it holds NUL bytes) or is UTF-16 without a byte-order mark; "
            f"send text in {SUPPORTED_ENCODINGS}"
        )
    try:
        return _checked(data.decode("utf-8"), name), "UTF-8"
    except UnicodeDecodeError as utf8_error:
        try:
            return _checked(data.decode("gb18030"), name), "GB18030"
        except UnicodeDecodeError:
            raise InvalidRequestError(
                f"{name} is not text in a supported encoding: not UTF-8 (invalid byte 0x{data[utf8_error.start]:02x} "
                f"at offset {utf8_error.start:,}) and not GB18030/GBK either; send {SUPPORTED_ENCODINGS}"
            ) from None


def _checked(text: str, name: str) -> str:
    controls = sum(1 for ch in text if ch not in _ALLOWED_CONTROLS and unicodedata.category(ch) == "Cc")
    if "\x00" in text or (text and controls / len(text) > _MAX_CONTROL_SHARE):
        raise InvalidRequestError(
            f"{name} looks binary ({controls:,} control characters in {len(text):,}); send plain text in "
            f"{SUPPORTED_ENCODINGS}"
        )
    return text


def translate_text(
    service: TranslationService,
    text: str,
    options: TranslateOptions | None = None,
    *,
    deadline: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> str:
    """Translate a whole document, keeping its paragraphs and its line-ending style (LF or CRLF)."""
    crlf = "\r\n" in text
    translation = service.translate_document(text.replace("\r\n", "\n"), options, deadline=deadline, progress=progress)
    return translation.replace("\n", "\r\n") if crlf else translation


def format_for(name: str) -> str:
    """A file's format by its suffix: ``html`` or ``markdown`` (the ``format`` option), ``srt`` or ``vtt``
    (subtitles, ``is_subtitles``), ``docx`` (a Word document, ``is_binary``), else ``text``."""
    dot = name.rfind(".")
    if dot < 0:
        return "text"
    suffix = name[dot:].lower()
    return DOCUMENT_SUFFIXES.get(suffix) or SUBTITLE_SUFFIXES.get(suffix) or MARKUP_SUFFIXES.get(suffix, "text")


def is_subtitles(fmt: str) -> bool:
    return fmt in SUBTITLE_FORMATS


def is_binary(fmt: str) -> bool:
    """A format whose files are not text (never decoded): ``docx``."""
    return fmt == WORD_FORMAT


def content_type_for(fmt: str) -> str:
    """The content type of a translation in ``fmt`` (``format_for``)."""
    return CONTENT_TYPES.get(fmt, OUTPUT_CONTENT_TYPE)


def plain_translator(
    service: TranslationService,
    options: TranslateOptions | None,
    *,
    deadline: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Callable[[str], str]:
    """The document translator the structured formats (subtitles, Word) hand their one-unit-a-line text to: the
    service's ``translate_document`` as plain text (no scores), with the file's options, deadline and progress."""
    plain = replace(options or TranslateOptions(), format="text", scores=False)

    def translate_document(document: str) -> str:
        return service.translate_document(document, plain, deadline=deadline, progress=progress)

    return translate_document


def translate_file_bytes(
    service: TranslationService,
    data: bytes,
    name: str,
    options: TranslateOptions | None = None,
    *,
    deadline: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    fmt: str | None = None,
) -> tuple[bytes, str]:
    """A file's bytes translated in its format: ``(translated bytes, source-encoding description)``.

    The format is ``fmt`` or ``format_for(name)``: a ``.docx`` goes to ``handler.formats.word`` as bytes
    (the result is a ``.docx``; ``InvalidRequestError`` when the bytes are not one); every text format is decoded
    (``decode_text``), translated (``translate_file_text``) and encoded as UTF-8. ``name`` appears in errors.
    """
    payload, encoding, _characters = _translate_bytes(
        service, data, name, options, deadline=deadline, progress=progress, fmt=fmt
    )
    return payload, encoding


def _translate_bytes(
    service: TranslationService,
    data: bytes,
    name: str,
    options: TranslateOptions | None,
    *,
    deadline: float | None,
    progress: Callable[[int, int], None] | None,
    fmt: str | None,
) -> tuple[bytes, str, int]:
    """``translate_file_bytes`` plus the number of characters translated (for the logs)."""
    fmt = fmt or format_for(name)
    if is_binary(fmt):
        from handler.formats.word import read_word_document  # lxml and python-docx: on the first .docx

        document = read_word_document(data, name=name)
        translate = plain_translator(service, options, deadline=deadline, progress=progress)
        return document.translate(translate), WORD_ENCODING, document.characters
    text, encoding = decode_text(data, name)
    translation = translate_file_text(service, text, fmt, options, name=name, deadline=deadline, progress=progress)
    return translation.encode("utf-8"), encoding, len(text)


def translate_file_text(
    service: TranslationService,
    text: str,
    fmt: str,
    options: TranslateOptions | None = None,
    *,
    name: str = "the file",
    fragment: bool = False,
    deadline: float | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> str:
    """A decoded file's translation in its format (``format_for``): subtitles by ``handler.formats.subtitles``
    (``fragment``: a WebVTT part after the first), the rest by ``translate_text`` with ``fmt`` as the format."""
    if is_binary(fmt):
        raise InvalidRequestError(f"{name} is a binary {fmt} file: translate its bytes (translate_file_bytes)")
    if is_subtitles(fmt):
        # one sentence a line, translated as plain text (handler.formats.subtitles keeps the structure)
        translate_document = plain_translator(service, options, deadline=deadline, progress=progress)
        return translate_subtitles(translate_document, text, fmt, fragment=fragment, name=name)
    options = replace(options, format=fmt) if options is not None else TranslateOptions(format=fmt)
    return translate_text(service, text, options, deadline=deadline, progress=progress)


# the suffixes translate_file_bytes translates (lower-case): what the document APIs accept
FILE_SUFFIXES: tuple[str, ...] = (".txt", *MARKUP_SUFFIXES, *SUBTITLE_SUFFIXES, *DOCUMENT_SUFFIXES)


def translate_object(
    store: ObjectStore,
    source: ObjectRef,
    service: TranslationService,
    config: RuntimeConfig,
    *,
    deadline: float | None = None,
    options: TranslateOptions | None = None,
) -> FileTranslation:
    """Translate ``source`` into its planned output object; writes nothing unless the whole result is ready.

    ``deadline`` is a ``time.monotonic()`` value (the platform's deadline less a safety margin).
    """
    began = time.monotonic()
    output = plan_output(source, config)
    _check_deadline(deadline, source, "before reading it")
    size = store.size(source)
    if size > config.max_file_bytes:
        raise RequestTooLargeError(
            f"{source} is {size:,} bytes; the limit is {config.max_file_bytes:,} ({ENV_MAX_FILE_BYTES}); "
            f"nothing was written"
        )
    data = store.read(source)
    if len(data) > config.max_file_bytes:  # replaced between the size check and the read
        raise RequestTooLargeError(
            f"{source} is {len(data):,} bytes; the limit is {config.max_file_bytes:,} ({ENV_MAX_FILE_BYTES}); "
            f"nothing was written"
        )
    fmt = format_for(source.key)
    payload, encoding, characters = _translate_bytes(
        service, data, str(source), options, deadline=deadline, progress=None, fmt=fmt
    )
    info = service.info()
    metadata = {
        META_SOURCE_BUCKET: quote(source.bucket, safe=""),
        META_SOURCE_KEY: quote(source.key, safe="/"),
        META_SOURCE_ENCODING: encoding,
        META_MODEL: quote(str(info.get("model", "")), safe=""),
        META_BUNDLE_HASH: str(info.get("bundle_hash", "")),
    }
    store.write(output, payload, metadata, content_type_for(fmt))
    result = FileTranslation(source, output, encoding, characters, len(payload), time.monotonic() - began)
    logger.info(
        "translated %s (%s, %s characters) to %s (%s bytes) in %.1f s",
        source,
        encoding,
        f"{characters:,}",
        output,
        f"{len(payload):,}",
        result.seconds,
    )
    return result


def _check_deadline(deadline: float | None, source: ObjectRef, when: str) -> None:
    if deadline is not None and time.monotonic() >= deadline:
        raise DeadlineExceededError(f"no time left to translate {source} ({when}); nothing was written")


def handle_upload(
    store: ObjectStore,
    source: ObjectRef,
    service: TranslationService,
    config: RuntimeConfig,
    *,
    deadline: float | None = None,
    options: TranslateOptions | None = None,
) -> dict[str, str]:
    """What every file adapter does with one "object created" notification; returns a summary for the logs.

    A refused upload (a self-trigger, an unsafe key) is logged as an error and reported, not raised: raising
    would make the platform retry an event that can never succeed. Every other failure is logged and raised, so
    the platform records the invocation as failed (and retries or dead-letters it as configured); nothing has
    been written then.
    """
    try:
        result = translate_object(store, source, service, config, deadline=deadline, options=options)
    except UploadRefusedError as error:
        logger.error("%s", error)
        return {"source": str(source), "status": "refused", "reason": str(error)}
    except Exception as error:
        logger.error("could not translate %s, nothing was written: %s: %s", source, type(error).__name__, error)
        raise
    return {
        "source": str(source),
        "status": "translated",
        "output": str(result.output),
        "encoding": result.encoding,
        "characters": str(result.characters),
    }
