"""``"scores": true`` through every HTTP adapter and ``--scores`` in the CLI, on the tiny test model (its output is
gibberish, so these check the shape and the offsets, not the figures); the drop-in APIs never grow the field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handler.coldstart import Startup
from handler.service import TranslateOptions
from tests.adapters.conftest import HttpClient
from tests.adapters.test_cli import run_cli
from tests.adapters.test_http_surface import assert_error, post_json

pytestmark = pytest.mark.slow

TEXT = "今天天气很好。我们去公园散步吧。"
FLAGS = {
    "repetition_guard",
    "span_recovered",
    "length_ratio",
    "length_ratio_out_of_range",
    "untranslated",
    "lost_source",
}


def check_segments(source: str, translation: str, segments: list[dict[str, Any]]) -> None:
    assert segments, "no segment listed"
    for segment in segments:
        start, end = segment["source_span"]
        assert source[start:end] == segment["source"]
        if segment["translation_span"] is not None:
            start, end = segment["translation_span"]
            assert translation[start:end] == segment["translation"]
        assert 0.0 <= segment["confidence"] <= 1.0
        assert isinstance(segment["low_confidence"], bool) and isinstance(segment["reasons"], list)
        assert segment["low_confidence"] == bool(segment["reasons"])
        assert set(segment["flags"]) == FLAGS


def test_scores_on_one_text_and_on_several(client: HttpClient) -> None:
    reply = post_json(client, {"text": TEXT, "scores": True})
    assert reply.status == 200, reply.text
    body = reply.json()
    check_segments(TEXT, body["translation"], body["scores"])
    assert [s["source"] for s in body["scores"]] == ["今天天气很好。", "我们去公园散步吧。"]

    texts = [TEXT, "你好", "plain English"]
    reply = post_json(client, {"texts": texts, "scores": True})
    assert reply.status == 200, reply.text
    body = reply.json()
    assert len(body["scores"]) == 3
    for source, translation, segments in zip(texts, body["translations"], body["scores"], strict=True):
        check_segments(source, translation, segments)
    assert body["scores"][2][0]["model_score"] is None  # no Chinese: never reached the model


def test_no_scores_unless_asked_and_the_same_translation_either_way(client: HttpClient) -> None:
    plain = post_json(client, {"text": TEXT})
    scored = post_json(client, {"text": TEXT, "scores": True})
    assert "scores" not in plain.json()
    assert plain.json()["translation"] == scored.json()["translation"]


def test_scores_must_be_a_boolean(client: HttpClient) -> None:
    reply = post_json(client, {"text": TEXT, "scores": 1})
    assert_error(reply, 400, "invalid_request", r"^scores must be true or false; got 1$")


def test_the_drop_in_apis_answer_without_scores(client: HttpClient) -> None:
    deepl = post_json(client, {"text": [TEXT], "target_lang": "EN-US"}, "/v2/translate")
    assert deepl.status == 200, deepl.text
    assert set(deepl.json()) == {"translations"}
    assert set(deepl.json()["translations"][0]) == {"billed_characters", "detected_source_language", "text"}
    libre = post_json(client, {"q": TEXT, "source": "zh", "target": "en"}, "/translate")
    assert libre.status == 200, libre.text
    assert "scores" not in libre.json()


def test_the_cli_writes_json_lines_with_the_whole_translation_last(
    adapter_env: dict[str, str], startup: Startup
) -> None:
    source = TEXT + "\n\n他给我们开了个会。\n"
    result = run_cli(["translate", "--scores", "-"], adapter_env, stdin=source.encode("utf-8"))
    assert result.returncode == 0, result.stderr.decode()
    lines = [json.loads(line) for line in result.stdout.decode("utf-8").splitlines()]
    *segments, summary = lines
    assert summary["segments"] == len(segments) == 3
    assert summary["flagged"] == sum(segment["low_confidence"] for segment in segments)
    assert startup.service is not None
    assert summary["translation"] == startup.service.translate_document(source, TranslateOptions())
    check_segments(source, summary["translation"], segments)
