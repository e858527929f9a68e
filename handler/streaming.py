"""Streaming a translation: what a streamed request yields, the windows its units are decoded in, and its run.

A streamed call (``TranslationService.translate_stream``) answers a request unit by unit, in source order: a unit is
a sentence-sized segment of plain text, or a whole block (a text node, an attribute, a Markdown paragraph) of HTML
and Markdown, whose English only exists once all its segments are done. The units are cut into **windows** of
consecutive units (``plan_windows``): the first unit alone, so that the first English arrives after one small batch;
then the rest in one window when it fits in ``WHOLE_REST_BATCHES`` full batches of source tokens, else in windows of
``FIRST_WINDOW_BATCHES`` batches, each twice the last, up to ``MAX_WINDOW_BATCHES``. Inside a window the decoder
plans length-sorted batches exactly as for a whole request and decodes them one at a time in the order of their
earliest unit (a ``StreamProgress`` after each, which is also where a client that hung up is noticed); after each
batch every unit whose inputs are all decoded, and every unit before it, is yielded.

``StreamedTranslation`` runs one streamed request: the service validates and prepares the request, then hands it the
decoder and the steps it owns (a segment's protected translation, a unit's English, the whole texts' assembly).

What it costs: the batches of a window are cut from fewer sentences than a whole request's, so a window's last batch
is often part-full, and the first unit is decoded alone; a window of length-sorted batches wastes least. Measured
(``make bench``, docs/benchmarks.md, with the alternatives tried in docs/decisions.md): the windows below keep the
streamed call within a few per cent of the whole call's CPU time. Because every row's output is independent of the
batch it is decoded in (``handler.model.batching``'s batch invariance), the English is the same byte for byte as
the whole request's, and peak memory can only be lower (smaller batches at most as wide).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from handler.decoder import Decoder, Job
from handler.errors import DeadlineExceededError
from handler.model.confidence import ScoredSegment, locate
from handler.model.decoding import Hypothesis
from handler.model.memory import release_free_heap
from handler.options import TranslateOptions
from handler.text.glossary import Glossary
from handler.text.markup import MarkupDocument
from handler.text.segmentation import Document
from handler.text.spans import Translation, first_model_inputs

WHOLE_REST_BATCHES = 4  # after the first unit, a rest of at most this many full batches is one window
FIRST_WINDOW_BATCHES = 2  # else the windows start at this many full batches of source tokens
MAX_WINDOW_BATCHES = 8  # and double up to this many

Model = Callable[[Sequence[str]], list[str]]  # model inputs -> their translations (``translate_protected``'s model)
Finished = TypeVar("Finished")  # a stream's last event (``handler.service``'s ``StreamFinished``)


@dataclass(frozen=True)
class StreamedUnit:
    """One unit's English, yielded once it and every unit before it are done."""

    text: int  # which of the request's texts it belongs to (0 for a single text)
    index: int  # its position among the request's units, from 0
    source: str  # the unit's source text (in the model's script)
    source_span: tuple[int, int] | None  # its character offsets in the text as given; None where not found as written
    translation: str
    segments: tuple[ScoredSegment, ...] = ()  # with ``scores``: its segments, offsets within ``translation``


@dataclass(frozen=True)
class StreamProgress:
    """Sent after every decoded batch: how many of the request's source characters (every occurrence) are done."""

    done: int
    total: int


def plan_windows(unit_tokens: Sequence[int], batch_source_tokens: int) -> list[range]:
    """Consecutive ranges of unit positions covering every unit once: the first unit alone; then the rest as one
    window if it holds at most ``WHOLE_REST_BATCHES`` times ``batch_source_tokens`` (one full batch of source tokens),
    else windows of at least ``FIRST_WINDOW_BATCHES`` batches' tokens, doubling up to ``MAX_WINDOW_BATCHES``. A window
    closes on the unit that reaches its budget, so no window is empty and none is cut inside a unit."""
    if batch_source_tokens < 1:
        raise ValueError(f"batch_source_tokens must be positive; got {batch_source_tokens}")
    count = len(unit_tokens)
    if not count:
        return []
    windows = [range(0, 1)]
    if sum(unit_tokens[1:]) <= WHOLE_REST_BATCHES * batch_source_tokens:
        return windows + ([range(1, count)] if count > 1 else [])
    start = 1
    budget = FIRST_WINDOW_BATCHES * batch_source_tokens
    while start < count:
        end = start
        tokens = 0
        while end < count and tokens < budget:
            tokens += unit_tokens[end]
            end += 1
        windows.append(range(start, end))
        start = end
        budget = min(2 * budget, MAX_WINDOW_BATCHES * batch_source_tokens)
    return windows


class PreparedTexts(Protocol):
    """A request's texts as the service prepared them (``handler.service``'s ``_Prepared``)."""

    @property
    def given(self) -> list[str]: ...  # as given
    @property
    def converted(self) -> list[str]: ...  # in the model's script
    @property
    def markups(self) -> list[MarkupDocument]: ...
    @property
    def documents(self) -> list[list[Document]]: ...  # each block's segments
    @property
    def sources(self) -> list[str]: ...  # every segment of every text, in order, each occurrence


class StreamedRun(Protocol):
    """A request's run as the service made it (``handler.service``'s ``_Run``): its options, its share of the
    decoder (``Job``) and the scores of what it decoded."""

    options: TranslateOptions
    job: Job
    scored: dict[str, tuple[Hypothesis, int]]  # model input -> hypothesis, source tokens

    @property
    def beam_size(self) -> int: ...
    @property
    def deadline(self) -> float | None: ...


@dataclass(frozen=True)
class Unit:
    """What a stream yields one at a time: a segment of plain text or a block of markup, with where it is."""

    text: int
    block: Document
    segment: int | None  # the segment of ``block`` (plain text), or None for the whole block (markup)
    source_span: tuple[int, int] | None

    @property
    def sources(self) -> list[str]:
        texts = self.block.texts
        return texts if self.segment is None else [texts[self.segment]]


@dataclass
class _Sent:
    """How far a stream has got: the units yielded so far (they are yielded in order) and their source characters."""

    units: int = 0
    characters: int = 0
    held: bool = False  # a unit waits for a later round's input: nothing more goes out until its window is done


@dataclass(frozen=True)
class StreamedTranslation(Generic[Finished]):
    """One streamed request, run on the process's decoder with the service's steps: ``events`` yields what
    ``TranslationService.translate_stream`` returns."""

    decoder: Decoder
    count_tokens: Callable[[str], int]
    batch_tokens: int  # the configuration's tokens of one batch
    glossary: Glossary  # the deployment's (a request's own terms are merged in)
    prepared: PreparedTexts
    run: StreamedRun
    translate: Callable[[Sequence[str], Model, TranslateOptions], dict[str, Translation]]  # segments, protected
    whole_model: Callable[[], Model]  # the model a whole call translates with (every round decoded)
    streamed: Callable[[Unit, int, Mapping[str, Translation]], StreamedUnit]  # a unit's English, at its position
    finished: Callable[[Mapping[str, Translation], int], Finished]  # the last event, from every segment and the units

    def events(self) -> Iterator[StreamedUnit | StreamProgress | Finished]:
        """The events of ``translate_stream`` (``plan_windows`` says how the windows are chosen). A window's
        batches are decoded in the order of their earliest unit, and after each batch every unit whose model inputs
        are all decoded, and every unit before it, is yielded."""
        prepared, run = self.prepared, self.run
        sent = _Sent()
        total = sum(len(t) for t in prepared.sources)  # every occurrence of every segment
        try:
            if run.deadline is not None and time.monotonic() >= run.deadline:  # the memory does not answer late
                raise DeadlineExceededError("the deadline passed before the translation began; nothing was translated")
            units = self._units()
            tokens = [sum(self.count_tokens(t) for t in unit.sources) for unit in units]
            windows = plan_windows(tokens, max(1, self.batch_tokens // run.beam_size))
            results: dict[str, Translation] = {}
            glossary = self.glossary.merged(run.options.glossary).as_dict()
            done = 0
            for window in windows:
                inputs_of = {
                    position: first_model_inputs(units[position].sources, glossary)
                    if run.options.protect_spans
                    else units[position].sources
                    for position in window
                }
                needed = [text for position in window for text in inputs_of[position]]
                fresh_characters = sum(len(text) for text in needed if text not in run.job.decoded)
                # progress: the source characters of the windows before, and this window's share of its batches
                window_characters = sum(len(t) for position in window for t in units[position].sources)
                decoded = 0
                # queued now, the memory's answers already in: a closed stream leaves the queue with the ``with``
                with self.decoder.decode(needed, run.job, in_source_order=True) as batches:
                    yield from self._ready_units(window, units, inputs_of, results, sent)
                    for characters in batches:
                        decoded += characters
                        progress = done + decoded * window_characters // max(1, fresh_characters)
                        yield StreamProgress(progress, total)
                        yield from self._ready_units(window, units, inputs_of, results, sent)
                yield from self._ready_units(window, units, inputs_of, results, sent, window_done=True)
                done += window_characters
            yield self.finished(results, len(units))
        except DeadlineExceededError as error:
            delivered = f"{sent.characters:,} of {total:,} characters were translated and sent"
            raise DeadlineExceededError(f"{error} ({delivered})") from None
        finally:
            release_free_heap()

    def _ready_units(
        self,
        window: range,
        units: Sequence[Unit],
        inputs_of: Mapping[int, Sequence[str]],
        results: dict[str, Translation],
        sent: _Sent,
        *,
        window_done: bool = False,
    ) -> Iterator[StreamedUnit]:
        """The units of ``window`` from the next one not yet sent, in order, as far as they are translated.

        Between batches (``window_done`` false) a unit goes out when its first-round model inputs are decoded and
        its translation needs nothing more from the model; the first unit that needs a later round's input (a
        sentence whose spans the model lost) holds itself and every unit after it until the window's batches are
        done, when the held units' later rounds are decoded together, as the whole call decodes them."""
        run = self.run
        if sent.held and not window_done:
            return
        start = max(sent.units, window.start)
        end = start
        while end < window.stop and all(text in run.job.decoded for text in inputs_of[end]):
            end += 1
        if end == start:
            return
        sources = [t for position in range(start, end) for t in units[position].sources]
        if window_done:
            results.update(self.translate(sources, self.whole_model(), run.options))
            sent.held = False
        else:
            missing: set[str] = set()
            found = self.translate(sources, self._decoded_only(missing), run.options)
            for position in range(start, end):
                if any(given in missing for t in units[position].sources for given in found[t].model_inputs):
                    end, sent.held = position, True
                    break
            results.update({t: found[t] for position in range(start, end) for t in units[position].sources})
        for position in range(start, end):
            sent.units = position + 1
            sent.characters += sum(len(t) for t in units[position].sources)
            yield self.streamed(units[position], position, results)

    def _decoded_only(self, missing: set[str]) -> Model:
        """A model answering only what this request has decoded; any other input is recorded in ``missing`` and
        answered with an empty string (a translation made from it is discarded, never sent)."""
        run = self.run

        def model(inputs: Sequence[str]) -> list[str]:
            outputs = []
            for text in inputs:
                entry = run.job.decoded.get(text)
                if entry is None:
                    missing.add(text)
                    outputs.append("")
                else:
                    run.scored[text] = (entry.hypothesis, entry.source_tokens)
                    outputs.append(entry.translation)
            return outputs

        return model

    def _units(self) -> list[Unit]:
        """The request's units in order: each segment of plain text, each block of markup."""
        prepared, options = self.prepared, self.run.options
        units = []
        for number, (original, converted, markup, blocks) in enumerate(
            zip(prepared.given, prepared.converted, prepared.markups, prepared.documents, strict=True)
        ):
            same_length = len(original) == len(converted)
            if options.format == "text":  # one block, the whole text: its segments' offsets are the text's
                for document in blocks:
                    for index, segment in enumerate(document.segments):
                        span = (segment.start, segment.end) if same_length else None
                        units.append(Unit(number, document, index, span))
                continue
            at = 0
            for document in blocks:
                # blocks come in source order, except an attribute's value, which comes before the text around it
                shown = markup.shown(document.source.strip())
                found = (locate(converted, shown, at) or locate(converted, shown, 0)) if same_length else None
                at = found[1] if found else at
                units.append(Unit(number, document, None, found))
        return units
