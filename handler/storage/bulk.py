"""Bulk translation: a plain-text, subtitle or Word file longer than one invocation should take fans out across
invocations.

One invocation's time is limited (Lambda 900 s at most, Cloud Functions 540 s for events), and one translates about
1,000 characters/s with the default model. A ``.txt``, ``.srt`` or ``.vtt`` upload of more than
``TRANSLATE_PART_CHARS`` characters is therefore translated in parts, by as many concurrent invocations as the
platform runs (subtitles are cut only between cues, and never inside a sentence that runs over cues: a part is then
longer than ``TRANSLATE_PART_CHARS`` rather than cut inside one; the manifest names the format). A ``.docx`` whose
paragraphs to translate hold more than ``TRANSLATE_PART_CHARS`` characters is planned from its units' text
(``handler.formats.word``: one paragraph a line, formatting as markup characters), cut only between lines,
so never inside a paragraph; its assembly reads the source ``.docx`` again (its sha256 must be the one planned) and
rebuilds it from the translated lines:

1. **plan** (the upload's event): the text is cut (``handler.text.parts``) at paragraph boundaries (then line
   breaks, then sentence ends, only where a paragraph alone is too long) into parts of at most
   ``TRANSLATE_PART_CHARS`` characters. The manifest ``{work}{job}/manifest.json`` is created first (a
   conditional create: of two deliveries of the event, one plans), naming the source, the output, the output's
   version at planning time, and every part with its sha256, character count and the separator that follows it.
   Then each part is written as ``{work}{job}/parts/NNNNN.txt`` (again create-only). ``{work}`` is
   ``TRANSLATE_WORK_PREFIX`` in the output bucket; the job id hashes the source object, its content, the model
   bundle and the part size, so a re-delivered upload event finds its manifest and only writes parts that are
   missing.
2. **translate a part** (each part object's "created" event, fanned out by the platform: S3 event notifications
   on the work prefix, Cloud Storage finalize events): the part is checked against the manifest's hash,
   translated within the invocation's deadline, and its translation created as ``{work}{job}/done/NNNNN.en``.
   A failed invocation writes nothing and is retried by the platform; a duplicate delivery finds the result and
   translates nothing. The manifest's ``done`` list is then updated with a compare-and-swap loop (progress: the
   manifest says which parts are done).
3. **assemble** (whichever part completes the set): the part translations are joined in order with the original
   separators and written to the planned output object with a conditional write on the output's version at
   planning time, so the output is written exactly once even when two invocations finish the last parts
   together; the manifest's ``status`` becomes ``complete``.

Each part is translated exactly as ``handler.storage.files.translate_text`` translates a file, so the output
equals ``translate_in_parts`` (the same parts translated one after another in one process) byte for byte; a
``.docx``'s output equals ``handler.storage.files.translate_file_bytes``'s (lines are translated independently).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from handler.config import ENV_MAX_FILE_BYTES, RuntimeConfig
from handler.errors import RequestTooLargeError, TranslatorError
from handler.service import TranslateOptions, TranslationService
from handler.storage.files import (
    META_BUNDLE_HASH,
    META_MODEL,
    META_SOURCE_BUCKET,
    META_SOURCE_ENCODING,
    META_SOURCE_KEY,
    WORD_ENCODING,
    WORD_FORMAT,
    UploadRefusedError,
    content_type_for,
    decode_text,
    format_for,
    handle_upload,
    is_subtitles,
    plain_translator,
    plan_output,
    translate_file_text,
    translate_text,
)
from handler.storage.object_store import ObjectRef, VersionedStore
from handler.text.parts import Part, plan_parts, plan_parts_at
from handler.formats.subtitles import parse_track, part_cuts

logger = logging.getLogger(__name__)

MANIFEST_FORMAT = 1
MANIFEST_NAME = "manifest.json"
PARTS_DIR = "parts/"
DONE_DIR = "done/"
PART_SUFFIX = ".txt"
DONE_SUFFIX = ".en"
META_JOB = "bulk-job"
META_PARTS = "bulk-parts"
JSON_CONTENT_TYPE = "application/json"
MAX_SWAP_ATTEMPTS = 50

_PART_KEY = re.compile(r"(?P<job>[0-9a-f]{20})/parts/(?P<index>\d{5})\.txt")


class BulkError(TranslatorError):
    """The fan-out's own objects are not what the manifest says (a bug or a manual change in the work prefix)."""

    code = "bulk_inconsistent"


def translate_in_parts(
    service: TranslationService,
    text: str,
    max_chars: int,
    fmt: str = "text",
    options: Mapping[str, Any] | None = None,
) -> str:
    """What the fan-out produces, in one process: each part translated as a file, joined with its separators.
    ``options``: the job's options as JSON values (``TranslateOptions.from_stored``), as its manifest records them."""
    lead, parts = _plan(text, max_chars, fmt)
    chosen = _options(options)
    return lead + "".join(
        _translate_part_text(service, part.text, fmt=fmt, fragment=index > 0, options=chosen) + part.separator
        for index, part in enumerate(parts)
    )


def _plan(text: str, max_chars: int, fmt: str) -> tuple[str, list[Part]]:
    """Plain text cut at blank lines (``plan_parts``); subtitles only between cues no sentence runs across; a Word
    document's units (one paragraph a line) only between lines."""
    if is_subtitles(fmt):
        return plan_parts_at(text, max_chars, part_cuts(parse_track(text, fmt)))
    if fmt == WORD_FORMAT:
        return plan_parts_at(text, max_chars, [(m.start(), m.end()) for m in re.finditer("\n", text)])
    return plan_parts(text, max_chars)


def _is_planned_format(fmt: str) -> bool:
    """The formats the manifest names (plain text is the default)."""
    return is_subtitles(fmt) or fmt == WORD_FORMAT


def _translate_part_text(
    service: TranslationService,
    text: str,
    deadline: float | None = None,
    *,
    fmt: str = "text",
    fragment: bool = False,
    options: TranslateOptions | None = None,
) -> str:
    if is_subtitles(fmt):  # a WebVTT part after the first has no header: a fragment
        return translate_file_text(service, text, fmt, options, fragment=fragment, deadline=deadline)
    if fmt == WORD_FORMAT:  # paragraphs a line, as handler.formats.word hands them to the translator
        return plain_translator(service, options, deadline=deadline)(text)
    return translate_text(service, text, options, deadline=deadline) if text.strip() else text


def _options(values: Mapping[str, Any] | None) -> TranslateOptions | None:
    """A job's options from their JSON values (None: the defaults, as for any upload)."""
    return TranslateOptions.from_stored(values) if values else None


# --- the job's objects ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JobLayout:
    """The keys of one job's objects in the work bucket."""

    bucket: str
    scheme: str
    prefix: str  # "{work_prefix}{job}/"

    @classmethod
    def of(cls, scheme: str, bucket: str, work_prefix: str, job: str) -> JobLayout:
        return cls(bucket, scheme, f"{work_prefix}{job}/")

    def ref(self, key: str) -> ObjectRef:
        return ObjectRef(self.scheme, self.bucket, key)

    @property
    def manifest(self) -> ObjectRef:
        return self.ref(self.prefix + MANIFEST_NAME)

    def part(self, index: int) -> ObjectRef:
        return self.ref(f"{self.prefix}{PARTS_DIR}{index:05d}{PART_SUFFIX}")

    def done(self, index: int) -> ObjectRef:
        return self.ref(f"{self.prefix}{DONE_DIR}{index:05d}{DONE_SUFFIX}")


def job_id(source: ObjectRef, data: bytes, bundle_hash: str, part_chars: int) -> str:
    digest = hashlib.sha256()
    for piece in (str(source), hashlib.sha256(data).hexdigest(), bundle_hash, str(part_chars)):
        digest.update(piece.encode("utf-8") + b"\0")
    return digest.hexdigest()[:20]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _json_bytes(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, indent=1).encode("utf-8")


@dataclass(frozen=True)
class Progress:
    """A job's state as its manifest records it."""

    job: str
    parts: int
    done: tuple[int, ...]
    status: str  # "translating", "complete", or "superseded" (the output changed since planning; not written)
    output: str

    @property
    def complete(self) -> bool:
        return self.status == "complete"


def read_progress(store: VersionedStore, manifest: ObjectRef) -> Progress:
    """The progress of the job whose manifest is ``manifest`` (``BulkError`` when there is none)."""
    loaded = _load_manifest(store, manifest)[0]
    output = loaded["output"]
    return Progress(
        loaded["job"],
        len(loaded["parts"]),
        tuple(loaded["done"]),
        loaded["status"],
        f"{manifest.scheme}://{output['bucket']}/{output['key']}",
    )


def _load_manifest(store: VersionedStore, ref: ObjectRef) -> tuple[dict[str, Any], str]:
    found = store.read_versioned(ref)
    if found is None:
        raise BulkError(f"the manifest {ref} does not exist; the part's event will fail until it does")
    manifest = json.loads(found.data)
    if manifest.get("format") != MANIFEST_FORMAT:
        raise BulkError(f"{ref} has manifest format {manifest.get('format')!r}; this runtime reads {MANIFEST_FORMAT}")
    return manifest, found.version


def _swap_manifest(store: VersionedStore, ref: ObjectRef, change: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Apply ``change`` (True: it changed something) with compare-and-swap; returns the manifest as stored."""
    for _ in range(MAX_SWAP_ATTEMPTS):
        manifest, version = _load_manifest(store, ref)
        if not change(manifest):
            return manifest
        if store.write_if(ref, _json_bytes(manifest), {}, version, JSON_CONTENT_TYPE):
            return manifest
    raise BulkError(f"{ref} changed {MAX_SWAP_ATTEMPTS} times while this invocation tried to update it")


# --- the entry point of every object event ---------------------------------------------------------------------
def handle_object_event(
    store: VersionedStore,
    source: ObjectRef,
    service: TranslationService,
    config: RuntimeConfig,
    *,
    deadline: float | None = None,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What the file adapters do with an "object created" event: a part, a large upload to plan, or a small one.

    ``options``: translation options as JSON values (``TranslateOptions.from_stored``) for this upload, recorded
    in a fan-out's manifest so that every part applies them (a document of DeepL's API: ``handler.storage.documents``).

    Objects under ``TRANSLATE_WORK_PREFIX`` are the fan-out's own: parts are translated, the rest (manifests, part
    results) ignored. A plain-text upload over ``TRANSLATE_PART_CHARS`` characters is planned into parts; anything
    else takes the one-invocation path of ``handler.storage.files.handle_upload``.
    """
    try:
        result = _fan_out(store, source, service, config, deadline, options)
    except Exception as error:  # logged like handle_upload's failures; raised, so the platform retries the event
        logger.error("could not translate %s, nothing was written: %s: %s", source, type(error).__name__, error)
        raise
    if result is not None:
        return result
    return handle_upload(store, source, service, config, deadline=deadline, options=_options(options))


def _fan_out(
    store: VersionedStore,
    source: ObjectRef,
    service: TranslationService,
    config: RuntimeConfig,
    deadline: float | None,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The fan-out's share of ``handle_object_event``; None: the one-invocation path takes the object."""
    if source.key.startswith(config.work_prefix):
        match = _PART_KEY.fullmatch(source.key[len(config.work_prefix) :])
        if match is None:
            return {"source": str(source), "status": "ignored", "reason": "a fan-out object that is not a part"}
        layout = JobLayout.of(source.scheme, source.bucket, config.work_prefix, match["job"])
        return translate_part(store, layout, int(match["index"]), service, deadline=deadline)
    # plain text is cut at blank lines, subtitles between cues (markup's structure is not cut): files.format_for is
    # the one suffix table
    fmt = format_for(source.key)
    if config.part_chars and fmt == WORD_FORMAT:
        return _fan_out_word(store, source, service, config)
    if config.part_chars and (fmt == "text" or is_subtitles(fmt)):
        try:
            plan_output(source, config)
            size = store.size(source)
        except UploadRefusedError:
            size = 0  # handle_upload refuses it and says why
        # bytes >= characters, so a file of at most part_chars bytes has at most part_chars characters
        if config.part_chars < size <= config.max_file_bytes:
            data = store.read(source)
            if len(data) > config.max_file_bytes:
                raise RequestTooLargeError(
                    f"{source} is {len(data):,} bytes; the limit is {config.max_file_bytes:,} ({ENV_MAX_FILE_BYTES})"
                )
            text, encoding = decode_text(data, str(source))
            if len(text) > config.part_chars:
                if is_subtitles(fmt):  # a corrupt file is refused before anything is planned
                    parse_track(text, fmt, name=str(source))
                return start_job(store, source, data, text, encoding, service, config, options)
    return None


def _fan_out_word(
    store: VersionedStore, source: ObjectRef, service: TranslationService, config: RuntimeConfig
) -> dict[str, Any] | None:
    """A ``.docx`` whose paragraphs to translate hold more than ``part_chars`` characters is planned; a smaller one
    (or one refused, or not a .docx: ``handle_upload`` says why) takes the one-invocation path."""
    from handler.formats.word import read_word_document

    try:
        plan_output(source, config)
        size = store.size(source)
    except UploadRefusedError:
        return None
    if size > config.max_file_bytes:
        return None  # handle_upload refuses it before reading
    data = store.read(source)
    if len(data) > config.max_file_bytes:
        raise RequestTooLargeError(
            f"{source} is {len(data):,} bytes; the limit is {config.max_file_bytes:,} ({ENV_MAX_FILE_BYTES})"
        )
    document = read_word_document(data, name=str(source))  # a corrupt file is refused before anything is planned
    if document.characters <= config.part_chars:
        return None
    return start_job(store, source, data, document.text, WORD_ENCODING, service, config)


# --- 1. plan ----------------------------------------------------------------------------------------------------
def start_job(
    store: VersionedStore,
    source: ObjectRef,
    data: bytes,
    text: str,
    encoding: str,
    service: TranslationService,
    config: RuntimeConfig,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the manifest, then the parts (each only if missing): their events start the translation."""
    output = plan_output(source, config)
    info = service.info()
    job = job_id(source, data, str(info.get("bundle_hash", "")), config.part_chars)
    layout = JobLayout.of(source.scheme, output.bucket, config.work_prefix, job)
    fmt = format_for(source.key)
    lead, parts = _plan(text, config.part_chars, fmt)
    manifest = {
        "format": MANIFEST_FORMAT,
        "job": job,
        "status": "translating",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "source": {
            "bucket": source.bucket,
            "key": source.key,
            "encoding": encoding,
            "bytes": len(data),
            # a .docx is read again to assemble: it must be the bytes planned
            **({"sha256": hashlib.sha256(data).hexdigest()} if fmt == WORD_FORMAT else {}),
        },
        "output": {"bucket": output.bucket, "key": output.key, "version_at_start": store.version(output)},
        "model": info.get("model"),
        "bundle_hash": info.get("bundle_hash"),
        "part_chars": config.part_chars,
        **({"file_format": fmt} if _is_planned_format(fmt) else {}),
        **({"options": dict(options)} if options else {}),
        "lead": lead,
        "parts": [
            {
                "index": index,
                "key": layout.part(index).key,
                "sha256": _sha256(part.text),
                "characters": len(part.text),
                "separator": part.separator,
            }
            for index, part in enumerate(parts)
        ],
        "done": [],
    }
    created = store.write_if(layout.manifest, _json_bytes(manifest), {}, None, JSON_CONTENT_TYPE)
    if not created:  # planned before (a re-delivered event): keep that plan, add only missing parts
        manifest = _load_manifest(store, layout.manifest)[0]
        parts = _parts_from(manifest, text)
    existing = set(store.list_keys(layout.bucket, layout.prefix + PARTS_DIR))
    written = 0
    for index, part in enumerate(parts):
        ref = layout.part(index)
        if ref.key in existing:
            continue
        if store.write_if(ref, part.text.encode("utf-8"), {META_JOB: job, "bulk-part": str(index)}, None):
            written += 1
    logger.info(
        "%s: %s characters in %d parts (job %s, manifest %s); %d part objects written",
        source,
        f"{len(text):,}",
        len(parts),
        job,
        layout.manifest,
        written,
    )
    if not parts:  # nothing to translate (cannot happen above part_chars characters); assemble at once
        return assemble(store, layout, manifest)
    return {
        "source": str(source),
        "status": "planned" if created else "already planned",
        "job": job,
        "parts": len(parts),
        "parts_written": written,
        "manifest": str(layout.manifest),
        "output": str(output),
    }


def _parts_from(manifest: dict[str, Any], text: str) -> list[Part]:
    """The parts an existing manifest planned, cut again from the same text (its hashes must match)."""
    lead, parts = _plan(text, int(manifest["part_chars"]), manifest.get("file_format", "text"))
    recorded = [entry["sha256"] for entry in manifest["parts"]]
    if lead != manifest["lead"] or [_sha256(part.text) for part in parts] != recorded:
        raise BulkError(f"job {manifest['job']}: the source no longer cuts into the parts its manifest records")
    return parts


# --- 2. translate a part ----------------------------------------------------------------------------------------
def translate_part(
    store: VersionedStore,
    layout: JobLayout,
    index: int,
    service: TranslationService,
    *,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Translate part ``index`` unless its result exists, record it in the manifest, assemble after the last."""
    manifest, _ = _load_manifest(store, layout.manifest)
    if not 0 <= index < len(manifest["parts"]):
        raise BulkError(f"{layout.part(index)}: the manifest has {len(manifest['parts'])} parts")
    entry = manifest["parts"][index]
    done_ref = layout.done(index)
    status = "duplicate"
    if index not in manifest["done"] and store.version(done_ref) is None:
        found = store.read_versioned(layout.part(index))
        if found is None:
            raise BulkError(f"{layout.part(index)} does not exist, though its event was delivered")
        text = found.data.decode("utf-8")
        if _sha256(text) != entry["sha256"]:
            raise BulkError(f"{layout.part(index)} does not match the sha256 its manifest records")
        began = time.monotonic()
        fmt = manifest.get("file_format", "text")
        translation = _translate_part_text(
            service, text, deadline, fmt=fmt, fragment=index > 0, options=_options(manifest.get("options"))
        )
        written = store.write_if(
            done_ref, translation.encode("utf-8"), {META_JOB: manifest["job"], "bulk-part": str(index)}, None
        )
        status = "translated" if written else "duplicate"
        logger.info(
            "job %s part %d/%d: %s characters in %.1f s (%s)",
            manifest["job"],
            index + 1,
            len(manifest["parts"]),
            f"{len(text):,}",
            time.monotonic() - began,
            status,
        )

    def mark(current: dict[str, Any]) -> bool:
        if index in current["done"]:
            return False
        current["done"] = sorted({*current["done"], index})
        return True

    manifest = _swap_manifest(store, layout.manifest, mark)
    result: dict[str, Any] = {
        "source": str(layout.part(index)),
        "status": status,
        "job": manifest["job"],
        "done": len(manifest["done"]),
        "parts": len(manifest["parts"]),
    }
    if len(manifest["done"]) == len(manifest["parts"]) and manifest["status"] != "complete":
        result["assembly"] = assemble(store, layout, manifest)["status"]
    return result


# --- 3. assemble ------------------------------------------------------------------------------------------------
def assemble(store: VersionedStore, layout: JobLayout, manifest: dict[str, Any]) -> dict[str, Any]:
    """Join the part translations in order and write the output once (conditional on its planned version)."""
    pieces = [manifest["lead"]]
    for entry in manifest["parts"]:
        found = store.read_versioned(layout.done(entry["index"]))
        if found is None:
            raise BulkError(f"{layout.done(entry['index'])} is missing though the manifest lists it as done")
        pieces.append(found.data.decode("utf-8") + entry["separator"])
    source, output = manifest["source"], manifest["output"]
    fmt = manifest.get("file_format", "text")
    if fmt == WORD_FORMAT:
        payload = _rebuild_word(store, ObjectRef(layout.scheme, source["bucket"], source["key"]), manifest, pieces)
    else:
        payload = "".join(pieces).encode("utf-8")
    output_ref = ObjectRef(layout.scheme, output["bucket"], output["key"])
    metadata = {
        META_SOURCE_BUCKET: quote(source["bucket"], safe=""),
        META_SOURCE_KEY: quote(source["key"], safe="/"),
        META_SOURCE_ENCODING: source["encoding"],
        META_MODEL: quote(str(manifest.get("model") or ""), safe=""),
        META_BUNDLE_HASH: str(manifest.get("bundle_hash") or ""),
        META_JOB: manifest["job"],
        META_PARTS: str(len(manifest["parts"])),
    }
    if store.write_if(output_ref, payload, metadata, output["version_at_start"], content_type_for(fmt)):
        status = "assembled"
        logger.info(
            "job %s: wrote %s (%s bytes, %d parts)", manifest["job"], output_ref, f"{len(payload):,}", len(pieces) - 1
        )
    else:
        current = store.read_versioned(output_ref)
        if current is not None and current.metadata.get(META_JOB) == manifest["job"]:
            status = "already assembled"  # another invocation finished the last part at the same time
        else:
            status = "superseded"
            logger.warning(
                "job %s: %s changed since the job was planned (another upload of the same key?); not overwritten",
                manifest["job"],
                output_ref,
            )

    def complete(current: dict[str, Any]) -> bool:
        if current["status"] == "complete":
            return False
        current["status"] = "superseded" if status == "superseded" else "complete"
        return True

    _swap_manifest(store, layout.manifest, complete)
    return {"status": status, "output": str(output_ref), "job": manifest["job"]}


def _rebuild_word(store: VersionedStore, source: ObjectRef, manifest: dict[str, Any], pieces: list[str]) -> bytes:
    """The translated ``.docx``: the source read again (the bytes planned, by sha256) rebuilt from the lines."""
    from handler.formats.word import read_word_document

    data = store.read(source)
    if hashlib.sha256(data).hexdigest() != manifest["source"].get("sha256"):
        raise BulkError(
            f"job {manifest['job']}: {source} changed since the job was planned; its own upload event translates "
            f"the new version, this job writes nothing"
        )
    return read_word_document(data, name=str(source)).rebuild("".join(pieces).split("\n"))


__all__ = [
    "BulkError",
    "JobLayout",
    "Part",
    "Progress",
    "assemble",
    "handle_object_event",
    "plan_parts",
    "read_progress",
    "start_job",
    "translate_in_parts",
    "translate_part",
]
