"""Paths through functions-framework (Cloud Functions gen 2) as the client sent them: a download name holding an
encoded ``?`` is still that name, and a path functions-framework's routes do not match (a line feed) is answered by
the function in the API's shape, with its request id, instead of the framework's HTML 404."""

from __future__ import annotations

from urllib.parse import quote

import requests


def test_a_download_name_with_an_encoded_question_mark_is_downloaded(functions_framework_url: str) -> None:
    base = functions_framework_url.rstrip("/") + "/"
    reply = requests.post(
        base + "translate_file",
        files={"file": ("what?.txt", "今天天气很好。".encode())},
        data={"source": "zh", "target": "en"},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    url = reply.json()["translatedFileUrl"]
    name = url.rsplit("/", 1)[1]
    assert name.endswith("-" + quote("what?.txt", safe="")) or name.endswith("-what%3F.txt"), url
    download = requests.get(url, timeout=30)
    assert download.status_code == 200, download.text
    assert download.text.strip() and "今天" not in download.text


def test_a_path_with_a_line_feed_is_answered_by_the_function(functions_framework_url: str) -> None:
    base = functions_framework_url.rstrip("/")
    for path in ("/download_file/%0AGS", "/v2/glossaries/%0C%C3%97%0A", "/no%0Aroute"):
        answer = requests.get(base + path, timeout=30)
        assert answer.status_code in (400, 404), (path, answer.text[:200])  # the route's own refusal
        assert answer.headers.get("X-Request-Id"), path
        assert answer.headers["Content-Type"].startswith("application/json"), (path, answer.text[:200])
