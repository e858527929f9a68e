"""One upload's pipeline, for any object store (S3, Cloud Storage), over the formats' one interface
(``handler.formats``).

Steps, each of which can refuse with a clear error before anything is written:

1. plan the output (``plan_output``): ``output bucket`` (the input bucket unless ``TRANSLATE_OUTPUT_BUCKET`` is set)
   and ``output prefix + input key``: deterministic, so the same event delivered twice gives the same object. A
   configuration that would trigger itself again is refused (``SelfTriggerError``), and so is a key that could
   lead the output out of the output prefix wherever the keys are read as paths (``UnsafeKeyError``: a ``.`` or
   ``..`` segment between slash or backslash separators, also once percent-decoded, a leading separator, a control
   character). The key is used exactly as the event names it, never decoded again;
2. read (``read_upload``): the size checked against ``TRANSLATE_MAX_FILE_BYTES`` before downloading (and the bytes
   read, should the object have been replaced meanwhile), then read in the format its suffix names
   (``handler.formats.read_file``: decoded, as the object's metadata ``encoding`` names when it does, or a binary
   file parsed);
3. translate (``translate_upload``) under the invocation's deadline (``DeadlineExceededError`` before the platform
   would kill us), by the format;
4. write the whole result in one request, with the format's content type and metadata naming the source object and
   the model bundle (``output_metadata``, the fan-out's assembly writes the same).

A file longer than one invocation should take is cut into parts by the fan-out instead (``handler.storage.bulk``);
``handler.storage.dispatch`` decides which path an object event takes.
"""

from __future__ import annotations

import logging
import re
import time
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable
from urllib.parse import quote, unquote

from handler import metrics
from handler.config import ENV_OUTPUT_BUCKET, ENV_OUTPUT_PREFIX, RuntimeConfig
from handler.errors import ConfigurationError, DeadlineExceededError, InvalidRequestError, TranslatorError
from handler.formats import FileFormat, FileTranslator, SourceFile, check_size, read_file
from handler.service import TranslateOptions, TranslationService
from handler.storage.object_store import ObjectRef, ObjectStore, VersionedObject, VersionedStore

logger = logging.getLogger(__name__)

# the metadata written on every output object (S3 shows them as x-amz-meta-*); values are ASCII, keys
# percent-encoded (RFC 3986) because S3 metadata cannot carry other characters
META_SOURCE_BUCKET = "source-bucket"
META_SOURCE_KEY = "source-key"
META_SOURCE_ENCODING = "source-encoding"
META_MODEL = "model"
META_BUNDLE_HASH = "bundle-hash"
# an upload's own metadata naming its encoding (S3: x-amz-meta-encoding: big5; Cloud Storage: encoding=big5): a
# text file is then decoded as told instead of detected (handler.formats.encodings)
META_ENCODING = "encoding"

Outcome = dict[str, str | int]  # what an object event did, for the logs and the platform (JSON)


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


@dataclass(frozen=True)
class Upload:
    """An uploaded object read for translation: where it is, where its translation goes, its format and the file
    as the format read it."""

    source: ObjectRef
    output: ObjectRef
    format: FileFormat
    file: SourceFile


@dataclass(frozen=True)
class FileTranslation:
    """What one upload's translation wrote."""

    source: ObjectRef
    output: ObjectRef
    encoding: str
    characters: int
    bytes_written: int
    seconds: float

    def summary(self) -> Outcome:
        """The outcome for the logs and the platform (JSON)."""
        return {
            "source": str(self.source),
            "status": "translated",
            "output": str(self.output),
            "encoding": self.encoding,
            "characters": self.characters,
        }


def read_upload(
    store: ObjectStore, source: ObjectRef, config: RuntimeConfig, *, deadline: float | None = None
) -> Upload:
    """``source`` read in its format, its output planned: every refusal before anything is written (the output's
    planning, the deadline, the size before and after downloading, a file its format cannot read)."""
    output = plan_output(source, config)
    _check_deadline(deadline, source, "before reading it")
    written = "; nothing was written"
    check_size(store.size(source), config.max_file_bytes, str(source), written=written)
    data, metadata = _read_object(store, source)
    metrics.add("bytes_read", len(data))
    encoding = metadata.get(META_ENCODING, "").strip() or None
    fmt, file = read_file(
        str(source), len(data), lambda: data, config.max_file_bytes, written=written, encoding=encoding
    )
    return Upload(source, output, fmt, file)


@runtime_checkable
class _MetadataReader(Protocol):
    def read_versioned(self, ref: ObjectRef) -> VersionedObject | None: ...


def _read_object(store: ObjectStore, source: ObjectRef) -> tuple[bytes, Mapping[str, str]]:
    """The object's bytes and, from a store that gives them in the same request (S3, Cloud Storage, a folder),
    its metadata (``META_ENCODING``)."""
    if isinstance(store, _MetadataReader):
        found = store.read_versioned(source)
        if found is None:
            raise FileNotFoundError(f"{source} does not exist")
        return found.data, found.metadata
    return store.read(source), {}


def output_metadata(
    source: ObjectRef, encoding: str, info: Mapping[str, object], extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The metadata of a translation written for ``source`` (``info``: the service's, naming the model bundle)."""
    return {
        META_SOURCE_BUCKET: quote(source.bucket, safe=""),
        META_SOURCE_KEY: quote(source.key, safe="/"),
        META_SOURCE_ENCODING: encoding,
        META_MODEL: quote(str(info.get("model") or ""), safe=""),
        META_BUNDLE_HASH: str(info.get("bundle_hash") or ""),
        **(extra or {}),
    }


def write_joined(
    store: VersionedStore,
    fmt: FileFormat,
    translation: str,
    read_source: Callable[[], bytes],
    source: ObjectRef,
    output: ObjectRef,
    described: tuple[str, Mapping[str, object], Mapping[str, str]],
    if_version: str | None,
) -> int | None:
    """The fan-out's parts' ``translation`` joined by ``fmt`` into the translated file and written once, if the
    output's version is still ``if_version``, with ``output_metadata(source, *described)``: the bytes written, or
    None when the output's version is not ``if_version``."""
    payload = fmt.join(translation, read_source, str(source))
    metadata = output_metadata(source, *described)
    return len(payload) if store.write_if(output, payload, metadata, if_version, fmt.content_type) else None


def translate_upload(
    store: ObjectStore,
    upload: Upload,
    service: TranslationService,
    *,
    deadline: float | None = None,
    options: TranslateOptions | None = None,
) -> FileTranslation:
    """The upload translated whole by its format and written in one request; nothing is written unless the whole
    result is ready. ``deadline`` is a ``time.monotonic()`` value (the platform's deadline less a safety margin)."""
    began = time.monotonic()
    payload = upload.format.translate(upload.file, FileTranslator(service, options, deadline))
    metadata = output_metadata(upload.source, upload.file.encoding, service.info())
    store.write(upload.output, payload, metadata, upload.format.content_type)
    metrics.add("characters", upload.file.characters)
    metrics.add("bytes_written", len(payload))
    result = FileTranslation(
        upload.source,
        upload.output,
        upload.file.encoding,
        upload.file.characters,
        len(payload),
        time.monotonic() - began,
    )
    logger.info(
        "translated %s (%s, %s characters) to %s (%s bytes) in %.1f s",
        upload.source,
        upload.file.encoding,
        f"{upload.file.characters:,}",
        upload.output,
        f"{len(payload):,}",
        result.seconds,
    )
    return result


def translate_whole(
    store: ObjectStore,
    upload: Upload,
    service: TranslationService,
    *,
    deadline: float | None = None,
    options: Mapping[str, object] | None = None,
) -> Outcome:
    """``translate_upload`` with the upload's options as JSON values (``TranslateOptions.from_stored``; None: the
    defaults), summarised for the logs and the platform."""
    chosen = TranslateOptions.from_stored(options) if options else None
    return translate_upload(store, upload, service, deadline=deadline, options=chosen).summary()


def translate_object(
    store: ObjectStore,
    source: ObjectRef,
    service: TranslationService,
    config: RuntimeConfig,
    *,
    deadline: float | None = None,
    options: TranslateOptions | None = None,
) -> FileTranslation:
    """``source`` read and translated whole into its planned output object (never cut into parts)."""
    upload = read_upload(store, source, config, deadline=deadline)
    return translate_upload(store, upload, service, deadline=deadline, options=options)


def _check_deadline(deadline: float | None, source: ObjectRef, when: str) -> None:
    if deadline is not None and time.monotonic() >= deadline:
        raise DeadlineExceededError(f"no time left to translate {source} ({when}); nothing was written")
