"""The decoder every request of a process shares (``handler.decoder``), on the shipped default model: concurrent
requests get byte for byte what each gets alone, their segments share batches, the same sentence asked at once is
decoded once, a short request is not starved by a long document, a full queue refuses at once, and a request that
stops waiting leaves the queue."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from build import corpus
from handler import decoder as decoder_module
from handler.api.messages import HttpRequest, HttpResponse
from handler.api.router import HttpApi
from handler.coldstart import Startup
from handler.decoder import Job, Priority, SearchKey
from handler.errors import ServerBusyError
from handler.service import TranslateOptions, TranslationService
from handler.text.glossary import Glossary
from tests.fuzz.shipped import needs_shipped_bundle, shipped_config, shipped_model
from tests.runtime.decoder_hooks import after_each_batch

pytestmark = pytest.mark.shipped_model

# the option sets of the translation memory's test, and a longer length limit: every setting that changes a search
OPTION_SETS = [
    TranslateOptions(),
    TranslateOptions(beam_size=1),
    TranslateOptions(glossary=Glossary.from_mapping({"发展": "growth", "联合国": "the UN"})),
    TranslateOptions(format="html"),
    TranslateOptions(protect_spans=False, repetition_guard=False),
    TranslateOptions(max_length_ratio=3.0, length_penalty=1.2),
]


def service(**overrides: Any) -> TranslationService:
    """A fresh service without a translation memory (each request decodes), as the issue measured."""
    return TranslationService(shipped_model(), shipped_config(**{"memory_bytes": 0, "max_texts": 64, **overrides}))


def dev_sentences(count: int) -> list[str]:
    return [pair.zh for pair in corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR)[:count]]


@needs_shipped_bundle
def test_concurrent_mixed_requests_get_byte_for_byte_what_each_gets_alone() -> None:
    sentences = dev_sentences(48)
    requests = [(options, sentences[start : start + 8]) for start in range(0, 48, 8) for options in OPTION_SETS[:3]] + [
        (options, sentences[:6]) for options in OPTION_SETS[3:]
    ]
    alone = [service().translate_many(texts, options) for options, texts in requests]
    shared = service()
    batches = 0

    def count(rows: list[list[int]]) -> None:
        nonlocal batches
        batches += 1

    after_each_batch(shared, count)
    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        together = list(pool.map(lambda request: shared.translate_many(request[1], request[0]), requests))
    assert together == alone
    # streamed and one-sentence requests at once too, against the same requests alone
    one_by_one = [[sentence] for sentence in sentences[:16]]
    with ThreadPoolExecutor(max_workers=16) as pool:
        single = list(pool.map(shared.translate_many, one_by_one))
    assert single == [service().translate_many(texts) for texts in one_by_one]


@needs_shipped_bundle
def test_concurrent_one_sentence_requests_share_batches() -> None:
    sentences = dev_sentences(16)
    shared = service()
    sizes: list[int] = []
    started = threading.Event()
    after_each_batch(shared, lambda rows: (sizes.append(len(rows)), started.wait(10)))
    with ThreadPoolExecutor(max_workers=16) as pool:
        futures = [pool.submit(shared.translate, sentence) for sentence in sentences]
        time.sleep(0.5)  # every request queued behind the first batch
        started.set()
        answers = [future.result() for future in futures]
    assert answers == [service().translate(sentence) for sentence in sentences]
    # one after another they take a batch each at least: here the first batch is one request's, the rest share
    assert len(sizes) < len(sentences) // 2 and max(sizes) > 4, sizes


@needs_shipped_bundle
def test_the_same_sentence_asked_at_once_is_decoded_once() -> None:
    shared = service(decode_streams=1)  # one worker: the first request holds it
    rows: list[int] = []
    release = threading.Event()
    after_each_batch(shared, lambda batch: (rows.extend(map(len, batch)), release.wait(10)))
    sentence, other = "今天天气很好。", "我们去公园散步吧。"  # one round each: no span to protect
    with ThreadPoolExecutor(max_workers=6) as pool:
        first = pool.submit(shared.translate, other)  # holds the decoder while the others queue
        time.sleep(0.3)
        same = [pool.submit(shared.translate, sentence) for _ in range(5)]
        time.sleep(0.3)
        release.set()
        answers = {future.result() for future in same}
        first.result()
    assert len(answers) == 1
    assert len(rows) == 2, "the five requests' one sentence is one row"


@needs_shipped_bundle
def test_a_short_request_is_answered_within_about_a_batch_of_a_long_document() -> None:
    document = "".join(dev_sentences(400))  # bulk work, many batches
    shared = service(batch_tokens=256, decode_streams=1)  # one worker: a batch at a time
    batches: list[float] = []
    after_each_batch(shared, lambda rows: batches.append(time.monotonic()))
    with ThreadPoolExecutor(max_workers=2) as pool:
        long = pool.submit(shared.translate_document, document)
        while len(batches) < 3:
            time.sleep(0.01)
        asked = time.monotonic()
        short = pool.submit(shared.translate, "今天天气很好。")
        answer = short.result()
        answered = time.monotonic()
        assert not long.done(), "the document was still decoding: the short request did not wait for it"
        long.result()
    assert answer == service().translate("今天天气很好。")
    during = [at for at in batches if asked < at <= answered]
    assert len(during) <= 2, f"{len(during)} batches ended while the short request waited"


PLAIN_SENTENCES = [
    "我们先走了。",
    "今天天气很好。",
    "我们去公园散步吧。",
    "他昨天回家了。",
    "这本书很有意思。",
    "我喜欢喝茶。",
    "她在医院工作。",
    "我们明天见。",
    "请把门关上。",
    "这个问题很难。",
    "他们在学校学习。",
    "天快黑了。",
]


def decoded_order(age_bound_s: float, monkeypatch: pytest.MonkeyPatch) -> list[Priority]:
    """The class of each row decoded after a bulk document and five interactive sentences queued together."""
    monkeypatch.setattr(decoder_module, "BULK_AGE_BOUND_S", age_bound_s)
    shared = service(batch_tokens=64, decode_streams=1)  # one worker: the first request holds it
    sentences = PLAIN_SENTENCES  # one round each: a request's rows are all queued when it arrives
    tokenizer = shared.model.tokenizer
    bulk_rows = {tuple(ids) for ids in tokenizer.encode_batch(sentences[6:])}
    order: list[Priority] = []
    release = threading.Event()

    def record(rows: list[list[int]]) -> None:
        release.wait(10)
        order.extend(Priority.BULK if tuple(row) in bulk_rows else Priority.INTERACTIVE for row in rows)

    after_each_batch(shared, record)
    with ThreadPoolExecutor(max_workers=8) as pool:
        first = pool.submit(shared.translate, sentences[0])  # holds the decoder while the rest queue
        time.sleep(0.3)
        bulk = pool.submit(shared.translate_document, "\n".join(sentences[6:]))
        time.sleep(0.1)
        interactive = [pool.submit(shared.translate, sentence) for sentence in sentences[1:6]]
        time.sleep(0.3)
        release.set()
        for future in [first, bulk, *interactive]:
            future.result()
    return order[1:]  # after the first request's batch


@needs_shipped_bundle
def test_interactive_requests_go_before_bulk_work(monkeypatch: pytest.MonkeyPatch) -> None:
    order = decoded_order(60.0, monkeypatch)
    assert Priority.BULK in order and order.count(Priority.INTERACTIVE) >= 5
    assert order == sorted(order), order  # every interactive row before any bulk row


@needs_shipped_bundle
def test_bulk_work_that_waited_past_the_age_bound_takes_a_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    order = decoded_order(0.0, monkeypatch)
    assert Priority.BULK in order and order.count(Priority.INTERACTIVE) >= 5
    assert order[0] is Priority.BULK, order  # it waited longest: its turn came first


@needs_shipped_bundle
def test_a_full_queue_refuses_at_once_with_the_time_to_retry() -> None:
    shared = service(max_queue_s=5.0)
    release = threading.Event()
    after_each_batch(shared, lambda rows: release.wait(10))
    shared.throughput.record(seconds=1.0, work=1.0)  # measured: a second per token and beam
    with ThreadPoolExecutor(max_workers=2) as pool:
        holding = pool.submit(shared.translate, "".join(dev_sentences(3)))  # about 100 tokens x 4 beams queued
        time.sleep(0.3)
        began = time.monotonic()
        with pytest.raises(ServerBusyError, match=r"^the translator is busy: [\d,.]+ s of work are queued") as refused:
            shared.translate("你好。")
        assert time.monotonic() - began < 1.0, "refused at once, not after waiting"
        assert refused.value.retry_after_s >= 1 and refused.value.status == 429
        release.set()
        holding.result()


@needs_shipped_bundle
def test_a_long_document_queued_does_not_make_short_requests_refused() -> None:
    # a document of far more than the 5 s queue's work waits behind its first batch; a short request then takes its
    # turn after about a batch, so it is admitted and answered, not refused for the document's whole length
    shared = service(max_queue_s=5.0, batch_tokens=256, decode_streams=1)
    release = threading.Event()
    after_each_batch(shared, lambda rows: release.wait(10))
    shared.throughput.record(seconds=0.01, work=1.0)  # measured: 10 ms per token and beam
    with ThreadPoolExecutor(max_workers=1) as pool:
        document = pool.submit(shared.translate_document, "".join(dev_sentences(200)))  # thousands of tokens
        time.sleep(0.5)
        queued = shared.throughput.seconds_for(sum(4 * len(w.ids) for w in shared.decoder._queue.values()))
        assert queued is not None and queued > 10 * shared.decoder.max_queue_s, "the document's queue is long"
        try:
            answers = shared.decoder.decode(["你好。"], Job(SearchKey(4, None, 1.5, True)))  # admitted
        finally:
            release.set()
        with answers:
            assert sum(answers) == len("你好。")
        document.result()
    with pytest.raises(ServerBusyError):  # and the rule still refuses: a batch of minutes under way, 5 s allowed
        shared.throughput.record(seconds=1000.0, work=1.0)
        pool = ThreadPoolExecutor(max_workers=1)
        release.clear()
        holding = pool.submit(shared.translate, "".join(dev_sentences(3)))
        time.sleep(0.3)
        try:
            shared.translate("你好。")
        finally:
            release.set()
            holding.result()
            pool.shutdown()


@needs_shipped_bundle
def test_a_request_that_stops_waiting_leaves_the_queue() -> None:
    shared = service(decode_streams=1)  # one worker: the first request holds it
    release, holding = threading.Event(), threading.Event()
    rows: list[int] = []
    after_each_batch(shared, lambda batch: (rows.extend(map(len, batch)), holding.set(), release.wait(10)))
    sentences = dev_sentences(8)
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(shared.translate, sentences[0])  # holds the decoder
        assert holding.wait(30), "the first request's batch never ended"
        key = SearchKey(4, None, 1.5, True)
        answers = shared.decoder.decode(sentences[1:], Job(key))
        assert not shared.decoder.idle()
        answers.close()  # a client that hung up
        assert shared.decoder.idle()
        release.set()
        first.result()
    time.sleep(0.3)
    assert len(rows) == 1, "nothing of the closed request was decoded"


def posted_while_the_queue_is_full(path: str, body: dict[str, Any]) -> HttpResponse:
    """The HTTP answer to ``body`` at ``path`` while the decoder holds more than its 5 s queue: a request of about
    100 tokens x 4 beams waits at a measured second per token and beam."""
    shared = service(max_queue_s=5.0)
    api = HttpApi(Startup(shared.config, shared, None, 0.0))
    release = threading.Event()
    after_each_batch(shared, lambda rows: release.wait(10))
    shared.throughput.record(seconds=1.0, work=1.0)
    with ThreadPoolExecutor(max_workers=1) as pool:
        holding = pool.submit(shared.translate, "".join(dev_sentences(3)))
        time.sleep(0.3)
        request = HttpRequest.create("POST", path, {"Content-Type": "application/json"}, json.dumps(body).encode())
        response = api.handle(request)
        release.set()
        holding.result()
    return response


@needs_shipped_bundle
@pytest.mark.parametrize("stream", [False, True])
def test_a_full_queue_is_answered_429_with_retry_after_before_any_answer_begins(stream: bool) -> None:
    response = posted_while_the_queue_is_full("/translate", {"text": "你好。", "stream": stream})
    assert response.status == 429, response.body_text()
    assert json.loads(response.body)["error"]["code"] == "busy"
    assert int(response.headers["Retry-After"]) >= 1


@needs_shipped_bundle
@pytest.mark.parametrize(
    ("path", "body", "shape"),
    [
        ("/v2/translate", {"text": ["你好。"], "target_lang": "EN-US"}, "message"),
        ("/translate", {"q": "你好。", "source": "zh", "target": "en"}, "error"),
    ],
)
def test_the_drop_in_apis_answer_a_full_queue_429_in_their_own_shape(
    path: str, body: dict[str, Any], shape: str
) -> None:
    """DeepL's and LibreTranslate's clients retry 429 themselves; Retry-After says when."""
    response = posted_while_the_queue_is_full(path, body)
    assert response.status == 429, response.body_text()
    answer = json.loads(response.body)
    assert list(answer) == [shape] and isinstance(answer[shape], str) and "busy" in answer[shape]
    assert int(response.headers["Retry-After"]) >= 1


@needs_shipped_bundle
def test_a_fault_of_the_decoder_reaches_the_waiting_requests_instead_of_hanging_them() -> None:
    shared = service()

    def broken_planner(lengths: list[int], key: SearchKey) -> list[Any]:
        raise RuntimeError("the planner broke")

    shared.decoder._plan = broken_planner
    with ThreadPoolExecutor(max_workers=1) as pool:
        answer = pool.submit(shared.translate, "今天天气很好。")
        with pytest.raises(RuntimeError, match="the planner broke"):
            answer.result(timeout=30)
    shared.decoder._plan = shared._plan_rows  # mended: the next request is served
    assert shared.translate("今天天气很好。") == service().translate("今天天气很好。")
