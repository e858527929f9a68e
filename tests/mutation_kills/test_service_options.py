"""``TranslateOptions``: each option's allowed range at its edges, and messages that say what to send instead."""

from __future__ import annotations

import pytest

from handler.errors import InvalidRequestError
from handler.service import TranslateOptions
from handler.text.glossary import Glossary

ALLOWED = (
    "beam_size, length_penalty, max_length_ratio, repetition_guard, format, glossary, protect_spans, source, scores"
)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"beam_size": 0}, "beam_size must be an integer from 1 to 8; got 0"),
        ({"beam_size": 9}, "beam_size must be an integer from 1 to 8; got 9"),
        ({"beam_size": True}, "beam_size must be an integer from 1 to 8; got true"),
        ({"beam_size": 2.0}, "beam_size must be an integer from 1 to 8; got 2.0"),
        ({"length_penalty": -0.1}, "length_penalty must be a number from 0.0 to 2.0; got -0.1"),
        ({"length_penalty": 2.5}, "length_penalty must be a number from 0.0 to 2.0; got 2.5"),
        ({"length_penalty": "1"}, 'length_penalty must be a number from 0.0 to 2.0; got "1"'),
        ({"max_length_ratio": 0.9}, "max_length_ratio must be a number from 1.0 to 4.0; got 0.9"),
        ({"max_length_ratio": 4.5}, "max_length_ratio must be a number from 1.0 to 4.0; got 4.5"),
        ({"protect_spans": 1}, "protect_spans must be true or false; got 1"),
        ({"repetition_guard": "no"}, 'repetition_guard must be true or false; got "no"'),
        ({"format": "pdf"}, 'format must be one of text, html, markdown; got "pdf"'),
        ({"bogus": 1}, f"unknown option bogus; allowed options: {ALLOWED}"),
        ({"zz": 2, "bogus": 1}, f"unknown options bogus, zz; allowed options: {ALLOWED}"),
    ],
)
def test_a_bad_option_is_refused_saying_what_is_allowed(options: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        TranslateOptions.from_mapping(options)
    assert str(caught.value) == message


def test_the_edges_of_each_range_are_allowed() -> None:
    for beam in (1, 8):
        assert TranslateOptions(beam_size=beam).beam_size == beam
    for value in (0.0, 2.0):
        assert TranslateOptions(length_penalty=value).length_penalty == value
    for value in (1.0, 4.0):
        assert TranslateOptions(max_length_ratio=value).max_length_ratio == value


def test_null_means_the_default_and_mappings_become_glossaries() -> None:
    options = TranslateOptions.from_mapping({"beam_size": None, "max_length_ratio": None, "length_penalty": None})
    assert (options.beam_size, options.max_length_ratio, options.length_penalty) == (None, 2.0, None)
    options = TranslateOptions.from_mapping({"glossary": {"模型": "model"}, "source": "zh-tw"})
    assert options.glossary == Glossary(terms=(("模型", "model"),))
    assert options.source == "zh-TW"
