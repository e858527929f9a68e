"""A request's options reach the service through every HTTP adapter (the ``client`` fixture): an HTTP layer that
dropped them answered 200 all the same, which a test checking only the status cannot see.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from handler.coldstart import Startup
from handler.service import TranslateOptions
from tests.adapters.conftest import HttpClient

pytestmark = pytest.mark.slow

JSON_HEADERS = {"Content-Type": "application/json"}
SENTENCE = "我们明天早上去北京看看长城，然后回家吃饭。"
OPTIONS: dict[str, Any] = {"beam_size": 1, "max_length_ratio": 1.0, "repetition_guard": False}


def post(client: HttpClient, payload: dict[str, Any]) -> dict[str, Any]:
    reply = client.call("POST", "/translate", JSON_HEADERS, json.dumps(payload, ensure_ascii=False).encode("utf-8"))
    assert reply.status == 200, reply.text
    answer: dict[str, Any] = reply.json()
    return answer


def test_decoding_options_give_what_the_service_gives_with_them(client: HttpClient, startup: Startup) -> None:
    # GIVEN options under which the model's output differs from the defaults' (checked, or the test proves nothing)
    assert startup.service is not None
    with_options = startup.service.translate(SENTENCE, TranslateOptions(**OPTIONS))
    assert with_options != startup.service.translate(SENTENCE, TranslateOptions())
    # WHEN they are sent over HTTP THEN the answer is the service's answer with those options
    assert post(client, {"text": SENTENCE, **OPTIONS})["translation"] == with_options
    assert post(client, {"texts": [SENTENCE], **OPTIONS})["translations"] == [with_options]


def test_glossary_format_and_spans_reach_the_service(client: HttpClient) -> None:
    glossary = {"长城": "Zorbleflux Wall"}
    answer = post(client, {"text": SENTENCE, "glossary": glossary, "spans": True})
    assert "Zorbleflux Wall" in answer["translation"]
    assert {"kind": "glossary", "source": "长城", "target": "Zorbleflux Wall"} in answer["spans"]
    assert "Zorbleflux" not in post(client, {"text": SENTENCE})["translation"]
    html = post(client, {"text": '<p title="长城">你好</p>', "format": "html"})["translation"]
    assert html.startswith("<p title=") and html.endswith("</p>") and "长城" not in html
