"""Google Cloud Functions entry points (functions-framework).

* ``translate_http`` (``@functions_framework.http``): the HTTP surface of ``handler.http_api``.
* ``translate_storage_event`` (``@functions_framework.cloud_event``): a Cloud Storage
  ``google.cloud.storage.object.v1.finalized`` event; the object is translated into ``TRANSLATE_OUTPUT_BUCKET`` /
  ``TRANSLATE_OUTPUT_PREFIX`` (``handler.file_translation``). Object names arrive unencoded in ``data.name``.
  Cloud Functions gives a function no remaining-time figure; a file that outruns the function's timeout is stopped
  before its single write, so nothing is written then either.

The model is loaded and warmed when this module is imported; a load failure is kept and answered 503 to HTTP
requests and raised for storage events. ``main.py`` at the repository root re-exports both entries, for source
deploys and ``functions-framework --source main.py --target translate_http``.
"""

from __future__ import annotations

import logging
from typing import Any

import flask
import functions_framework
from cloudevents.http.event import CloudEvent

from handler.file_translation import handle_upload
from handler.http_api import HttpApi, HttpRequest
from handler.object_store import GcsStore, ObjectRef, ObjectStore
from handler.startup import Startup, start

logger = logging.getLogger(__name__)

STORAGE_FINALIZED = "google.cloud.storage.object.v1.finalized"


class GcpAdapter:
    def __init__(self, startup: Startup, store: ObjectStore | None = None) -> None:
        self.startup = startup
        self.http = HttpApi(startup)
        self._store = store

    @property
    def store(self) -> ObjectStore:
        if self._store is None:  # the storage client is built on the first event, not at every cold start
            self._store = GcsStore()
        return self._store

    def handle_http(self, request: flask.Request) -> flask.Response:
        response = self.http.handle(
            HttpRequest.create(request.method, request.path, request.headers.items(), request.get_data(cache=False))
        )
        return flask.Response(response=response.body, status=response.status, headers=response.headers)

    def handle_storage_event(self, event_type: str, data: Any) -> dict[str, str] | None:
        if event_type != STORAGE_FINALIZED:
            logger.warning("ignoring CloudEvent of type %s; this function translates %s", event_type, STORAGE_FINALIZED)
            return None
        service = self.startup.require_service()
        source = ObjectRef("gs", str(data["bucket"]), str(data["name"]))
        return handle_upload(self.store, source, service, self.startup.config)


_ADAPTER = GcpAdapter(start())


@functions_framework.http
def translate_http(request: flask.Request) -> flask.Response:
    return _ADAPTER.handle_http(request)


@functions_framework.cloud_event
def translate_storage_event(event: CloudEvent) -> None:
    _ADAPTER.handle_storage_event(str(event["type"]), event.data)
