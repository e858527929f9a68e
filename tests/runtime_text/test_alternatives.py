"""Alternatives (``TranslationService.translate_alternatives``, LibreTranslate's ``alternatives``) on the shipped
model: distinct, none the main translation, at most the count asked for, the same on every call, every protected
span and glossary term kept in each, and in a text of several sentences one sentence varied at a time."""

from __future__ import annotations

import pytest

from handler.errors import InvalidRequestError
from handler.service import MAX_ALTERNATIVES, TextAlternatives, TranslateOptions
from handler.text.glossary import Glossary
from tests.fuzz.shipped import NEEDS_SHIPPED_BUNDLE, shipped_model, shipped_service

pytestmark = NEEDS_SHIPPED_BUNDLE

WEATHER = "今天天气很好。"
THREE = ["今天天气很好。", "我们去公园散步吧。", "他不想去。"]


def test_alternatives_are_distinct_other_translations_and_bounded() -> None:
    service = shipped_service()
    [found] = service.translate_alternatives([WEATHER], None, 3)
    assert found.text == service.translate(WEATHER)  # the main translation is the ordinary one
    assert len(found.alternatives) == 3  # the shipped model has more than three for this sentence
    assert len(set(found.alternatives)) == 3 and found.text not in found.alternatives
    assert all(alternative.strip() for alternative in found.alternatives)
    [more] = service.translate_alternatives([WEATHER], None, MAX_ALTERNATIVES)
    assert len(more.alternatives) <= MAX_ALTERNATIVES and len(set(more.alternatives)) == len(more.alternatives)
    assert more.text not in more.alternatives


def test_alternatives_are_deterministic() -> None:
    first = shipped_service().translate_alternatives([WEATHER, "我们去公园散步吧。"], None, 4)
    again = shipped_service().translate_alternatives([WEATHER, "我们去公园散步吧。"], None, 4)
    assert first == again
    # the same on a warm service, whose memory now holds the main translations
    service = shipped_service()
    service.translate_many([WEATHER])
    assert service.translate_alternatives([WEATHER, "我们去公园散步吧。"], None, 4) == first


@pytest.mark.parametrize("count", [MAX_ALTERNATIVES + 1, 10_000, -1, True, 2.5, "3"])
def test_a_count_out_of_range_is_refused(count: object) -> None:
    with pytest.raises(InvalidRequestError, match=f"an integer from 0 to {MAX_ALTERNATIVES}"):
        shipped_service().translate_alternatives([WEATHER], None, count)  # type: ignore[arg-type]


def test_no_alternatives_asked_is_the_plain_translation() -> None:
    service = shipped_service()
    assert service.translate_alternatives([WEATHER, "Hello"], None, 0) == [
        TextAlternatives(service.translate(WEATHER)),
        TextAlternatives("Hello"),
    ]


def test_a_text_without_chinese_has_none() -> None:
    assert shipped_service().translate_alternatives(["Hello, world", ""], None, 3) == [
        TextAlternatives("Hello, world"),
        TextAlternatives(""),
    ]


def test_every_alternative_keeps_the_protected_spans_and_glossary_terms() -> None:
    # GIVEN a sentence with a URL, a date and a term of the request's glossary, and a deployment glossary term
    service = shipped_service()
    service.glossary = Glossary((("公园", "Central Park"),))
    text = "人工智能让我们在2026年3月访问了https://example.com/a?b=1，然后去公园。"
    options = TranslateOptions(glossary={"人工智能": "AI-term"})
    [found] = service.translate_alternatives([text], options, 4)
    assert found.alternatives  # the model has other translations of it
    for english in (found.text, *found.alternatives):
        assert "https://example.com/a?b=1" in english and "2026" in english
        assert "AI-term" in english and "Central Park" in english
        assert "人工智能" not in english


def test_in_a_text_of_several_sentences_one_sentence_varies() -> None:
    service = shipped_service()
    text = "".join(THREE)
    [found] = service.translate_alternatives([text], None, 3)
    alone = {sentence: service.translate_alternatives([sentence], None, MAX_ALTERNATIVES)[0] for sentence in THREE}
    assert found.text == " ".join(alone[sentence].text for sentence in THREE)
    assert found.alternatives
    varied = set()
    for alternative in found.alternatives:
        # exactly one sentence's translation is replaced, by one of that sentence's own alternatives
        matches = [
            index
            for index, sentence in enumerate(THREE)
            for other in alone[sentence].alternatives
            if alternative == " ".join(other if i == index else alone[s].text for i, s in enumerate(THREE))
        ]
        assert len(matches) == 1, alternative
        varied.add(matches[0])
    assert len(varied) == 1  # every alternative varies the same sentence


def test_html_alternatives_keep_the_markup() -> None:
    [found] = shipped_service().translate_alternatives(
        ["<p>今天天气<b>很好</b>。</p>"], TranslateOptions(format="html"), 3
    )
    assert found.alternatives
    for english in (found.text, *found.alternatives):
        assert english.startswith("<p>") and english.endswith("</p>") and "<b>" in english


def test_traditional_text_has_the_simplified_texts_alternatives() -> None:
    service = shipped_service()
    assert service.translate_alternatives(["今天天氣很好。"], None, 3) == service.translate_alternatives(
        [WEATHER], None, 3
    )


def test_without_span_protection_the_raw_hypotheses_are_the_alternatives() -> None:
    [found] = shipped_service().translate_alternatives([WEATHER], TranslateOptions(protect_spans=False), 3)
    assert len(found.alternatives) == 3 and found.text not in found.alternatives


def test_the_memory_is_neither_read_nor_filled_by_the_alternatives_search() -> None:
    # GIVEN a service whose memory holds the main translation of the sentence
    service = shipped_service()
    service.translate(WEATHER)
    held = len(service.memory)
    # WHEN alternatives are asked THEN the memory holds no more entries than the main path put there
    service.translate_alternatives([WEATHER], None, 5)
    assert len(service.memory) == held
    assert shipped_model() is service.model


@pytest.mark.parametrize("text", ["今天天气很好。See you at 10:30.", "See you at 10:30. 今天天气很好。"])
def test_the_varied_sentence_is_the_one_with_other_translations(text: str) -> None:
    # GIVEN a sentence the model has other translations of and one without Chinese (kept as it is), either order
    service = shipped_service()
    [found] = service.translate_alternatives([text], None, 2)
    [weather] = service.translate_alternatives([WEATHER], None, 2)
    # THEN the alternatives vary the Chinese sentence wherever it stands, the other kept
    assert found.alternatives == tuple(found.text.replace(weather.text, other) for other in weather.alternatives)
    assert all("See you at 10:30." in alternative for alternative in found.alternatives)
