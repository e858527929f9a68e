"""Real sample events (JSON) and the one helper that loads them.

Shapes copied from the platforms' documented samples (aws-powertools/powertools-lambda-python
``tests/events/apiGatewayProxyEvent.json``, ``apiGatewayProxyV2Event.json``, ``lambdaFunctionUrlEvent.json``,
``s3Event.json``; a Cloud Storage ``google.cloud.storage.object.v1.finalized`` CloudEvent as Eventarc delivers it),
with the method, path, body and object names set for this function.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

EVENTS_DIR = Path(__file__).resolve().parent

API_GATEWAY_V1 = "api_gateway_v1"
API_GATEWAY_V2 = "api_gateway_v2"
FUNCTION_URL = "function_url"
S3_OBJECT_CREATED = "s3_object_created"
GCS_OBJECT_FINALIZED = "gcs_object_finalized"


@cache
def _load(name: str) -> str:
    return (EVENTS_DIR / f"{name}.json").read_text(encoding="utf-8")


def load_event(name: str) -> dict[str, Any]:
    """A fresh copy of ``tests/events/<name>.json`` (callers may change it)."""
    return copy.deepcopy(json.loads(_load(name)))
