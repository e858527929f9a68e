"""Pathological texts through a real HTTP server on loopback serving the shipped default bundle.

Each class of ``tests/fuzz/pathological.py`` is answered 200 (a lone surrogate escaped in JSON: 400), never a 500,
and nothing silently vanishes: text without Chinese comes back as it was sent (whitespace, emoji, a 20,000-
character word), a long URL comes back whole, every line keeps its place, and every segment the model sees gives
English. Texts without Chinese are sent at the full 20,000 characters; those the model must translate are cut to
``MODEL_CHARS`` characters and decoded greedily, to keep the suite fast (the README's figures are measured at the
full length and the default beam by ``python -m tests.fuzz.pathological``). The client's timeout is a hang guard,
not a timing assertion.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from handler.adapters.local_server import make_server
from handler.api.router import HttpApi
from handler.coldstart import Startup
from handler.text.segmentation import LINE_BREAKS, split_document
from tests.fuzz.pathological import LIMIT, LONG_URL, Pathological, pathological_texts, significant
from tests.fuzz.shipped import NEEDS_SHIPPED_BUNDLE, shipped_config, shipped_service

pytestmark = NEEDS_SHIPPED_BUNDLE

MODEL_CHARS = 200
HANG_GUARD_S = 600
LINE_BREAK = re.compile(f"[{LINE_BREAKS}]")
ENGLISH_WORD = re.compile(r"[A-Za-z]+")


@pytest.fixture(scope="module")
def server_port() -> Iterator[int]:
    config = shipped_config(beam_size=1)  # the default limits: 20,000 characters, 64 texts
    server = make_server(HttpApi(Startup(config, shipped_service(beam_size=1), None, 0.0)), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def post(port: int, body: bytes) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG_GUARD_S)
    try:
        connection.request("POST", "/translate", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def sent_text(case: Pathological) -> str:
    return case.text[:MODEL_CHARS] if case.has_chinese else case.text


@pytest.mark.parametrize("case", pathological_texts(), ids=lambda case: case.name)
def test_a_pathological_text_is_answered_and_nothing_vanishes(server_port: int, case: Pathological) -> None:
    text = sent_text(case)
    status, answer = post(server_port, json.dumps({"text": text}).encode("utf-8"))
    assert status == 200, answer
    translation = answer["translation"]
    assert LINE_BREAK.findall(translation) == LINE_BREAK.findall(text)  # every line keeps its place
    if not case.has_chinese:
        assert translation == text  # whitespace, emoji and long words come back exactly
        return
    if LONG_URL in text:
        assert LONG_URL in translation
    segments = split_document(text, shipped_service().model.tokenizer.count_tokens, 256).texts
    assert len(ENGLISH_WORD.findall(translation)) >= len(set(segments)) >= 1  # each segment gave English
    assert "\x00" not in translation and significant(translation)


def test_the_long_url_class_is_sent_whole(server_port: int) -> None:
    # the URL class has Chinese around a 19,980-character URL: sent at full length, the URL must come back whole
    case = next(case for case in pathological_texts() if LONG_URL in case.text)
    status, answer = post(server_port, json.dumps({"text": case.text}).encode("utf-8"))
    assert status == 200 and LONG_URL in answer["translation"]


def test_texts_without_chinese_as_one_batch_at_the_character_limit(server_port: int) -> None:
    # exactly 20,000 characters in four texts, astral emoji among them (12 bytes each in escaped JSON)
    emoji, whitespace, word = (case.text for case in pathological_texts() if not case.has_chinese)
    texts = [emoji[:5_000], whitespace[:5_000], word[:5_000], word[5_000:10_000]]
    assert sum(map(len, texts)) == LIMIT
    status, answer = post(server_port, json.dumps({"texts": texts}).encode("utf-8"))
    assert status == 200 and answer["translations"] == texts


@pytest.mark.parametrize("escaped", ["\\ud800", "\\udfff", "\\ud83d"], ids=["high", "low", "unpaired half"])
def test_a_lone_surrogate_escaped_in_json_is_400(server_port: int, escaped: str) -> None:
    body = ('{"text": "你好' + escaped + '世界"}').encode("utf-8")
    status, answer = post(server_port, body)
    assert status == 400 and answer["error"]["code"] == "invalid_request"
    assert "unpaired UTF-16 surrogate at character 2" in answer["error"]["message"]
