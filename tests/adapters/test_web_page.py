"""The two-pane page in headless Chromium (Debian's ``chromium``, driven by Playwright), served by the local
function under functions-framework exactly as ``make run`` serves it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect, sync_playwright

from handler.config import DEFAULT_BUNDLE_DIR
from handler.model.bundle import MANIFEST
from tests.adapters.conftest import MAX_CHARS, function_env, start_functions_framework

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
CJK = re.compile(r"[\u3400-\u9fff]")


@contextlib.contextmanager
def launched_chromium() -> Iterator[Any]:
    """Debian's chromium, headless, driven by Playwright (the test is skipped where it is not installed)."""
    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@contextlib.contextmanager
def new_page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        yield context.new_page()
    finally:
        context.close()


def console_messages(page: Any) -> list[str]:
    """The page's console messages and uncaught exceptions, from now on."""
    messages: list[str] = []
    page.on("console", lambda message: messages.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: messages.append(f"pageerror: {error}"))
    return messages


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
    """The page's console errors and uncaught exceptions."""
    return console_messages(page)


def wait_for_output(page: Any) -> str:
    # locator assertions, not wait_for_function: the page's Content-Security-Policy forbids eval, and stays on
    # (the English streams in sentence by sentence; the pane says data-state="done" once the translation is whole)
    expect(page.locator("#output")).to_have_attribute("data-state", "done", timeout=60_000)
    expect(page.locator("#output")).to_have_text(re.compile(r"\S"))
    return str(page.inner_text("#output"))


def test_type_chinese_press_translate_see_output(
    page: Any, console: list[str], functions_framework_url: str, tmp_path: Path
) -> None:
    page.goto(functions_framework_url + "/")
    expect(page.locator("#model")).to_have_text(re.compile(r"^model \S+ · bundle [0-9a-f]{16}$"))
    assert page.is_hidden("#licence-notice")  # the tiny bundle states no non-commercial licence
    page.fill("#source", "你好，世界。今天天气很好。")
    assert page.inner_text("#counter") == f"13 / {MAX_CHARS}"
    page.click("#translate")
    assert wait_for_output(page).strip()
    assert re.fullmatch(r"Translated in [\d,]+ ms \(model [\d,]+ ms\)", page.inner_text("#elapsed"))
    assert page.is_hidden("#error")
    assert page.is_enabled("#copy")
    screenshot = tmp_path / "page.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [m for m in console if m.startswith(("error", "pageerror"))], console  # CSP allows our script


def test_ctrl_enter_translates(page: Any, functions_framework_url: str) -> None:
    page.goto(functions_framework_url + "/")
    page.fill("#source", "我们明天见。")
    page.press("#source", "Control+Enter")
    assert wait_for_output(page).strip()


def test_too_long_input_warns_and_shows_the_server_error(page: Any, functions_framework_url: str) -> None:
    page.goto(functions_framework_url + "/")
    page.fill("#source", "你好。")
    page.click("#translate")
    wait_for_output(page)
    # near the limit: a warning before the limit is reached
    page.fill("#source", "好" * (MAX_CHARS - 5))
    assert page.is_visible("#limit-warning") and "5 characters left" in page.inner_text("#limit-warning")
    assert "near" in (page.get_attribute("#counter", "class") or "")
    # over the limit: the warning names the limit and the variable, and the server's refusal is shown
    page.fill("#source", "好" * (MAX_CHARS + 10))
    warning = page.inner_text("#limit-warning")
    assert f"10 characters over the limit of {MAX_CHARS}" in warning and "TRANSLATE_MAX_CHARS" in warning
    page.click("#translate")
    page.wait_for_selector("#error", state="visible", timeout=60_000)
    error = page.inner_text("#error")
    assert error.startswith("Error 413:") and "TRANSLATE_MAX_CHARS" in error
    assert page.inner_text("#output") == ""  # the earlier text's translation is gone, the error is shown
    assert page.is_disabled("#copy")


def test_empty_input_is_explained(page: Any, functions_framework_url: str) -> None:
    page.goto(functions_framework_url + "/")
    page.click("#translate")
    assert "Type or paste some Chinese text first" in page.inner_text("#error")


def test_beam_selector_offers_one_to_eight(page: Any, functions_framework_url: str) -> None:
    page.goto(functions_framework_url + "/")
    values = [option.get_attribute("value") for option in page.locator("#beam option").all()]
    assert values == [str(size) for size in range(1, 9)]
    page.select_option("#beam", "1")
    page.fill("#source", "谢谢。")
    page.click("#translate")
    assert wait_for_output(page).strip()


@pytest.fixture(scope="module")
def shipped_model_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not (DEFAULT_BUNDLE_DIR / MANIFEST).exists():
        pytest.skip(f"the shipped bundle {DEFAULT_BUNDLE_DIR} is not built yet (no {MANIFEST})")
    env = function_env(DEFAULT_BUNDLE_DIR, TRANSLATE_MAX_CHARS="20000", TRANSLATE_MAX_TEXTS="64")
    server, url = start_functions_framework("translate_http", env, tmp_path_factory.mktemp("ff-shipped"))
    yield url
    server.stop()


@pytest.mark.shipped_model
def test_shipped_model_gives_english_in_the_page(page: Any, shipped_model_url: str, console: list[str]) -> None:
    page.goto(shipped_model_url + "/")
    # the header says it is a non-commercial demo and how to build a production model, commands set as code
    notice = page.locator("#licence-notice")
    expect(notice).to_be_visible()
    expect(notice).to_have_text(re.compile(r"^Non-commercial demo model \(CC BY-NC-SA 4\.0\): not for commercial use;"))
    assert notice.locator("code").first.inner_text() == "make model MODEL=Helsinki-NLP/opus-mt-zh-en"
    assert "`" not in notice.inner_text()
    page.fill("#source", "你好，世界。")
    page.click("#translate")
    english = wait_for_output(page)
    assert re.search(r"[A-Za-z]{2,}", english) and not CJK.search(english), english
    assert not [m for m in console if m.startswith(("error", "pageerror"))], console  # CSP allows the notice's code


# --- translate as you type, highlights ------------------------------------------------------------------------
URL_SENTENCE = "请访问 https://example.com/docs?id=42 获取更多信息，人工智能很重要。"


def test_typing_translates_after_a_pause_and_highlights_protected_spans(
    page: Any, functions_framework_url: str, console: list[str]
) -> None:
    # GIVEN the page WHEN Chinese with a URL is typed and no button is pressed
    page.goto(functions_framework_url + "/")
    page.fill("#source", URL_SENTENCE)
    # THEN the translation appears, the URL intact and highlighted as a protected span
    expect(page.locator("#output mark.url")).to_have_text("https://example.com/docs?id=42", timeout=60_000)
    assert "https://example.com/docs?id=42" in page.inner_text("#output")
    assert not [message for message in console if message.startswith(("error", "pageerror"))], console


def test_the_last_request_wins(page: Any, functions_framework_url: str) -> None:
    # GIVEN a translation on its way WHEN another text is asked for before it arrives
    page.goto(functions_framework_url + "/")
    page.uncheck("#live")
    page.fill("#source", "好" * 1500 + "。")  # slow
    page.click("#translate")
    page.fill("#source", "编号 12345。")
    page.click("#translate")
    # THEN only the newer text's translation is shown, whatever order the answers come in
    expect(page.locator("#output mark.number")).to_have_text("12345", timeout=60_000)
    page.wait_for_timeout(3_000)  # the slow answer has had time to arrive, and is dropped
    assert "12345" in page.inner_text("#output")


def test_format_selector_keeps_markup(page: Any, functions_framework_url: str) -> None:
    page.goto(functions_framework_url + "/")
    page.select_option("#format", "html")
    page.fill("#source", '<p><a href="https://example.com/x">世界</a></p>')
    expect(page.locator("#output")).to_contain_text('<a href="https://example.com/x">', timeout=60_000)
    assert page.inner_text("#output").startswith("<p><a ")


@pytest.mark.shipped_model
def test_past_the_typing_limit_the_old_english_is_marked_as_an_earlier_texts(
    page: Any, shipped_model_url: str, console: list[str]
) -> None:
    # GIVEN a text translated as it was typed
    page.goto(shipped_model_url + "/")
    page.fill("#source", "今天天气很好。")
    expect(page.locator("#output")).to_have_attribute("data-state", "done", timeout=60_000)
    english = page.inner_text("#output")
    # WHEN it grows past the 2,000 characters translated as you type
    page.fill("#source", "今天天气很好。" * 300)
    # THEN the English is not passed off as the new text's: greyed, and a notice says why and what to use instead
    expect(page.locator("#output")).to_have_attribute("data-state", "stale", timeout=10_000)
    notice = page.locator("#stale-notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("translation of an earlier text")
    expect(notice).to_contain_text("press Translate")
    expect(notice).to_contain_text("POST /v2/document")
    expect(notice).to_contain_text("python -m handler translate FILE")
    assert page.inner_text("#output") == english
    # and pressing Translate replaces it with the new text's English, the notice gone
    page.click("#translate")
    expect(page.locator("#output")).to_have_attribute("data-state", "done", timeout=120_000)
    expect(notice).to_be_hidden()
    assert len(page.inner_text("#output")) > 10 * len(english)
    assert not [message for message in console if message.startswith(("error", "pageerror"))], console


# --- confidence -----------------------------------------------------------------------------------------------
UNSURE_THEN_SURE = "哈哈哈哈哈哈哈哈哈哈哈哈。今天天气很好。"  # the default model loops on the first (the guard fires)


@pytest.mark.shipped_model
def test_unsure_sentences_are_underlined_and_hovering_shows_their_source(
    page: Any, shipped_model_url: str, console: list[str]
) -> None:
    # GIVEN the shipped model WHEN a sentence it loops on and a plain one are translated
    page.goto(shipped_model_url + "/")
    page.fill("#source", UNSURE_THEN_SURE)
    page.click("#translate")
    segments = page.locator("#output .segment")
    expect(segments).to_have_count(2, timeout=60_000)
    # THEN the first is underlined with a tooltip that says why, the second is not
    first, second = segments.nth(0), segments.nth(1)
    expect(first).to_have_class(re.compile(r"\bunsure\b"))
    assert "repetition guard" in (first.get_attribute("title") or "")
    assert (first.get_attribute("title") or "").startswith("Check this sentence:")
    assert "unsure" not in (second.get_attribute("class") or "")
    assert re.fullmatch(r"confidence 0\.\d\d", second.get_attribute("title") or "")
    # the sentences together are the whole translation
    assert page.inner_text("#output") == first.inner_text() + " " + second.inner_text()
    # hovering a sentence marks its source behind the text area; leaving clears it
    first.hover()
    expect(page.locator("#source-highlight mark")).to_have_text("哈哈哈哈哈哈哈哈哈哈哈哈。")
    second.hover()
    expect(page.locator("#source-highlight mark")).to_have_text("今天天气很好。")
    page.hover("#translate")
    expect(page.locator("#source-highlight mark")).to_have_count(0)
    # once the text changes, the old offsets no longer apply: nothing is marked
    page.uncheck("#live")
    page.fill("#source", "改了。" + UNSURE_THEN_SURE)
    second.hover()
    expect(page.locator("#source-highlight mark")).to_have_count(0)
    assert not [message for message in console if message.startswith(("error", "pageerror"))], console
