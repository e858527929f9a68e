"""The metrics in one process (``handler.metrics``): the local server's Prometheus text at ``GET /metrics`` with
``TRANSLATE_METRICS=prometheus`` (and no such route, nothing kept, without it), and a record's figures as the service
and the decoder fill them in.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from handler import metrics
from handler.adapters.local_server import make_server
from handler.api.router import HttpApi
from handler.coldstart import Startup
from tests.adapters.conftest import RealHttpClient

JSON = {"Content-Type": "application/json"}
SAMPLE = re.compile(r'^(translate_[a-z_]+)\{([a-z_]+)="([^"]*)"\} ([0-9.e+-]+)$')


def serve(startup: Startup, mode: str) -> Iterator[RealHttpClient]:
    server = make_server(HttpApi(dataclasses.replace(startup, config=startup.config.with_overrides(metrics=mode))))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield RealHttpClient("local_server", f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
        metrics.configure("off", metrics.LOCAL)  # the process's sink back to none, for the other tests


@pytest.fixture
def prometheus(startup: Startup) -> Iterator[RealHttpClient]:
    yield from serve(startup, "prometheus")


@pytest.fixture
def quiet(startup: Startup) -> Iterator[RealHttpClient]:
    yield from serve(startup, "auto")


def samples(text: str) -> dict[tuple[str, str], float]:
    found = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = SAMPLE.fullmatch(line)
        assert match, f"not a sample line of the text format: {line!r}"
        name, _label, value, number = match.groups()
        found[(name, value)] = float(number)
    return found


def test_the_local_server_serves_prometheus_text_with_the_option(prometheus: RealHttpClient) -> None:
    text = "我们一起去看电影吧。"
    for _ in range(2):
        assert prometheus.call("POST", "/translate", JSON, json.dumps({"text": text}).encode()).status == 200
    assert prometheus.call("POST", "/translate", JSON, b'{"colour": 1}').status == 400
    reply = prometheus.call("GET", "/metrics")
    assert reply.status == 200 and reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    found = samples(reply.text)
    assert found[("translate_requests_total", "/translate")] == 3  # the scrape itself is not counted
    assert found[("translate_characters_total", "/translate")] == 2 * len(text)
    assert found[("translate_segments_from_memory_total", "/translate")] >= 1  # the second was remembered
    assert found[("translate_decode_seconds_total", "/translate")] > 0
    assert found[("translate_refusals_total", "invalid_request")] == 1
    assert found[("translate_cold_start_total", "/translate")] == 1
    assert "# TYPE translate_requests_total counter" in reply.text


def test_without_the_option_there_is_no_metrics_route(quiet: RealHttpClient) -> None:
    assert quiet.call("POST", "/translate", JSON, json.dumps({"text": "你好"}).encode()).status == 200
    reply = quiet.call("GET", "/metrics")
    assert reply.status == 404 and reply.json()["error"]["code"] == "not_found"
    assert metrics.prometheus_text() is None and metrics.mode() == "off"


def test_a_records_figures_come_from_the_service_and_the_decoder(startup: Startup) -> None:
    service = startup.require_service()
    texts = ["这是第一句话。", "这是一个完全不同的第二句话，比第一句长一些。"]
    with metrics.measuring("test") as record:
        service.translate_many(texts)
    figures = record.figures()
    assert figures["characters"] == sum(len(text) for text in texts)
    assert figures["segments"] == 2 and figures["segments_from_memory"] == 0
    assert figures["decode_ms"] > 0 and figures["queue_wait_ms"] >= 0
    assert figures["decode_ms"] + figures["queue_wait_ms"] <= figures["duration_ms"]
    with metrics.measuring("test") as again:
        service.translate_many(texts)  # every segment from the translation memory: no decoder time
    assert again.figures()["segments_from_memory"] == 2 and again.figures()["decode_ms"] == 0


def test_emf_documents_name_each_figure_once_and_refusals_apart() -> None:
    record = metrics.Record(route="/v2/translate", error_code="busy", request_id="r-1")
    record.add("bytes_read", 10)
    record.add("fan_out_parts_failed")
    document = metrics.emf_document(record, "fn", "model", timestamp_ms=1)
    usage, refusals = document["_aws"]["CloudWatchMetrics"]  # type: ignore[index]
    names = [metric["Name"] for metric in usage["Metrics"]]
    assert len(names) == len(set(names)) and "FanOutPartsFailed" in names and "FanOutPartsStarted" not in names
    assert document["BytesRead"] == 10 and document["Route"] == "/v2/translate" and document["request_id"] == "r-1"
    assert refusals["Dimensions"] == [["Function", "ErrorCode"]] and document["ErrorCode"] == "busy"
    with pytest.raises(KeyError):
        record.add("charcters")  # a misspelt figure is an error, not a silent new metric


def test_the_operations_page_lists_exactly_the_figures() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text(encoding="utf-8")
    header = "| figure | log field | CloudWatch metric | unit | what it is |"
    rows = page[page.index(header) :].splitlines()[2:]
    listed = set()
    for row in rows:
        if not row.startswith("|"):
            break
        _, field, metric, unit = (cell.strip().strip("`") for cell in row.split("|")[1:5])
        listed.add((field, metric, unit))
    figures = {(figure.field, figure.metric, figure.unit) for figure in metrics.FIGURES}
    assert listed == figures | {("error_code", metrics.REFUSALS.metric, metrics.REFUSALS.unit)}
