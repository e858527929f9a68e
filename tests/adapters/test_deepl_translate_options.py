"""DeepL's ``/v2/translate`` and ``/v2/document`` options as the official ``deepl`` client (unmodified, from PyPI)
sends them, against the local server on loopback: the detected language from the text (``detected_source_language``,
English passing through untranslated), ``formality`` checked the same on both routes as DeepL checks it for a
target without formality, and ``model_type_used`` answered when ``model_type`` is sent.

What the client does is read from deepl-python 1.32 (deepl/translator.py: ``translate_text`` sends ``formality``
lower-cased and ``model_type`` as given, and reads ``detected_source_language`` and ``model_type_used`` from each
translation); what DeepL answers, from its tests (tests/test_translate_text.py: ``formality="more"`` with target
``EN-US`` raises a ``DeepLException`` matching ``Target language.*formality``, ``prefer_more`` on a target without
formality is no error, and every ``ModelType`` gets a ``model_type_used``).

The model is the tiny random bundle (gibberish English), so a translated text is anything but its input.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import deepl
import pytest

from handler.adapters.local_server import make_server
from handler.api.compat.deepl import detected_language
from handler.api.router import HttpApi
from handler.coldstart import Startup


@pytest.fixture(scope="module")
def base_url(startup: Startup) -> Iterator[str]:
    server = make_server(HttpApi(startup), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def client(url: str) -> deepl.Translator:
    return deepl.Translator("any-key", server_url=url, send_platform_info=False)


def post(url: str, path: str, payload: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(url + path, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:  # noqa: S310 - loopback
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


# --- detected_source_language ----------------------------------------------------------------------------------
def test_english_passes_through_and_is_detected_as_english(base_url: str) -> None:
    translator = client(base_url)
    texts = ["The meeting is at 10 a.m. in room 4.", "今天天气很好。", "Café crème, s'il vous plaît", "2024"]
    results = translator.translate_text(texts, target_lang="EN-US")
    assert [result.detected_source_lang for result in results] == ["EN", "ZH", "EN", "ZH"]
    assert results[0].text == texts[0] and results[2].text == texts[2]  # untranslated, byte for byte
    assert results[1].text != texts[1]  # translated by the model
    assert [result.billed_characters for result in results] == [len(text) for text in texts]  # DeepL bills them too
    # the Chinese text's translation is the one it gets alone: the English texts do not shift the batch
    assert translator.translate_text(texts[1], target_lang="EN-US").text == results[1].text


def test_a_text_with_any_han_character_is_chinese_and_translated(base_url: str) -> None:
    result = client(base_url).translate_text("Please call 王先生 tomorrow", target_lang="EN-GB")
    assert result.detected_source_lang == "ZH" and result.text != "Please call 王先生 tomorrow"


def test_with_source_lang_the_answer_names_it_and_english_still_passes_through(base_url: str) -> None:
    result = client(base_url).translate_text("Hello, world", source_lang="ZH", target_lang="EN-US")
    assert (result.detected_source_lang, result.text) == ("ZH", "Hello, world")


def test_html_tags_do_not_make_a_chinese_text_english(base_url: str) -> None:
    translator = client(base_url)
    chinese = translator.translate_text("<p><b>你好</b></p>", target_lang="EN-US", tag_handling="html")
    assert chinese.detected_source_lang == "ZH"
    english = translator.translate_text("<p>Hello <b>there</b></p>", target_lang="EN-US", tag_handling="html")
    assert (english.detected_source_lang, english.text) == ("EN", "<p>Hello <b>there</b></p>")


def test_the_rule_for_english() -> None:
    assert detected_language("Hello") == "EN"
    assert detected_language("Ça va? Très bien.") == "EN"  # accented Latin letters are Latin
    assert detected_language("你") == "ZH"
    assert detected_language("Hello 你") == "ZH"  # one Han character: Chinese
    assert detected_language("") == "ZH" and detected_language("42 %!") == "ZH"  # no letter: no language to tell
    assert detected_language("Привет") == "ZH"  # letters, but not Latin: not English
    assert detected_language("ab Привет") == "ZH" and detected_language("abcdef Пр") == "EN"  # the majority decides
    assert detected_language("<p>你好</p>", markup=True) == "ZH"
    assert detected_language("<span class='x'>&amp;&nbsp;</span>", markup=True) == "ZH"  # only markup: no letter


# --- formality -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("formality", ["more", "less", deepl.Formality.MORE, deepl.Formality.LESS, "More"])
def test_more_and_less_are_refused_for_english_on_translate(base_url: str, formality: Any) -> None:
    with pytest.raises(deepl.DeepLException, match=r"Target language.*formality") as raised:
        client(base_url).translate_text("你好", target_lang="EN-US", formality=formality)
    assert raised.value.http_status_code == 400


@pytest.mark.parametrize("formality", ["more", "less"])
def test_more_and_less_are_refused_the_same_on_documents(base_url: str, formality: str) -> None:
    with pytest.raises(deepl.DeepLException, match=r"Target language.*formality") as raised:
        client(base_url).translate_document_upload("你好".encode(), target_lang="EN-US", filename="a.txt",
                                                   formality=formality)  # fmt: skip
    assert raised.value.http_status_code == 400


@pytest.mark.parametrize("formality", list(deepl.Formality))
def test_every_formality_deepl_accepts_for_english_passes_on_both_routes(base_url: str, formality: Any) -> None:
    if formality in (deepl.Formality.MORE, deepl.Formality.LESS):
        return  # refused above
    translator = client(base_url)
    plain = translator.translate_text("你好", target_lang="EN-US").text
    assert translator.translate_text("你好", target_lang="EN-US", formality=formality).text == plain
    handle = translator.translate_document_upload("你好".encode(), target_lang="EN-US", filename="a.txt",
                                                  formality=formality)  # fmt: skip
    assert handle.document_id


def test_an_unknown_formality_is_refused_on_both_routes(base_url: str) -> None:
    translator = client(base_url)
    with pytest.raises(deepl.DeepLException, match="formality") as raised:
        translator.translate_text("你好", target_lang="EN-US", formality="invalid")
    assert raised.value.http_status_code == 400
    with pytest.raises(deepl.DeepLException, match="formality") as raised:
        translator.translate_document_upload(b"x", target_lang="EN-US", filename="a.txt", formality="invalid")
    assert raised.value.http_status_code == 400


# --- model_type ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model_type", list(deepl.ModelType))
def test_model_type_used_is_answered_when_model_type_is_sent(base_url: str, model_type: deepl.ModelType) -> None:
    translator = client(base_url)
    results = translator.translate_text(["你好", "Hello"], target_lang="EN-US", model_type=model_type)
    assert [result.model_type_used for result in results] == ["latency_optimized"] * 2  # one classic model


def test_model_type_used_is_absent_without_model_type(base_url: str) -> None:
    assert client(base_url).translate_text("你好", target_lang="EN-US").model_type_used is None
    status, answer = post(base_url, "/v2/translate", {"text": ["你好"], "target_lang": "EN-US"})
    assert status == 200 and "model_type_used" not in answer["translations"][0]


def test_an_unknown_model_type_is_refused(base_url: str) -> None:
    status, answer = post(base_url, "/v2/translate", {"text": ["你好"], "target_lang": "EN-US", "model_type": "fast"})
    assert status == 400 and "model_type" in answer["message"]
