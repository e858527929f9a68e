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

1. **plan** (the upload's event, ``start_job``): the file's text is cut where its format allows (plain text at
   paragraph boundaries, then line breaks, then sentence ends, only where a paragraph alone is too long:
   ``handler.text.parts``) into parts of at most ``TRANSLATE_PART_CHARS`` characters. The manifest
   ``{work}{job}/manifest.json`` is created first (a conditional create: of two deliveries of the event, one
   plans), naming the source, the output, the output's version at planning time, and every part with its sha256,
   character count and the separator that follows it.
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

Where a file may be cut, how a part is translated and how the parts are joined is its format's
(``handler.formats.base.FileFormat``: ``cut``, ``translate_part``, ``join``); the fan-out never branches on a
format. Each part is translated exactly as the whole file's translation translates that text, so the output equals
``translate_in_parts`` (the same parts translated one after another in one process) byte for byte; a ``.docx``'s
output equals ``handler.formats.translate_file``'s (lines are translated independently). The manifest is a
``JobManifest``, which reads and writes itself.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import partial

from handler import metrics
from handler.config import RuntimeConfig
from handler.errors import TranslatorError
from handler.formats import FORMATS_BY_NAME, FileFormat, FileTranslator
from handler.service import TranslateOptions, TranslationService
from handler.storage.files import Outcome, Upload, write_joined
from handler.storage.object_store import ObjectRef, VersionedStore
from handler.text.parts import Part

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
TRANSLATING, COMPLETE, SUPERSEDED = "translating", "complete", "superseded"

# a part object's key below the work prefix (``handler.storage.dispatch`` reads it)
PART_KEY = re.compile(r"(?P<job>[0-9a-f]{20})/parts/(?P<index>\d{5})\.txt")

# a job's options: TranslateOptions values as JSON (``TranslateOptions.from_stored``)
JobOptions = Mapping[str, object]


class BulkError(TranslatorError):
    """The fan-out's own objects are not what the manifest says (a bug or a manual change in the work prefix)."""

    code = "bulk_inconsistent"


def translate_in_parts(
    service: TranslationService,
    text: str,
    max_chars: int,
    fmt: str = "text",
    options: JobOptions | None = None,
) -> str:
    """What the fan-out produces, in one process: each part translated as the format translates it, joined with
    its separators. ``options``: the job's options as JSON values, as its manifest records them."""
    file_format = FORMATS_BY_NAME[fmt]
    lead, parts = cut_text(file_format, text, max_chars)
    translator = FileTranslator(service, translate_options(options))
    return lead + "".join(
        file_format.translate_part(part.text, index, translator) + part.separator for index, part in enumerate(parts)
    )


def cut_text(file_format: FileFormat, text: str, max_chars: int, name: str = "the file") -> tuple[str, list[Part]]:
    """``file_format``'s cut of ``text`` (``BulkError`` for a format that is never cut: never planned)."""
    cut = file_format.cut(text, max_chars, name)
    if cut is None:
        raise BulkError(f"{file_format.name} files are never cut into parts")
    return cut


def translate_options(values: JobOptions | None) -> TranslateOptions | None:
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


# --- the manifest -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class JobSource:
    """The uploaded file: where it is, how it was read, and (for a format that joins from its source) its sha256."""

    bucket: str
    key: str
    encoding: str
    bytes: int
    sha256: str | None = None


@dataclass(frozen=True)
class JobOutput:
    """Where the translation goes, and the output's version when the job was planned (None: it did not exist)."""

    bucket: str
    key: str
    version_at_start: str | None


@dataclass(frozen=True)
class PartEntry:
    """One part: its object's key, its text's sha256 and length, and the separator that follows it."""

    index: int
    key: str
    sha256: str
    characters: int
    separator: str


@dataclass(frozen=True)
class JobManifest:
    """``{work}{job}/manifest.json``: the plan of one job and its progress; reads and writes itself as JSON."""

    job: str
    created: str
    source: JobSource
    output: JobOutput
    model: str | None
    bundle_hash: str | None
    part_chars: int
    lead: str
    parts: tuple[PartEntry, ...]
    file_format: str = "text"
    options: JobOptions = field(default_factory=dict)
    status: str = TRANSLATING  # TRANSLATING, COMPLETE, or SUPERSEDED (the output changed since planning)
    done: tuple[int, ...] = ()

    @property
    def format(self) -> FileFormat:
        found = FORMATS_BY_NAME.get(self.file_format)
        if found is None:
            raise BulkError(f"job {self.job} names file format {self.file_format!r}, which this runtime does not read")
        return found

    def to_json(self) -> bytes:
        record = {"format": MANIFEST_FORMAT, **asdict(self), "options": dict(self.options)}
        if self.source.sha256 is None:
            del record["source"]["sha256"]
        if self.file_format == "text":  # plain text, the default, is not named (as manifests always wrote it)
            del record["file_format"]
        if not self.options:
            del record["options"]
        return json.dumps(record, ensure_ascii=False, indent=1).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes, where: ObjectRef) -> JobManifest:
        record = json.loads(data)
        if record.get("format") != MANIFEST_FORMAT:
            raise BulkError(
                f"{where} has manifest format {record.get('format')!r}; this runtime reads {MANIFEST_FORMAT}"
            )
        return cls(
            job=record["job"],
            created=record["created"],
            source=JobSource(**record["source"]),
            output=JobOutput(**record["output"]),
            model=record.get("model"),
            bundle_hash=record.get("bundle_hash"),
            part_chars=int(record["part_chars"]),
            lead=record["lead"],
            parts=tuple(PartEntry(**entry) for entry in record["parts"]),
            file_format=record.get("file_format", "text"),
            options=record.get("options") or {},
            status=record["status"],
            done=tuple(record["done"]),
        )

    def output_ref(self, scheme: str) -> ObjectRef:
        return ObjectRef(scheme, self.output.bucket, self.output.key)

    def source_ref(self, scheme: str) -> ObjectRef:
        return ObjectRef(scheme, self.source.bucket, self.source.key)

    def characters_done(self) -> tuple[int, int]:
        """(characters of the parts done, characters of all parts)."""
        done = set(self.done)
        return sum(p.characters for p in self.parts if p.index in done), sum(p.characters for p in self.parts)


@dataclass(frozen=True)
class Progress:
    """A job's state as its manifest records it."""

    job: str
    parts: int
    done: tuple[int, ...]
    status: str  # "translating", "complete", or "superseded" (the output changed since planning; not written)
    output: str
    characters_done: int = 0
    characters: int = 0

    @property
    def complete(self) -> bool:
        return self.status == COMPLETE


def read_progress(store: VersionedStore, manifest: ObjectRef) -> Progress:
    """The progress of the job whose manifest is ``manifest`` (``BulkError`` when there is none)."""
    loaded = _load_manifest(store, manifest)[0]
    done, total = loaded.characters_done()
    output = loaded.output_ref(manifest.scheme)
    return Progress(loaded.job, len(loaded.parts), loaded.done, loaded.status, str(output), done, total)


def _load_manifest(store: VersionedStore, ref: ObjectRef) -> tuple[JobManifest, str]:
    found = store.read_versioned(ref)
    if found is None:
        raise BulkError(f"the manifest {ref} does not exist; the part's event will fail until it does")
    return JobManifest.from_json(found.data, ref), found.version


def _swap_manifest(
    store: VersionedStore, ref: ObjectRef, change: Callable[[JobManifest], JobManifest | None]
) -> JobManifest:
    """Apply ``change`` (None: nothing to change) with compare-and-swap; returns the manifest as stored."""
    for _ in range(MAX_SWAP_ATTEMPTS):
        manifest, version = _load_manifest(store, ref)
        changed = change(manifest)
        if changed is None:
            return manifest
        if store.write_if(ref, changed.to_json(), {}, version, JSON_CONTENT_TYPE):
            return changed
    raise BulkError(f"{ref} changed {MAX_SWAP_ATTEMPTS} times while this invocation tried to update it")


# --- 1. plan ----------------------------------------------------------------------------------------------------
def fan_out(
    store: VersionedStore,
    upload: Upload,
    service: TranslationService,
    config: RuntimeConfig,
    options: JobOptions | None = None,
) -> Outcome | None:
    """``start_job`` for an upload its format cuts into parts, or None: it is translated in one invocation (no
    fan-out configured, at most ``TRANSLATE_PART_CHARS`` characters, or a format that is never cut)."""
    if not config.part_chars or upload.file.characters <= config.part_chars:
        return None
    plan = upload.format.cut(upload.file.text, config.part_chars, str(upload.source))
    return None if plan is None else start_job(store, upload, plan, service, config, options)


def start_job(
    store: VersionedStore,
    upload: Upload,
    plan: tuple[str, list[Part]],
    service: TranslationService,
    config: RuntimeConfig,
    options: JobOptions | None = None,
) -> Outcome:
    """Write the manifest, then the parts (each only if missing): their events start the translation."""
    source, output, file, part_chars = upload.source, upload.output, upload.file, config.part_chars
    info = service.info()
    job = job_id(source, file.data, str(info.get("bundle_hash", "")), part_chars)
    layout = JobLayout.of(source.scheme, output.bucket, config.work_prefix, job)
    lead, parts = plan
    manifest = JobManifest(
        job=job,
        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # a file its format joins from its source is read again to assemble: it must be the bytes planned
        source=JobSource(
            source.bucket,
            source.key,
            file.encoding,
            len(file.data),
            hashlib.sha256(file.data).hexdigest() if upload.format.joins_from_source else None,
        ),
        output=JobOutput(output.bucket, output.key, store.version(output)),
        model=_text_or_none(info.get("model")),
        bundle_hash=_text_or_none(info.get("bundle_hash")),
        part_chars=part_chars,
        lead=lead,
        parts=tuple(
            PartEntry(index, layout.part(index).key, _sha256(part.text), len(part.text), part.separator)
            for index, part in enumerate(parts)
        ),
        file_format=upload.format.name,
        options=dict(options or {}),
    )
    created = store.write_if(layout.manifest, manifest.to_json(), {}, None, JSON_CONTENT_TYPE)
    if created:
        metrics.add("fan_out_jobs_started")
    else:  # planned before (a re-delivered event): keep that plan, add only missing parts
        manifest = _load_manifest(store, layout.manifest)[0]
        parts = _parts_from(manifest, file.text)
    existing = set(store.list_keys(layout.bucket, layout.prefix + PARTS_DIR))
    written = 0
    for index, part in enumerate(parts):
        ref = layout.part(index)
        if ref.key in existing:
            continue
        data = part.text.encode("utf-8")
        if store.write_if(ref, data, {META_JOB: job, "bulk-part": str(index)}, None):
            written += 1
            metrics.add("bytes_written", len(data))
    logger.info(
        "%s: %s characters in %d parts (job %s, manifest %s); %d part objects written",
        source,
        f"{len(file.text):,}",
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


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _parts_from(manifest: JobManifest, text: str) -> list[Part]:
    """The parts an existing manifest planned, cut again from the same text (its hashes must match)."""
    lead, parts = cut_text(manifest.format, text, manifest.part_chars)
    recorded = [entry.sha256 for entry in manifest.parts]
    if lead != manifest.lead or [_sha256(part.text) for part in parts] != recorded:
        raise BulkError(f"job {manifest.job}: the source no longer cuts into the parts its manifest records")
    return parts


# --- 2. translate a part ----------------------------------------------------------------------------------------
def translate_part(
    store: VersionedStore,
    layout: JobLayout,
    index: int,
    service: TranslationService,
    *,
    deadline: float | None = None,
) -> Outcome:
    """Translate part ``index`` unless its result exists, record it in the manifest, assemble after the last."""
    manifest, _ = _load_manifest(store, layout.manifest)
    if not 0 <= index < len(manifest.parts):
        raise BulkError(f"{layout.part(index)}: the manifest has {len(manifest.parts)} parts")
    entry = manifest.parts[index]
    done_ref = layout.done(index)
    status = "duplicate"
    if index not in manifest.done and store.version(done_ref) is None:
        found = store.read_versioned(layout.part(index))
        if found is None:
            raise BulkError(f"{layout.part(index)} does not exist, though its event was delivered")
        text = found.data.decode("utf-8")
        if _sha256(text) != entry.sha256:
            raise BulkError(f"{layout.part(index)} does not match the sha256 its manifest records")
        began = time.monotonic()
        written = _translate_part_text(store, manifest, index, text, done_ref, service, deadline)
        status = "translated" if written else "duplicate"
        logger.info(
            "job %s part %d/%d: %s characters in %.1f s (%s)",
            manifest.job,
            index + 1,
            len(manifest.parts),
            f"{len(text):,}",
            time.monotonic() - began,
            status,
        )

    def mark(current: JobManifest) -> JobManifest | None:
        if index in current.done:
            return None
        return replace(current, done=tuple(sorted({*current.done, index})))

    manifest = _swap_manifest(store, layout.manifest, mark)
    result: Outcome = {
        "source": str(layout.part(index)),
        "status": status,
        "job": manifest.job,
        "done": len(manifest.done),
        "parts": len(manifest.parts),
    }
    if len(manifest.done) == len(manifest.parts) and manifest.status != COMPLETE:
        result["assembly"] = assemble(store, layout, manifest)["status"]
    return result


def _translate_part_text(
    store: VersionedStore,
    manifest: JobManifest,
    index: int,
    text: str,
    done_ref: ObjectRef,
    service: TranslationService,
    deadline: float | None,
) -> bool:
    """Part ``index``'s ``text`` translated and its result written unless another invocation wrote it first (False);
    counted in the event's metrics (``handler.metrics``: started, then finished or failed)."""
    metrics.add("fan_out_parts_started")
    metrics.add("characters", len(text))
    metrics.add("bytes_read", len(text.encode("utf-8")))
    try:
        translator = FileTranslator(service, translate_options(manifest.options), deadline)
        data = manifest.format.translate_part(text, index, translator).encode("utf-8")
        written = store.write_if(done_ref, data, {META_JOB: manifest.job, "bulk-part": str(index)}, None)
    except BaseException:
        metrics.add("fan_out_parts_failed")
        raise
    metrics.add("fan_out_parts_finished")
    metrics.add("bytes_written", len(data) if written else 0)
    return written


def translate_part_object(
    store: VersionedStore,
    source: ObjectRef,
    job: str,
    index: int,
    service: TranslationService,
    config: RuntimeConfig,
    *,
    deadline: float | None = None,
) -> Outcome:
    """``translate_part`` of the part object ``source`` (``PART_KEY``: job ``job``, part ``index``)."""
    layout = JobLayout.of(source.scheme, source.bucket, config.work_prefix, job)
    return translate_part(store, layout, index, service, deadline=deadline)


# --- 3. assemble ------------------------------------------------------------------------------------------------
def assemble(store: VersionedStore, layout: JobLayout, manifest: JobManifest) -> Outcome:
    """Join the part translations in order and write the output once (conditional on its planned version)."""
    pieces = [manifest.lead]
    for entry in manifest.parts:
        found = store.read_versioned(layout.done(entry.index))
        if found is None:
            raise BulkError(f"{layout.done(entry.index)} is missing though the manifest lists it as done")
        pieces.append(found.data.decode("utf-8") + entry.separator)
    source, output_ref = manifest.source_ref(layout.scheme), manifest.output_ref(layout.scheme)
    described = (
        manifest.source.encoding,
        {"model": manifest.model, "bundle_hash": manifest.bundle_hash},
        {META_JOB: manifest.job, META_PARTS: str(len(manifest.parts))},
    )
    written = write_joined(
        store,
        manifest.format,
        "".join(pieces),
        partial(_planned_source, store, source, manifest),
        source,
        output_ref,
        described,
        manifest.output.version_at_start,
    )
    if written is not None:
        status = "assembled"
        metrics.add("fan_out_jobs_finished")
        metrics.add("bytes_written", written)
        logger.info("job %s: wrote %s (%s bytes, %d parts)", manifest.job, output_ref, f"{written:,}", len(pieces) - 1)
    else:
        current = store.read_versioned(output_ref)
        if current is not None and current.metadata.get(META_JOB) == manifest.job:
            status = "already assembled"  # another invocation finished the last part at the same time
        else:
            status = SUPERSEDED
            logger.warning(
                "job %s: %s changed since the job was planned (another upload of the same key?); not overwritten",
                manifest.job,
                output_ref,
            )

    def complete(current: JobManifest) -> JobManifest | None:
        if current.status == COMPLETE:
            return None
        return replace(current, status=SUPERSEDED if status == SUPERSEDED else COMPLETE)

    _swap_manifest(store, layout.manifest, complete)
    return {"status": status, "output": str(output_ref), "job": manifest.job}


def _planned_source(store: VersionedStore, source: ObjectRef, manifest: JobManifest) -> bytes:
    """The source read again, for a format that joins from it: the bytes planned (by sha256), or ``BulkError``."""
    data = store.read(source)
    if hashlib.sha256(data).hexdigest() != manifest.source.sha256:
        raise BulkError(
            f"job {manifest.job}: {source} changed since the job was planned; its own upload event translates "
            f"the new version, this job writes nothing"
        )
    return data


__all__ = [
    "BulkError",
    "JobLayout",
    "JobManifest",
    "Part",
    "Progress",
    "assemble",
    "read_progress",
    "start_job",
    "translate_in_parts",
    "translate_part",
]
