"""The translation service every adapter calls: plain Python text in, English text out.

Pipeline for a request: validate the texts and options -> for HTML or Markdown, cut out the text blocks
(``handler.text.markup``) -> split each text into sentence-sized segments that fit the model
(``handler.text.segmentation``)
-> translate each distinct segment once, its protected spans intact (``handler.text.spans``: URLs, numbers, code,
names, amounts, glossary terms; text without Chinese never reaches the model) -> pack the segments into
batches of similar length (``handler.model.batching``) -> encode and decode each batch (the model family's decoding
protocol, ``handler.model.families``: for Marian greedy for beam size 1, otherwise beam search) -> detokenize ->
clean (``handler.text.cleaning``) -> put the translations back into each text's line structure (and markup). Every
request limit (characters, texts, option ranges, document deadlines) is enforced here and nowhere else;
violations raise the typed errors of ``handler.errors`` with messages that say what was found and what is
allowed.

Alternatives (``translate_alternatives``, LibreTranslate's ``alternatives``): ``handler.alternatives``.

The model step is the process's one decoder (``handler.decoder``): every request's segments wait in one queue and
are batched together (a batch at a time: the ONNX Runtime sessions already use every thread the configuration gives
them), fairly and with back-pressure; the translation memory, the batch planner and the deadline projections live
there. A request carries its options, its share of the decoder (``Job``: settings, priority, deadline, what it has
decoded), progress and scores down the pipeline in one ``_Run``, built whole when the request begins.

Streaming (``translate_stream``): the refusals are raised here, before the answer begins; ``handler.streaming`` then
runs the request with this service's decoder and steps: its units (sentences of plain text, blocks of markup) are
decoded in windows of consecutive units, each window's batches one at a time, and each unit is yielded as soon as it
and every unit before it are done; the translations are the same byte for byte as the whole call's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from handler.alternatives import NBestSearch, TextAlternatives, other_translations, vary_one_segment
from handler.config import ENV_GLOSSARY_FILE, ENV_MAX_CHARS, ENV_MAX_TEXTS, MAX_BEAM_SIZE, RuntimeConfig
from handler.decoder import Decoder, Job, Priority, SearchKey, ThroughputMeter
from handler.errors import DeadlineExceededError, InvalidRequestError, RequestTooLargeError
from handler.model.batching import (
    KV_CACHE_BUDGET_BYTES,
    LARGE_MODEL_KV_CACHE_BUDGET_BYTES,
    WIDTH_MULTIPLE,
    Batch,
    kv_cache_bytes_per_row,
    plan_batches,
)
from handler.model.confidence import Calibration, ScoredSegment, SegmentScore, assess, locate
from handler.model.decoding import Hypothesis, RowDone
from handler.model.families.base import SearchRequest
from handler.model.loader import LoadedModel
from handler.model.memory import release_free_heap
from handler.options import LENGTH_PENALTY_RANGE as LENGTH_PENALTY_RANGE  # re-exported: importers keep working
from handler.options import MAX_ALTERNATIVES as MAX_ALTERNATIVES
from handler.options import MAX_LENGTH_RATIO_RANGE as MAX_LENGTH_RATIO_RANGE
from handler.options import OPTION_NAMES as OPTION_NAMES
from handler.options import TranslateOptions as TranslateOptions
from handler.options import shown_value
from handler.streaming import StreamedTranslation, StreamedUnit, StreamProgress, Unit
from handler.text.cleaning import clean_translation
from handler.text.glossary import Glossary, deployment_glossary
from handler.text.markup import MarkupDocument, lost_runs, parse_markup
from handler.text.script_conversion import default_converter
from handler.text.segmentation import Document, one_line, split_document
from handler.text.spans import (
    ProtectedSpan,
    SpanKind,
    Translation,
    has_chinese,
    translate_protected,
)
from handler.text.validation import require_unicode
from handler.translation_memory import MemoryKey, TranslationMemory, current_work

EXTRA_NEW_TOKENS = 10  # output tokens allowed on top of max_length_ratio x source tokens
MIN_SEGMENT_TOKENS = 8
SegmentModelScore = tuple[Hypothesis, int]  # a model input's hypothesis and its source token count


@dataclass(frozen=True)
class TextTranslation:
    """One text's translation, the protected spans it carries (glossary hits among them) and, when the options
    ask for ``scores``, its segments with their confidence."""

    text: str
    spans: tuple[ProtectedSpan, ...] = ()
    segments: tuple[ScoredSegment, ...] = ()


@dataclass(frozen=True)
class StreamFinished:
    """A streamed request's last event: every text's translation exactly as ``translate_detailed`` gives it."""

    translations: tuple[TextTranslation, ...]
    units: int  # how many ``StreamedUnit`` events came before
    characters: int  # the request's characters


StreamEvent = StreamedUnit | StreamProgress | StreamFinished


@dataclass
class _Run:
    """One request on its way through the service: its options, its share of the decoder (``Job``: search
    settings, priority, deadline and what it has decoded), how it reports progress, and the scores of what it
    decoded (carried down the pipeline as one object)."""

    options: TranslateOptions
    job: Job
    progress: Callable[[int, int], None] | None = None  # (done characters, total characters), after every batch
    total: int = 0  # the characters progress counts: every occurrence of every segment
    scored: dict[str, SegmentModelScore] = field(default_factory=dict)  # model input -> hypothesis, source tokens

    @property
    def beam_size(self) -> int:
        return self.job.key.beam_size

    @property
    def deadline(self) -> float | None:
        return self.job.deadline


@dataclass(frozen=True)
class Shown:
    """How a text's markup is shown in its segments (``stream`` lines, ``scores``): the markup characters of a
    sentence replaced by the tags they stand for, attribute values nested in them by ``translations``."""

    markup: MarkupDocument
    translations: Sequence[str]

    def english(self, text: str) -> str:
        return self.markup.shown(text, self.translations)


@dataclass(frozen=True)
class _Prepared:
    """A request's texts as given, in the model's script, their markup and each block's segments."""

    given: list[str]
    converted: list[str]
    markups: list[MarkupDocument]
    documents: list[list[Document]]

    @property
    def sources(self) -> list[str]:
        """Every segment of every text, in order, each occurrence."""
        return [t for blocks in self.documents for document in blocks for t in document.texts]


class TranslationService:
    """Translates Chinese text with one loaded model, under the limits of one ``RuntimeConfig``."""

    def __init__(self, model: LoadedModel, config: RuntimeConfig, glossary: Glossary | None = None) -> None:
        self.model = model
        self.config = config
        if glossary is None:  # the deployment's
            glossary = deployment_glossary(config.glossary_file, ENV_GLOSSARY_FILE)
        self.glossary = glossary
        self.scripts = default_converter()  # Traditional Chinese -> the model's script
        self._tokenizer = model.tokenizer
        self._spec = model.spec
        self._bundle_hash = model.manifest.bundle_hash()
        self.calibration = Calibration.from_manifest(model.manifest.confidence, str(model.bundle_dir))
        # room for the output: the source gets at most half of the model's positions
        self.max_source_tokens = max(MIN_SEGMENT_TOKENS, self._spec.max_positions // 2)
        self.memory = TranslationMemory(config.memory_bytes)  # segments already translated (handler.translation_memory)
        self._model_lock = threading.Lock()  # one n-best search at a time (beside the decoder's batches)
        self._n_best = NBestSearch(
            lambda: self.model,
            self._plan_rows,
            self._tokenizer.encode_batch,
            lambda ids: clean_translation(self._tokenizer.decode(ids)),
            self._max_new_tokens,
            self._model_lock,
        )
        self.decoder = Decoder(
            search=self._search_rows,
            plan=self._plan_rows,
            encode=self._tokenizer.encode_batch,
            finish=lambda ids: clean_translation(self._tokenizer.decode(ids)),
            memory=self.memory,
            memory_key=self._memory_key,
            max_queue_s=config.max_queue_s,
            # as many batches at once as the search has parts (the cores), each alone in its parts; a bundle that
            # opens lean (a full-size CSANMT) keeps one: two batches' caches would not fit its memory budget
            workers=1 if model.model.lean else model.streams,
            parts=model.streams,
        )

    @property
    def throughput(self) -> ThroughputMeter:
        """The decoding speed measured on finished batches (the decoder's), for deadline projections."""
        return self.decoder.throughput

    # --- information ----------------------------------------------------------------------------------------

    def info(self) -> dict[str, object]:
        manifest = self.model.manifest
        return {
            "model": manifest.name,
            "source_model": manifest.source_model,
            "family": manifest.family,
            "bundle_hash": self._bundle_hash,
            "format_version": manifest.format_version,
            "threads": self.model.model.threads,
            "default_beam_size": self.config.beam_size,
            "confidence_calibrated": self.calibration.calibrated,
            "translation_memory": self.memory.stats(),
            "timings": dict(self.model.timings),
        }

    # --- requests -------------------------------------------------------------------------------------------

    def translate(self, text: str, options: TranslateOptions | None = None) -> str:
        """One text; same limits as ``translate_many``."""
        return self.translate_many([text], options)[0]

    def translate_many(self, texts: Sequence[str], options: TranslateOptions | None = None) -> list[str]:
        """Each text's translation, in order, within ``max_texts`` texts and ``max_chars`` characters in all."""
        return [result.text for result in self.translate_detailed(texts, options)]

    def translate_detailed(
        self, texts: Sequence[str], options: TranslateOptions | None = None, *, deadline: float | None = None
    ) -> list[TextTranslation]:
        """``translate_many`` with the protected spans and glossary hits of each translation. ``deadline`` (a
        ``time.monotonic()`` value, the adapter's time limit): ``DeadlineExceededError`` at once when the measured
        speed says the request cannot finish in time, as ``translate_document``."""
        self._check_request(texts)
        try:
            return self._translate(list(texts), self._run(options, deadline))
        finally:
            release_free_heap()  # the decoder's freed buffers go back to the system (handler.model.memory)

    def translate_stream(
        self, texts: Sequence[str], options: TranslateOptions | None = None, *, deadline: float | None = None
    ) -> Iterator[StreamEvent]:
        """``translate_detailed`` one unit at a time (``handler.streaming``): every refusal (limits, options,
        markup) is raised here, before anything is yielded; then the returned iterator yields each
        ``StreamedUnit`` in source order as soon as it and every unit before it are done, a ``StreamProgress``
        after every decoded batch, and last a ``StreamFinished`` with the whole translations, equal to
        ``translate_detailed``'s. With a ``deadline``, a batch that would end past it is not begun: the iterator
        raises ``DeadlineExceededError`` saying how many units were delivered. Closing the iterator (a client that
        hung up) stops the decoding before the next batch; nothing is left running."""
        self._check_request(texts)
        run = self._run(options, deadline, streamed=True)
        prepared = self._prepare(list(texts), run.options)
        self.decoder.check_capacity()  # a full queue refuses now, before the answer begins
        return self._stream(prepared, run)

    def translate_document_stream(
        self, text: str, options: TranslateOptions | None = None, *, deadline: float | None = None
    ) -> Iterator[StreamEvent]:
        """``translate_stream`` of a whole file's text (the command line's ``--stream``): no character limit, as
        ``translate_document``; its ``StreamFinished`` carries ``translate_document_detailed``'s translation."""
        if not isinstance(text, str):
            raise InvalidRequestError(f"the document must be a string; got {type(text).__name__}")
        require_unicode(text, "the document")
        run = self._run(options, deadline, streamed=True, noun="the document", priority=Priority.BULK)
        return self._stream(self._prepare([text], run.options), run)

    def translate_alternatives(
        self, texts: Sequence[str], options: TranslateOptions | None = None, count: int = 0
    ) -> list[TextAlternatives]:
        """Each text's translation with up to ``count`` (0..``MAX_ALTERNATIVES``) distinct other translations (the
        module's docstring says which); the limits of ``translate_many``."""
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_ALTERNATIVES:
            raise InvalidRequestError(
                f"the number of alternatives must be an integer from 0 to {MAX_ALTERNATIVES}; got {shown_value(count)}"
            )
        self._check_request(texts)
        run = self._run(options, None)
        try:
            if not count:
                return [TextAlternatives(result.text) for result in self._translate(list(texts), run)]
            return self._alternatives(list(texts), run, count)
        finally:
            release_free_heap()

    def translate_document(
        self,
        text: str,
        options: TranslateOptions | None = None,
        *,
        deadline: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> str:
        """A whole file's text, with its paragraphs and line breaks; no character limit (adapters limit bytes).

        ``deadline`` is a ``time.monotonic()`` value: ``DeadlineExceededError`` is raised before work begins when
        the measured speed says it cannot finish in time, and between batches when the next batch would overrun.
        ``progress(done_characters, total_characters)`` is called after every batch.
        """
        return self.translate_document_detailed(text, options, deadline=deadline, progress=progress).text

    def translate_document_detailed(
        self,
        text: str,
        options: TranslateOptions | None = None,
        *,
        deadline: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> TextTranslation:
        """``translate_document`` with the protected spans and, with ``scores``, the scored segments."""
        if not isinstance(text, str):
            raise InvalidRequestError(f"the document must be a string; got {type(text).__name__}")
        require_unicode(text, "the document")
        try:
            run = self._run(options, deadline, progress, noun="the document", priority=Priority.BULK)
            return self._translate([text], run)[0]
        finally:
            release_free_heap()

    def _run(
        self,
        options: TranslateOptions | None,
        deadline: float | None,
        progress: Callable[[int, int], None] | None = None,
        *,
        streamed: bool = False,
        noun: str = "the text",
        priority: Priority = Priority.INTERACTIVE,
    ) -> _Run:
        """A request's run, whole: a whole answer is refused at once when all its work cannot end before
        ``deadline``; a stream (``streamed``) begins no batch that would end past it, so what is done in time goes
        out. Documents (``translate_document*``) are bulk work: interactive requests go first (``handler.decoder``)."""
        options = options or TranslateOptions()
        key = SearchKey(
            options.beam_size or self.config.beam_size,
            options.length_penalty,
            options.max_length_ratio,
            options.repetition_guard,
        )
        job = Job(key, priority, deadline, refuse_early=not streamed, noun=noun)
        return _Run(options, job, progress)

    # --- validation -----------------------------------------------------------------------------------------

    def _check_request(self, texts: Sequence[str]) -> None:
        if isinstance(texts, str | bytes) or not isinstance(texts, Sequence):
            raise InvalidRequestError(f"texts must be a list of strings; got {type(texts).__name__}")
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidRequestError(f"texts[{index}] is {type(text).__name__}; every text must be a string")
            require_unicode(text, f"texts[{index}]")
        limit = self.config.max_texts
        if len(texts) > limit:
            raise RequestTooLargeError(
                f"the request has {len(texts):,} texts; the limit is {limit:,} ({ENV_MAX_TEXTS})"
            )
        characters = sum(len(text) for text in texts)
        limit = self.config.max_chars
        if characters > limit:
            what = "text is" if len(texts) == 1 else "texts are"
            total = "" if len(texts) == 1 else " in all"
            raise RequestTooLargeError(
                f"{what} {characters:,} characters{total}; the limit is {limit:,} ({ENV_MAX_CHARS})"
            )
        if (work := current_work.get()) is not None:  # the request's figures (handler.metrics)
            work.characters += characters

    def _split(self, text: str) -> Document:
        return split_document(text, self._tokenizer.count_tokens, self.max_source_tokens)

    # --- translation ----------------------------------------------------------------------------------------

    def _prepare(self, texts: Sequence[str], options: TranslateOptions) -> _Prepared:
        converted = [self.scripts.to_model_script(text, options.source) for text in texts]
        if options.format == "text":
            markups = [parse_markup(text, options.format) for text in converted]
        else:  # the markup as given (translate="no" stays as written); its blocks in the whole text's variant
            markups = [parse_markup(text, options.format) for text in texts]
            for text, markup in zip(texts, markups, strict=True):
                variant = self.scripts.resolve(text, options.source)
                markup.blocks = [self.scripts.to_model_script(block, variant) for block in markup.blocks]
        documents = [[self._split(block) for block in markup.blocks] for markup in markups]
        return _Prepared(list(texts), converted, markups, documents)

    def _translate(self, texts: Sequence[str], run: _Run) -> list[TextTranslation]:
        """Markup -> blocks -> segments -> protected translation (``handler.text.spans``) -> blocks -> markup."""
        if run.deadline is not None and time.monotonic() >= run.deadline:  # the memory does not answer late either
            raise DeadlineExceededError("the deadline passed before the translation began; nothing was translated")
        prepared = self._prepare(texts, run.options)
        return self._translate_prepared(prepared, run)[0]

    def _translate_prepared(
        self, prepared: _Prepared, run: _Run
    ) -> tuple[list[TextTranslation], dict[str, Translation]]:
        """Each text's translation and each segment's (by its source)."""
        # every occurrence: the model still sees a repeated segment once (_segments), and progress counts them all
        sources = prepared.sources
        run.total = sum(len(t) for t in sources)
        results = self._segment_translations(sources, self._model_for(run), run.options)
        if run.progress is not None:
            run.progress(run.total, run.total)
        return self._assemble(prepared, results, run), results

    def _model_for(self, run: _Run) -> Callable[[Sequence[str]], list[str]]:
        """The model ``translate_protected`` calls, round after round: progress follows the first round (a later
        round is a small remainder)."""
        rounds = 0

        def model(inputs: Sequence[str]) -> list[str]:
            nonlocal rounds
            rounds += 1
            return self._model_translate(inputs, run, report=rounds == 1)

        return model

    def _assemble(self, prepared: _Prepared, results: Mapping[str, Translation], run: _Run) -> list[TextTranslation]:
        """Each text's translation from its segments' translations: blocks joined, markup rebuilt."""
        translations = []
        for original, converted, markup, blocks in zip(
            prepared.given, prepared.converted, prepared.markups, prepared.documents, strict=True
        ):
            english = [document.join([results[t].text for t in document.texts]) for document in blocks]
            spans = tuple(
                span
                for document in blocks
                for t in document.texts
                for span in results[t].spans
                if span.kind is not SpanKind.MARKUP
            )
            output = markup.rebuild(english)
            segments: tuple[ScoredSegment, ...] = ()
            if run.options.scores:
                # source offsets hold for the text as given where the script conversion kept its length (it nearly
                # always does: one character for one); otherwise they are left out
                same_length = len(original) == len(converted)
                segments = self._scored_segments(
                    blocks, results, run.scored, converted if same_length else None, output, Shown(markup, english)
                )
            translations.append(TextTranslation(output, spans, segments))
        return translations

    # --- streaming ------------------------------------------------------------------------------------------

    def _stream(self, prepared: _Prepared, run: _Run) -> Iterator[StreamEvent]:
        """The events of ``translate_stream``, run by ``handler.streaming`` with this service's decoder and steps."""
        return StreamedTranslation(
            decoder=self.decoder,
            count_tokens=self._tokenizer.count_tokens,
            batch_tokens=self.config.batch_tokens,
            glossary=self.glossary,
            prepared=prepared,
            run=run,
            translate=self._segment_translations,
            whole_model=lambda: self._model_for(run),
            streamed=lambda unit, position, results: self._streamed(unit, position, prepared, results, run),
            finished=lambda results, units: StreamFinished(
                tuple(self._assemble(prepared, results, run)), units, sum(len(text) for text in prepared.given)
            ),
        ).events()

    def _streamed(
        self, unit: Unit, position: int, prepared: _Prepared, results: Mapping[str, Translation], run: _Run
    ) -> StreamedUnit:
        located = len(prepared.given[unit.text]) == len(prepared.converted[unit.text])
        if unit.segment is None:
            blocks, markup = prepared.documents[unit.text], prepared.markups[unit.text]
            # the blocks translated so far (an attribute value in this block's markup may not be yet: its source)
            translations = [
                block.join([results[t].text for t in block.texts]) if all(t in results for t in block.texts) else given
                for block, given in zip(blocks, markup.blocks, strict=True)
            ]
            shown = Shown(markup, translations)
            source = markup.shown(unit.block.source.strip())
            english = shown.english(unit.block.join([results[t].text for t in unit.block.texts]))
            segments: tuple[ScoredSegment, ...] = ()
            if run.options.scores:
                where = prepared.converted[unit.text] if located and unit.source_span else None
                start = unit.source_span[0] if unit.source_span else 0
                segments = self._scored_segments([unit.block], results, run.scored, where, english, shown, start)
            return StreamedUnit(unit.text, position, source, unit.source_span, english, segments)
        source = unit.block.texts[unit.segment]
        english = one_line(results[source].text)
        segments = ()
        if run.options.scores:
            output_span = (0, len(english)) if english else None
            segments = (
                self._scored_segment(source, results[source], run.scored, unit.source_span, english, output_span),
            )
        return StreamedUnit(unit.text, position, source, unit.source_span, english, segments)

    # --- segments, alternatives and scores ----------------------------------------------------------------
    def _segment_translations(
        self, sources: Sequence[str], model: Callable[[Sequence[str]], list[str]], options: TranslateOptions
    ) -> dict[str, Translation]:
        """Each segment's translation by ``model`` (its protected spans kept unless ``protect_spans`` is off)."""
        if options.protect_spans:
            glossary = self.glossary.merged(options.glossary).as_dict()
            found = translate_protected(sources, model, glossary)
        else:
            outputs = model(sources) if sources else []
            found = [Translation(text, "plain", (), (given,)) for given, text in zip(sources, outputs, strict=True)]
        return dict(zip(sources, found, strict=True))

    def _alternatives(self, texts: list[str], run: _Run, count: int) -> list[TextAlternatives]:
        """Each text's translation with up to ``count`` alternatives (``handler.alternatives`` says which)."""
        options = run.options
        prepared = self._prepare(texts, options)
        translations, main = self._translate_prepared(prepared, run)
        width = min(MAX_BEAM_SIZE, max(options.beam_size or self.config.beam_size, 2 * count))
        key = SearchKey(width, options.length_penalty, options.max_length_ratio, options.repetition_guard)
        others = other_translations(
            list(dict.fromkeys(prepared.sources)),
            main,
            lambda inputs: self._n_best.ranked(inputs, key),
            lambda sources, model: self._segment_translations(sources, model, options),
            width,
        )
        return [
            vary_one_segment(translation.text, markup, blocks, main, others, count)
            for translation, markup, blocks in zip(translations, prepared.markups, prepared.documents, strict=True)
        ]

    def _scored_segments(
        self,
        blocks: Sequence[Document],
        results: Mapping[str, Translation],
        scored: Mapping[str, SegmentModelScore],
        source: str | None,
        output: str,
        shown: Shown,
        source_at: int = 0,
    ) -> tuple[ScoredSegment, ...]:
        """Each segment of one text with its assessment, its source and English with their markup as the user sees
        them (``shown``), located in order in ``source`` (None: not located; from ``source_at`` on) and in
        ``output`` (each at or after the previous one's end, so a repeated sentence is found at its own place)."""
        segments = []
        output_at = 0
        for document in blocks:
            for marked in document.texts:
                text, english = shown.markup.shown(marked), shown.english(one_line(results[marked].text))
                source_span = locate(source, text, source_at) if source is not None else None
                source_at = source_span[1] if source_span else source_at
                output_span = locate(output, english, output_at)
                output_at = output_span[1] if output_span else output_at
                lost = lost_runs(marked, results[marked].text)
                segments.append(
                    self._scored_segment(text, results[marked], scored, source_span, english, output_span, lost)
                )
        return tuple(segments)

    def _scored_segment(
        self,
        text: str,
        result: Translation,
        scored: Mapping[str, SegmentModelScore],
        source_span: tuple[int, int] | None,
        english: str,
        output_span: tuple[int, int] | None,
        lost: Sequence[str] = (),
    ) -> ScoredSegment:
        """One segment's assessment, from the hypotheses of the model inputs it was translated from (``lost``: the
        runs of its source between markup that its translation dropped)."""
        model_scores = [scored[given] for given in result.model_inputs if given in scored]
        score = (
            SegmentScore(
                tuple(hypothesis for hypothesis, _ in model_scores),
                sum(tokens for _, tokens in model_scores),
                result.method,
            )
            if model_scores
            else None
        )
        assessment = assess(score, has_chinese(english), self.calibration, lost)
        return ScoredSegment(text, english, source_span, output_span, assessment, score)

    # --- the model step -------------------------------------------------------------------------------------

    def _model_translate(self, inputs: Sequence[str], run: _Run, *, report: bool = False) -> list[str]:
        """The model's cleaned translation of each input text (one segment each): what this request already decoded,
        else the translation memory's, else decoded now by the process's decoder (``report``: with progress);
        ``run.scored`` gets each input's hypothesis and source token count."""
        with self.decoder.decode(inputs, run.job) as answers:  # the memory's answers go into run.job.decoded
            fresh = sum(len(text) for text in inputs if text not in run.job.decoded)
            done = 0
            for characters in answers:
                done += characters
                if report and run.progress is not None:
                    run.progress(done * run.total // max(1, fresh), run.total)
        if not fresh and report and run.progress is not None:
            run.progress(run.total, run.total)
        for text in dict.fromkeys(inputs):
            entry = run.job.decoded[text]
            run.scored[text] = (entry.hypothesis, entry.source_tokens)
        return [run.job.decoded[text].translation for text in inputs]

    def _memory_key(self, text: str, key: SearchKey) -> MemoryKey:
        return MemoryKey(
            self._bundle_hash, key.beam_size, key.length_penalty, key.max_length_ratio, key.repetition_guard, text
        )

    def _search_rows(self, rows: list[list[int]], key: SearchKey, on_row: RowDone, parts: int) -> list[Hypothesis]:
        """One batch of token rows with ``key``'s search, in up to ``parts`` parts, each row handed to ``on_row`` as
        soon as it is done (a decoding thread calls it; several batches may be under way at once)."""
        request = SearchRequest(
            beam_size=key.beam_size,
            # each row's own limit, from its own length: its output never depends on the batch it is in
            max_new_tokens=tuple(self._max_new_tokens(len(row), key.max_length_ratio) for row in rows),
            length_penalty=key.length_penalty,
            repetition_guard=key.repetition_guard,
        )
        return self.model.search(rows, request, width_multiple=WIDTH_MULTIPLE, on_row=on_row, streams=parts)

    def _plan_rows(self, lengths: list[int], key: SearchKey) -> list[Batch]:
        """Rows of these token lengths cut into batches within the token and cache budgets (the decoder's planner)."""
        return plan_batches(
            lengths,
            max_tokens=self.config.batch_tokens,
            beam_size=key.beam_size,
            row_bytes=lambda width: kv_cache_bytes_per_row(
                self._spec.decoder_layers, self._spec.d_model, width, self._max_new_tokens(width, key.max_length_ratio)
            ),
            # the budget bounds the process: batches under way at once share it
            max_bytes=(LARGE_MODEL_KV_CACHE_BUDGET_BYTES if self.model.model.lean else KV_CACHE_BUDGET_BYTES)
            // self.decoder.workers,
        )

    def max_new_tokens(self, source_tokens: int, options: TranslateOptions) -> int:
        """Decoding steps for a source of ``source_tokens`` tokens (the end-of-sentence token included)."""
        return self._max_new_tokens(source_tokens, options.max_length_ratio)

    def _max_new_tokens(self, source_tokens: int, max_length_ratio: float) -> int:
        allowed = int(max_length_ratio * source_tokens) + EXTRA_NEW_TOKENS
        return max(1, min(allowed, self._spec.max_positions - 1))
