"""What an "object created" event is, decided once, and the one path each kind takes.

Every file adapter (``handler.adapters.aws_lambda``, ``handler.adapters.gcp``) hands each object event here:

* a **fan-out part** (``TRANSLATE_WORK_PREFIX`` + ``<job>/parts/NNNNN.txt``): translated by ``handler.storage.bulk``;
* any **other fan-out object** (a manifest, a part's translation): ignored;
* a **document source** (DeepL's document API on AWS and GCP: ``TRANSLATE_DOCUMENT_PREFIX`` + ``<id>/document.<ext>``
  in ``TRANSLATE_DOCUMENT_BUCKET``): an upload translated with its record's options, the record kept up to date by
  ``handler.storage.documents``;
* an **upload**: read once in its format (``handler.storage.files.read_upload``), then cut into parts by the fan-out
  when its format allows and it holds more than ``TRANSLATE_PART_CHARS`` characters, else translated whole.

A refused upload (a self-trigger, an unsafe key) is logged as an error and reported, not raised: raising would make
the platform retry an event that can never succeed. Every other failure is logged and raised, so the platform
records the invocation as failed (and retries or dead-letters it as configured); nothing has been written then.
"""

from __future__ import annotations

import logging
from functools import partial

from handler import metrics
from handler.config import RuntimeConfig
from handler.service import TranslationService
from handler.storage import bulk, documents, files
from handler.storage.files import Outcome
from handler.storage.object_store import ObjectRef, VersionedStore

logger = logging.getLogger(__name__)


def handle_object_event(
    store: VersionedStore,
    source: ObjectRef,
    service: TranslationService,
    config: RuntimeConfig,
    *,
    deadline: float | None = None,
) -> Outcome:
    """What the file adapters do with an "object created" event (see the module's docstring); the event's kind is
    its metrics' route (``handler.metrics``: ``part``, ``document``, ``upload``, or ``other``)."""
    if source.key.startswith(config.work_prefix):
        part = bulk.PART_KEY.fullmatch(source.key[len(config.work_prefix) :])
        if part is None:
            metrics.set_route("other")
            return {"source": str(source), "status": "ignored", "reason": "a fan-out object that is not a part"}
        index = int(part["index"])
        metrics.set_route("part")
        return bulk.translate_part_object(store, source, part["job"], index, service, config, deadline=deadline)
    document_id = _document_id(source, config)
    if document_id is not None:
        metrics.set_route("document")
        translate = partial(handle_upload, store, source, service, config, deadline=deadline)
        return documents.translate_document_upload(store, source, document_id, config, translate)
    metrics.set_route("upload")
    return handle_upload(store, source, service, config, deadline=deadline)


def _document_id(source: ObjectRef, config: RuntimeConfig) -> str | None:
    """The document id when ``source`` is a document's source object (``documents.document_source``), else None."""
    if not config.document_bucket or source.bucket != config.document_bucket:
        return None
    if not source.key.startswith(config.document_prefix):
        return None
    match = documents.SOURCE_KEY.fullmatch(source.key[len(config.document_prefix) :])
    return match["id"] if match else None


def handle_upload(
    store: VersionedStore,
    source: ObjectRef,
    service: TranslationService,
    config: RuntimeConfig,
    *,
    deadline: float | None = None,
    options: bulk.JobOptions | None = None,
) -> Outcome:
    """One upload: read once, then fanned out or translated whole. ``options``: translation options as JSON values
    (``TranslateOptions.from_stored``) for this upload (a document of DeepL's API), recorded in a fan-out's
    manifest so that every part applies them."""
    try:
        upload = files.read_upload(store, source, config, deadline=deadline)
        planned = bulk.fan_out(store, upload, service, config, options)
        if planned is not None:
            return planned
        return files.translate_whole(store, upload, service, deadline=deadline, options=options)
    except files.UploadRefusedError as error:
        logger.error("%s", error)
        metrics.refused(error.code)
        return {"source": str(source), "status": "refused", "reason": str(error)}
    except Exception as error:
        logger.error("could not translate %s, nothing was written: %s: %s", source, type(error).__name__, error)
        raise
