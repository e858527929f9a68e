"""Alternatives (``TranslationService.translate_alternatives``, LibreTranslate's ``alternatives``): up to
``MAX_ALTERNATIVES`` other translations of each text.

They come from a separate beam search of width ``min(MAX_BEAM_SIZE, max(beam_size, 2 * count))`` that keeps every
finished hypothesis of each segment (``Decoding.search_n_best``: ``NBestSearch``), never from or into the
translation memory (which holds one best translation per segment). Each hypothesis goes through the same
protected-span rounds as the main translation (URLs, numbers, glossary terms...: ``handler.text.spans``), so an
alternative keeps every span the main translation keeps (``other_translations``). A text's alternatives vary one
segment: the segment with the most distinct translations other than the main one (the first such segment on a tie;
every occurrence of that sentence in the text), every other segment keeping its main translation
(``vary_one_segment``); a text whose segments have no other translation (no Chinese, or the search found none) has
none. Alternatives are distinct, differ from the main translation, come in the search's order (best first) and are
the same for the same request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from handler.decoder import SearchKey
from handler.model.batching import WIDTH_MULTIPLE, Batch, restore_order
from handler.model.families.base import SearchRequest
from handler.model.loader import LoadedModel
from handler.text.markup import MarkupDocument
from handler.text.segmentation import Document
from handler.text.spans import Translation

# a model for translate_protected's rounds: model inputs in, cleaned English out
Model = Callable[[Sequence[str]], list[str]]


@dataclass(frozen=True)
class TextAlternatives:
    """One text's translation (as ``translate_many`` gives it) and up to the asked number of other translations."""

    text: str
    alternatives: tuple[str, ...] = ()


@dataclass(frozen=True)
class NBestSearch:
    """Each input's distinct cleaned translations, best first, from a search that keeps every finished hypothesis
    (the translation memory is neither read nor written). ``lock``: the model's, shared with the decoder (one batch
    at a time)."""

    model: Callable[[], LoadedModel]
    plan: Callable[[list[int], SearchKey], list[Batch]]
    encode: Callable[[list[str]], list[list[int]]]
    finish: Callable[[Sequence[int]], str]
    max_new_tokens: Callable[[int, float], int]
    lock: threading.Lock

    def ranked(self, inputs: Sequence[str], key: SearchKey) -> dict[str, list[str]]:
        texts = list(dict.fromkeys(inputs))
        encoded = self.encode(texts) if texts else []
        batches = self.plan([len(ids) for ids in encoded], key)
        outputs = []
        with self.lock:
            for batch in batches:
                rows = [encoded[index] for index in batch.indices]
                request = SearchRequest(
                    beam_size=key.beam_size,
                    # each row's own limit, from its own length: its output never depends on the batch it is in
                    max_new_tokens=tuple(self.max_new_tokens(len(row), key.max_length_ratio) for row in rows),
                    length_penalty=key.length_penalty,
                    repetition_guard=key.repetition_guard,
                )
                outputs.append(self.model().search_n_best(rows, request, key.beam_size, width_multiple=WIDTH_MULTIPLE))
        ranked = restore_order(batches, outputs, len(texts))
        return {
            text: list(dict.fromkeys(self.finish(h.ids) for h in hypotheses))
            for text, hypotheses in zip(texts, ranked, strict=True)
        }


def other_translations(
    sources: Sequence[str],
    main: Mapping[str, Translation],
    search: Callable[[Sequence[str]], dict[str, list[str]]],
    translate: Callable[[Sequence[str], Model], Mapping[str, Translation]],
    width: int,
) -> dict[str, list[str]]:
    """Each segment's distinct translations other than its main one, best first: the ``rank``-th hypothesis of each
    model input put through ``translate`` (the protected-span rounds), rank after rank, until no input has a
    hypothesis of a lower rank."""
    candidates: dict[str, list[str]] = {}  # model input -> its distinct cleaned translations, best first

    def ranked(rank: int) -> Model:
        """A model answering each input with its ``rank``-th translation (its last where it has fewer)."""

        def model(inputs: Sequence[str]) -> list[str]:
            missing = [text for text in dict.fromkeys(inputs) if text not in candidates]
            if missing:
                candidates.update(search(missing))
            return [candidates[text][min(rank, len(candidates[text]) - 1)] for text in inputs]

        return model

    others: dict[str, list[str]] = {source: [] for source in sources}  # distinct, none the main one
    for rank in range(width):
        for source, result in translate(sources, ranked(rank)).items():
            if result.text != main[source].text and result.text not in others[source]:
                others[source].append(result.text)
        if all(len(found) <= rank + 1 for found in candidates.values()):
            break  # no model input has a translation of a lower rank: the next ranks would repeat this one
    return others


def vary_one_segment(
    translation: str,
    markup: MarkupDocument,
    blocks: Sequence[Document],
    main: Mapping[str, Translation],
    others: Mapping[str, list[str]],
    count: int,
) -> TextAlternatives:
    """One text's alternatives: its segment with the most other translations varied, the rest kept."""
    here = list(dict.fromkeys(t for document in blocks for t in document.texts))
    chosen = max(here, key=lambda t: len(others[t]), default=None)  # max keeps the first of equals
    alternatives: list[str] = []
    for alternative in others[chosen] if chosen is not None else []:
        english = [
            document.join([alternative if t == chosen else main[t].text for t in document.texts]) for document in blocks
        ]
        output = markup.rebuild(english)
        if output != translation and output not in alternatives:
            alternatives.append(output)
        if len(alternatives) == count:
            break
    return TextAlternatives(translation, tuple(alternatives))
