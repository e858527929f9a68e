"""The issue-25 classes of the fidelity set through the shipped default model: every span as English writes it.

The same scoring as ``make fidelity`` (``bench.quality.fidelity.score``), on the rows of the classes that came
with issue 25 (currency signs, operators inside code-like tokens, inline math, angle brackets, ranges with a
Chinese unit), with the defaults: protection on, the model's own words where it kept the spans, placeholders or
stitching where it did not.
"""

from __future__ import annotations

import pytest

from bench.quality.fidelity import load_set, score, translate_items
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service

NEW_CLASSES = ("currency", "operator", "math", "angle", "range")


@needs_shipped_bundle
@pytest.mark.parametrize("kind", NEW_CLASSES)
def test_every_span_of_the_class_comes_through_the_shipped_model(kind: str) -> None:
    items = [item for item in load_set() if item["class"] == kind]
    assert len(items) >= 12  # several sentences per class, in different positions
    result = score(items, translate_items(shipped_service(), items, after=True))[kind]
    assert result.failures == []
    assert (result.exact, result.leaked) == (result.spans, 0)


KEPT_CLASSES = ("translate_no", "notranslate", "xml_inline", "ignore_tags")  # issue 32: text that stays as written


@needs_shipped_bundle
@pytest.mark.parametrize("kind", KEPT_CLASSES)
def test_text_that_must_stay_as_written_does_through_the_shipped_model(kind: str) -> None:
    # every kept element byte for byte, every inline tag once, and tagged XML that parses (scored as a span)
    items = [item for item in load_set() if item["class"] == kind]
    assert len(items) >= 5
    result = score(items, translate_items(shipped_service(), items, after=True))[kind]
    assert result.failures == []
    assert (result.exact, result.leaked) == (result.spans, 0)
