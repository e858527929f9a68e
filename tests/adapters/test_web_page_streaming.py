"""The page streams: headless Chromium (``tests/adapters/test_web_page.py``'s browser) on the local server (the
reference streaming adapter, in this process so its access lines can be read), with the tiny bundle.

What the page shows is watched from inside it: a ``MutationObserver`` added before the page's own script (an init
script, which the page's Content-Security-Policy does not govern) records the English pane after every change: its
``data-state``, how many sentences it shows, the progress bar and the status line. The records are compared in the
order they happened, and with when the browser received the last byte of the answer, never with a duration.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from handler.adapters.local_server import make_server
from handler.api.messages import HttpError, HttpRequest, HttpResponse
from handler.api.router import HttpApi
from handler.coldstart import Startup, start
from handler.config import RuntimeConfig
from handler.errors import TranslatorError
from handler.service import TranslationService
from tests.adapters.conftest import function_env
from tests.adapters.test_web_page import console_messages, launched_chromium, new_page
from tests.fixture_corpus import fixture_pairs

pytestmark = [pytest.mark.slow, pytest.mark.browser]

MAX_CHARS = 20_000
ACCESS_LOGGER = "handler.access"

# records the English pane after every change, from before the page's own script runs
WATCH_THE_PANE = """
window.paneRecords = [];
document.addEventListener("DOMContentLoaded", () => {
  const output = document.getElementById("output"), progress = document.getElementById("progress");
  const elapsed = document.getElementById("elapsed");
  const record = () => window.paneRecords.push({
    state: output.dataset.state || "",
    sentences: output.querySelectorAll(".segment").length,
    text: output.textContent,
    progressShown: !progress.hidden,
    progressDone: progress.value,
    progressTotal: progress.max,
    status: elapsed.textContent,
    at: performance.now(),
  });
  const watch = { childList: true, subtree: true, characterData: true, attributes: true };
  new MutationObserver(record).observe(output, watch);
  new MutationObserver(record).observe(progress, { attributes: true });
  new MutationObserver(record).observe(elapsed, { childList: true, subtree: true, characterData: true });
});
"""


def sentences(count: int, start: int = 0) -> list[str]:
    """``count`` of the suite's Chinese sentences, each ending in a full stop (one streamed unit each)."""
    chosen = [pair.zh.strip() for pair in fixture_pairs()[start : start + count]]
    return [s if s.endswith(("。", "？", "！")) else s.rstrip("，,.;；") + "。" for s in chosen]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched_chromium() as launched:
        yield launched


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with new_page(browser) as opened:
        yield opened


@pytest.fixture
def console(page: Any) -> list[str]:
    return console_messages(page)


class _Server:
    def __init__(self, api: HttpApi) -> None:
        self.httpd = make_server(api, "127.0.0.1", 0)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def streaming_config(tiny_bundle_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> RuntimeConfig:
    state = tmp_path_factory.mktemp("stream-state")
    return RuntimeConfig.from_env(
        function_env(tiny_bundle_dir, TRANSLATE_MAX_CHARS=str(MAX_CHARS), TRANSLATE_STATE_DIR=str(state))
    )


def own_startup(config: RuntimeConfig) -> Startup:
    """A startup with this module's limits: a service of its own on the process's warm model (the warm service, which
    another test may have made first, keeps the limits it was made with)."""
    warm = start(config)
    assert warm.service is not None, warm.error
    return Startup(config, TranslationService(warm.service.model, config), None, warm.start_s)


@pytest.fixture(scope="module")
def local_url(streaming_config: RuntimeConfig) -> Iterator[str]:
    """The local server (chunked transfer) with room for long texts."""
    server = _Server(HttpApi(own_startup(streaming_config)))
    yield server.url
    server.stop()


class _PastDeadlineApi(HttpApi):
    """The API behind an adapter whose time limit has already run out: a streamed translation begins (200, the
    headers) and its decoding is stopped before the first batch, so the answer's only line is an error."""

    def handle(self, request: HttpRequest, refused: TranslatorError | HttpError | None = None) -> HttpResponse:
        return super().handle(dataclasses.replace(request, deadline=time.monotonic() - 1.0), refused=refused)


@pytest.fixture(scope="module")
def past_deadline_url(streaming_config: RuntimeConfig) -> Iterator[str]:
    server = _Server(_PastDeadlineApi(own_startup(streaming_config)))
    yield server.url
    server.stop()


def pane_records(shown: Any) -> list[dict[str, Any]]:
    return list(shown.evaluate("() => window.paneRecords"))


def translate_whole(url: str, text: str) -> dict[str, Any]:
    """The answer without ``stream``, with the options the page asks for (its default beam)."""
    body = json.dumps(
        {"text": text, "beam_size": RuntimeConfig().beam_size, "format": "text", "spans": True, "scores": True}
    ).encode()
    request = urllib.request.Request(url + "/translate", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return dict(json.loads(response.read()))


def page_errors(messages: list[str]) -> list[str]:
    return [message for message in messages if message.startswith(("error", "pageerror"))]


def test_the_first_sentence_is_on_screen_before_the_answer_is_complete(
    page: Any, console: list[str], local_url: str
) -> None:
    # GIVEN the page on a streaming server and a text of 45 sentences
    text = "".join(sentences(45))
    page.add_init_script(WATCH_THE_PANE)
    page.goto(local_url + "/")
    page.uncheck("#live")
    page.fill("#source", text)
    # WHEN it is translated
    page.click("#translate")
    expect(page.locator("#output")).to_have_attribute("data-state", "done", timeout=120_000)
    records = pane_records(page)
    answer_ends = page.evaluate(
        "() => performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/translate'))"
        ".map((e) => e.responseEnd)"
    )
    # THEN the first English sentence was on screen while more was still to come: the pane said streaming, the
    # progress bar showed part of the characters done, and the browser had not yet received the answer's end
    first = next(record for record in records if record["sentences"] >= 1)
    final = records[-1]
    assert first["state"] == "streaming", first
    assert first["sentences"] < final["sentences"], (first, final)
    assert first["progressShown"] and 0 < first["progressDone"] < first["progressTotal"], first
    assert len(answer_ends) == 1 and first["at"] < answer_ends[0], (first["at"], answer_ends)
    # the sentences came one window at a time, the characters done counted on the way
    counts = sorted({record["sentences"] for record in records if record["state"] == "streaming"})
    assert len(counts) >= 3, counts
    statuses = [record["status"] for record in records if record["status"].startswith("Translated ")]
    assert any(re.fullmatch(r"Translated [\d,]+ of [\d,]+ characters…", status) for status in statuses), statuses
    # and the last line's whole answer is rendered exactly as without streaming: its sentences, its scores
    whole = translate_whole(local_url, text)
    assert page.inner_text("#output") == whole["translation"]
    assert final["state"] == "done" and not final["progressShown"], final
    assert page.locator("#output .segment").count() == len(whole["scores"]) == final["sentences"] >= 40
    assert page.locator("#output .streamed").count() == 0  # the streamed preview is gone, replaced whole
    assert re.fullmatch(r"Translated in [\d,]+ ms \(model [\d,]+ ms\)", page.inner_text("#elapsed"))
    assert page.is_enabled("#copy") and page.is_hidden("#error")
    assert not page_errors(console), console  # the Content-Security-Policy allows all of it


def test_changing_the_text_mid_stream_stops_it_and_shows_only_the_new_translation(
    page: Any, console: list[str], local_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a long text streaming into the page
    first_sentences = sentences(200, start=100)
    old_text = "".join(first_sentences)
    new_text = first_sentences[0] + "".join(sentences(6, start=50))  # its first sentence was done by then
    page.add_init_script(WATCH_THE_PANE)
    page.goto(local_url + "/")
    page.uncheck("#live")
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        page.fill("#source", old_text)
        page.click("#translate")
        expect(page.locator("#output[data-state=streaming] .segment").first).to_be_visible(timeout=120_000)
        # WHEN the text changes while its translation is arriving (and the new one is asked for)
        page.fill("#source", new_text)
        expect(page.locator("#output")).to_have_attribute("data-state", "stopped")
        assert page.inner_text("#elapsed") == "Stopped: the text changed."
        page.click("#translate")
        expect(page.locator("#output")).to_have_attribute("data-state", "done", timeout=120_000)
        # THEN the old stream was closed by the page, and the server stopped it before its end
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(_streamed_lines(caplog)) < 2:
            time.sleep(0.2)
        old_line, new_line = _streamed_lines(caplog)
    assert old_line.streamed == "closed by the client", vars(old_line)
    assert new_line.streamed == "complete", vars(new_line)
    # the translation memory kept what was done: the new text's first sentence came back without decoding
    assert new_line.segments_from_memory >= 1, vars(new_line)
    # the page shows the new text's translation only, exactly, never a mix with the old one: from the stop on, the
    # pane held the old text's part (greyed), then nothing but the start of the new text's translation
    english = translate_whole(local_url, new_text)["translation"]
    assert page.inner_text("#output") == english
    after_change = _records_after_the_stop(pane_records(page))
    assert all(record["state"] in ("stopped", "streaming", "done") for record in after_change), after_change
    streamed_new = [record for record in after_change if record["state"] == "streaming"]
    assert streamed_new and all(english.startswith(record["text"]) for record in streamed_new), streamed_new
    assert not page_errors(console), console


def _streamed_lines(caplog: pytest.LogCaptureFixture) -> list[Any]:
    return [
        record
        for record in caplog.records
        if record.name == ACCESS_LOGGER
        and getattr(record, "route", None) == "/translate"
        and hasattr(record, "streamed")
    ]


def _records_after_the_stop(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    stopped = next(index for index, record in enumerate(records) if record["state"] == "stopped")
    return records[stopped:]


def test_an_error_line_is_shown_as_the_page_shows_errors(page: Any, console: list[str], past_deadline_url: str) -> None:
    # GIVEN a server whose time limit has run out WHEN a text is translated
    page.goto(past_deadline_url + "/")
    page.uncheck("#live")
    page.fill("#source", "".join(sentences(3, start=300)))
    page.click("#translate")
    # THEN the stream's error line is the page's error, the pane empty
    page.wait_for_selector("#error", state="visible", timeout=60_000)
    assert page.inner_text("#error").startswith("Error (deadline_exceeded): ")
    assert "deadline" in page.inner_text("#error")
    expect(page.locator("#output")).to_have_attribute("data-state", "error")
    assert page.inner_text("#output") == ""
    assert page.is_disabled("#copy") and page.is_hidden("#progress")
    assert not page_errors(console), console
