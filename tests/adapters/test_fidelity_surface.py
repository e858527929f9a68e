"""Protected spans, the glossary and the markup formats through every adapter: each HTTP adapter (``client``:
functions-framework, the local server, API Gateway v1/v2 and Function URL events, awslambdaric), file events on
S3 and Cloud Storage (``backend``), and the CLI. The tiny test model never copies a placeholder, so these also run
the stitching fallback end to end.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from handler.coldstart import Startup
from handler.text.markup import skeleton
from tests.adapters.conftest import HttpClient
from tests.adapters.test_cli import run_cli
from tests.adapters.test_file_events import backend  # noqa: F401  (the S3 and Cloud Storage fixture)
from tests.adapters.test_http_surface import assert_error, post_json

pytestmark = pytest.mark.slow

URL_SENTENCE = "请访问 https://example.com/docs?id=42 获取更多信息，或写信给 zhang.wei@example.cn。"
HTML = '<p><b>你好</b>，<a href="https://example.com/x" title="链接">世界</a> &amp; 朋友</p><pre>代码 不译</pre>'
MARKDOWN = "# 标题\n\n- 第一项 `pip install numpy`\n- [文档](https://example.com/docs) 第二项\n\n```\n中文代码\n```\n"


# --- HTTP ---------------------------------------------------------------------------------------------------------
def test_spans_come_back_byte_for_byte_and_are_listed(client: HttpClient) -> None:
    reply = post_json(client, {"text": URL_SENTENCE, "spans": True})
    assert reply.status == 200, reply.text
    body = reply.json()
    assert "https://example.com/docs?id=42" in body["translation"]
    assert "zhang.wei@example.cn" in body["translation"]
    assert not re.search(r"\bX\d+\b", body["translation"])
    assert body["spans"] == [
        {"kind": "url", "source": "https://example.com/docs?id=42", "target": "https://example.com/docs?id=42"},
        {"kind": "email", "source": "zhang.wei@example.cn", "target": "zhang.wei@example.cn"},
    ]


def test_amounts_and_the_glossary_become_their_english(client: HttpClient) -> None:
    payload = {"texts": ["公司去年收入1.25亿元。", "人工智能正在改变世界。"], "glossary": {"人工智能": "AI"}}
    reply = post_json(client, payload)
    assert reply.status == 200, reply.text
    amount, glossary = reply.json()["translations"]
    assert "125 million yuan" in amount
    assert "AI" in glossary and "人工智能" not in glossary


def test_text_without_chinese_comes_back_unchanged(client: HttpClient) -> None:
    texts = ["This is English.", "print('hello')  # 42", "😀 https://example.com"]
    reply = post_json(client, {"texts": texts})
    assert reply.status == 200, reply.text
    assert reply.json()["translations"] == texts


@pytest.mark.parametrize(("text", "format"), [(HTML, "html"), (MARKDOWN, "markdown")])
def test_markup_formats_keep_the_markup(client: HttpClient, text: str, format: str) -> None:
    reply = post_json(client, {"text": text, "format": format})
    assert reply.status == 200, reply.text
    translation = reply.json()["translation"]
    assert skeleton(translation, format) == skeleton(text, format)
    kept = ["<pre>代码 不译</pre>", 'href="https://example.com/x"'] if format == "html" else ["`pip install numpy`"]
    assert all(piece in translation for piece in kept)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"text": "你好", "format": "pdf"}, r'^format must be one of text, html, markdown; got "pdf"$'),
        ({"text": "你好", "glossary": ["人工智能"]}, r"^glossary must be an object of Chinese term -> English term"),
        ({"text": "你好", "glossary": {"人工智能": 3}}, r'^glossary\["人工智能"\] must be a non-empty string'),
        ({"text": "你好", "spans": "yes"}, r'^"spans" must be true or false; got a JSON string$'),
        ({"text": "你好", "protect_spans": 1}, r"^protect_spans must be true or false; got 1$"),
    ],
    ids=["format", "glossary-type", "glossary-target", "spans", "protect_spans"],
)
def test_bad_fidelity_options_say_what_is_allowed(client: HttpClient, payload: dict[str, Any], message: str) -> None:
    assert_error(post_json(client, payload), 400, "invalid_request", message)


# --- file events --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "text", "format"), [("page.html", HTML, "html"), ("notes.md", MARKDOWN, "markdown")])
def test_uploaded_html_and_markdown_keep_their_markup(
    backend: Any,  # noqa: F811  (the fixture imported above)
    startup: Startup,
    key: str,
    text: str,
    format: str,
) -> None:
    bucket = backend.bucket()
    backend.put(bucket, key, text.encode("utf-8"))
    backend.deliver(backend.adapter(startup), bucket, key)
    translation = backend.get(bucket, f"translated/{key}").data.decode("utf-8")
    assert skeleton(translation, format) == skeleton(text, format)
    assert translation != text


def test_uploaded_text_keeps_its_spans(backend: Any, startup: Startup) -> None:  # noqa: F811
    bucket = backend.bucket()
    backend.put(bucket, "links.txt", (URL_SENTENCE + "\n").encode("utf-8"))
    backend.deliver(backend.adapter(startup), bucket, "links.txt")
    translation = backend.get(bucket, "translated/links.txt").data.decode("utf-8")
    assert "https://example.com/docs?id=42" in translation and "zhang.wei@example.cn" in translation


# --- CLI ----------------------------------------------------------------------------------------------------------
def test_cli_translates_markup_by_suffix_and_takes_a_glossary(tmp_path: Path, adapter_env: dict[str, str]) -> None:
    page = tmp_path / "page.html"
    page.write_text(HTML, encoding="utf-8")
    glossary = tmp_path / "terms.json"
    glossary.write_text(json.dumps({"朋友": "FRIENDS"}, ensure_ascii=False), encoding="utf-8")
    result = run_cli(["translate", str(page), "--glossary", str(glossary)], adapter_env)
    assert result.returncode == 0, result.stderr.decode()
    translation = result.stdout.decode("utf-8")
    assert skeleton(translation, "html") == skeleton(HTML, "html")
    assert "FRIENDS" in translation
    as_text = run_cli(["translate", "-", "--format", "text"], adapter_env, stdin=URL_SENTENCE.encode("utf-8"))
    assert "https://example.com/docs?id=42" in as_text.stdout.decode("utf-8")


def test_cli_reports_a_bad_glossary_file(tmp_path: Path, adapter_env: dict[str, str]) -> None:
    glossary = tmp_path / "terms.tsv"
    glossary.write_text("no tab here\n", encoding="utf-8")
    result = run_cli(["translate", "-", "--glossary", str(glossary)], adapter_env, stdin="你好".encode())
    assert result.returncode != 0
    assert "line 1 has no tab" in result.stderr.decode("utf-8")
