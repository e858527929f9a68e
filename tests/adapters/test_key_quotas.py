"""Usage and limits per API key (``handler.api.quotas``), through ``HttpApi`` as every adapter calls it, on the tiny
bundle: the key entries' syntax, each API's refusal shape with ``Retry-After`` (this server's and LibreTranslate's
429, DeepL's 456 for a used-up character quota), each key's own usage on ``/v2/usage`` and LibreTranslate's
``/usage``, a failed translation's characters given back, the periods' ends, what each request writes to the store
(one conditional write per limit; the counts of keys without a limit batched), and a store that fails. The same
limits across two server processes sharing one store: ``test_key_quotas_shared.py``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import deepl
import pytest
import requests
from jsonschema import Draft202012Validator

from handler.api import quotas as quotas_module
from handler.api.compat.deepl import CHARACTER_LIMIT
from handler.api.keys import ApiKeys
from handler.api.openapi import build_document
from handler.api.quotas import Quotas, window
from handler.api.router import HttpApi, HttpRequest, HttpResponse
from handler.coldstart import Startup
from handler.config import KeyEntry, KeyLimit, RuntimeConfig, parse_key_entry
from handler.errors import ConfigurationError, ServerBusyError
from handler.formats import format_for
from handler.storage.usage import Added, ProcessCounters
from tests.adapters.test_answer_types import described, members_named
from tests.adapters.test_deepl_glossaries import serve

pytestmark = pytest.mark.slow

ALICE = "k-alice-5f1c0e"  # 30 characters a month, 3 requests a minute
BOB = "k-bob-90ad2b"  # no limits: counted, never refused
CAROL = "k-carol-77e3aa"  # 2 requests a minute only
KEYS = (f"{ALICE};name=alice;chars=30/month;rate=3/minute", BOB, f"{CAROL};rate=2/min")
JSON = {"Content-Type": "application/json"}
CHINESE = "你好世界。"  # 5 characters


def keyed_api(startup: Startup, state_dir: Path, keys: tuple[str, ...] = KEYS, **overrides: Any) -> HttpApi:
    config = startup.config.with_overrides(api_keys=keys, state_dir=state_dir, **overrides)
    return HttpApi(Startup(config, startup.service, None, 0.0))


def call(api: HttpApi, method: str, path: str, headers: Mapping[str, str] | None = None, body: Any = None) -> Any:
    raw = json.dumps(body).encode() if body is not None else b""
    response = api.handle(HttpRequest.create(method, path, {**JSON, **(headers or {})}, raw))
    return response


def payload(response: HttpResponse) -> Any:
    return json.loads(response.body)


def own(api: HttpApi, key: str, text: str) -> HttpResponse:
    return call(api, "POST", "/translate", {"X-API-Key": key}, {"text": text})


def deepl_v2(api: HttpApi, key: str, text: str) -> HttpResponse:
    return call(
        api, "POST", "/v2/translate", {"Authorization": f"DeepL-Auth-Key {key}"}, {"text": [text], "target_lang": "EN"}
    )


def libre(api: HttpApi, key: str, text: str) -> HttpResponse:
    return call(api, "POST", "/translate", {}, {"q": text, "source": "zh", "target": "en", "api_key": key})


def seconds_to_month_end() -> float:
    now = datetime.now(UTC)
    following = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)
    return (following - now).total_seconds()


# --- the key entries ------------------------------------------------------------------------------------------
def test_an_entry_is_a_key_then_its_name_and_limits() -> None:
    assert parse_key_entry("k-1;name=team-a;chars=500000/month;rate=60/min") == KeyEntry(
        "k-1", "team-a", (KeyLimit("characters", 500_000, "month"), KeyLimit("requests", 60, "minute"))
    )
    assert parse_key_entry("plain-key") == KeyEntry("plain-key")  # as before: a key alone
    assert parse_key_entry("k:fx;rate=5/s").limits == (KeyLimit("requests", 5, "second"),)  # ':' stays in a key
    # only the key is what a client presents
    keys = ApiKeys.of(("k-1;chars=10/day", "plain-key"))
    assert keys.accepts("k-1") and keys.accepts("plain-key") and not keys.accepts("k-1;chars=10/day")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("k;char=5/day", "an unknown setting after a ';'"),
        ("k;chars=5", "chars='5'; write a positive count per period"),
        ("k;rate=0/min", "rate='0/min'; write a positive count per period"),
        ("k;rate=5/week", "periods: second or s, minute or min, hour or h, day or d, month"),
        ("k;rate=5/min;rate=6/min", "a repeated setting 'rate'"),
        ("k;name=a b", "a name is 1-64 letters"),
        ("secret;other-secret", "an unknown setting"),
    ],
)
def test_a_bad_entry_stops_the_start_naming_its_number_never_the_key(entry: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        RuntimeConfig.from_env({"TRANSLATE_API_KEYS": f"good-key,{entry}"})
    assert message in str(raised.value) and "key 2" in str(raised.value)
    assert "other-secret" not in str(raised.value)


def test_a_key_or_a_name_given_twice_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="key 2 repeats key 1"):
        RuntimeConfig(api_keys=("k-1;rate=1/s", "k-1;rate=2/s"))
    with pytest.raises(ConfigurationError, match="name 'a' is repeated"):
        RuntimeConfig(api_keys=("k-1;name=a", "k-2;name=a"))
    with pytest.raises(ConfigurationError, match="TRANSLATE_USAGE_STORE is not a usage store"):
        RuntimeConfig(usage_store="memcached://:secret@host")
    assert "secret" not in str(pytest.raises(ConfigurationError, RuntimeConfig, usage_store="x://:secret@h").value)


# --- each API's refusal, with Retry-After ---------------------------------------------------------------------
def test_over_the_character_quota_each_api_answers_in_its_own_shape(startup: Startup, tmp_path: Path) -> None:
    api = keyed_api(startup, tmp_path, keys=(f"{ALICE};name=alice;chars=12/month",))
    assert own(api, ALICE, CHINESE).status == 200  # 5 of 12
    assert deepl_v2(api, ALICE, CHINESE).status == 200  # 10 of 12
    refusals = {"own": own(api, ALICE, CHINESE), "deepl": deepl_v2(api, ALICE, CHINESE)}
    refusals["libre"] = libre(api, ALICE, CHINESE)
    assert [r.status for r in refusals.values()] == [429, 456, 429]
    messages = {"own": lambda b: b["error"]["message"], "deepl": lambda b: b["message"], "libre": lambda b: b["error"]}
    for name, refused in refusals.items():
        retry_after = int(refused.headers["Retry-After"])
        assert abs(retry_after - seconds_to_month_end()) < 5, name  # the month's end, UTC
        text = messages[name](payload(refused))
        assert text.startswith("Quota exceeded: the key 'alice' may translate 12 characters per month, has 2 left")
        assert ALICE not in text
    assert payload(refusals["own"])["error"]["code"] == "quota_exceeded"
    # what is left is still there: a request that fits passes
    assert own(api, ALICE, "你好").status == 200
    usage = call(api, "GET", "/v2/usage", {"Authorization": f"DeepL-Auth-Key {ALICE}"})
    assert payload(usage) == {"character_count": 12, "character_limit": 12}


def test_over_the_rate_each_api_answers_429_in_its_own_shape(startup: Startup, tmp_path: Path) -> None:
    api = keyed_api(startup, tmp_path)
    before = window("minute", datetime.now(UTC).timestamp())
    answers = [own(api, CAROL, CHINESE), deepl_v2(api, CAROL, CHINESE)]
    refused = [own(api, CAROL, CHINESE), deepl_v2(api, CAROL, CHINESE), libre(api, CAROL, CHINESE)]
    if window("minute", datetime.now(UTC).timestamp()) != before:
        pytest.skip("the minute turned during the test (the counts started again); run it again")
    assert [a.status for a in answers] == [200, 200]
    assert [r.status for r in refused] == [429, 429, 429]
    assert payload(refused[0])["error"]["code"] == "rate_limited"
    assert payload(refused[1])["message"].startswith("too many requests: the key (unnamed) may send 2 per minute")
    assert payload(refused[2])["error"].startswith("too many requests")
    for response in refused:
        assert 1 <= int(response.headers["Retry-After"]) <= 60
    # reading its usage is no request against the rate
    usage = call(api, "GET", "/usage", {"X-API-Key": CAROL})
    assert usage.status == 200 and payload(usage)["requests"]["used"] == 2


def test_without_keys_nothing_is_counted_and_usage_is_the_instances(startup: Startup, tmp_path: Path) -> None:
    api = keyed_api(startup, tmp_path, keys=())
    assert not api.quotas.active
    for _ in range(3):
        assert deepl_v2(api, "any", CHINESE).status == 200
    assert payload(call(api, "GET", "/v2/usage")) == {"character_count": 15, "character_limit": CHARACTER_LIMIT}
    assert call(api, "GET", "/usage").status == 403  # LibreTranslate's: nothing per key to report here
    assert not (tmp_path / "usage.sqlite3").exists()


# --- each key's own usage ---------------------------------------------------------------------------------------
def test_usage_reports_the_calling_keys_own_count_and_limit(startup: Startup, tmp_path: Path) -> None:
    api = keyed_api(startup, tmp_path)
    assert deepl_v2(api, ALICE, CHINESE).status == 200
    assert libre(api, BOB, "你好。").status == 200
    assert deepl_v2(api, BOB, "already English").status == 200  # passed through, billed as DeepL bills it
    alice = payload(call(api, "GET", "/v2/usage", {"Authorization": f"DeepL-Auth-Key {ALICE}"}))
    bob = payload(call(api, "POST", "/v2/usage", {}, {"auth_key": BOB}))
    assert alice == {"character_count": 5, "character_limit": 30}
    assert bob == {"character_count": 18, "character_limit": CHARACTER_LIMIT}  # no limit: DeepL's "unlimited"
    libre_alice = payload(call(api, "GET", f"/usage?api_key={ALICE}"))
    assert libre_alice["name"] == "alice"
    assert libre_alice["characters"]["used"] == 5 and libre_alice["characters"]["limit"] == 30
    assert libre_alice["characters"]["period"] == "month"
    assert libre_alice["requests"]["used"] == 1 and libre_alice["requests"]["limit"] == 3  # the translation only
    libre_bob = payload(call(api, "GET", "/usage", {"Authorization": f"Bearer {BOB}"}))
    resets_in = pytest.approx(seconds_to_month_end(), abs=5)
    assert libre_bob == {"characters": {"used": 18, "limit": None, "period": "month", "resetsIn": resets_in}}
    assert call(api, "GET", "/v2/usage", {"Authorization": "DeepL-Auth-Key nobody"}).status == 403


def test_a_translation_that_fails_gives_its_characters_back(
    startup: Startup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = keyed_api(startup, tmp_path)
    assert startup.service is not None

    def busy(*args: Any, **kwargs: Any) -> Any:
        raise ServerBusyError("the decoder is busy", 3)

    monkeypatch.setattr(startup.service, "translate_detailed", busy)
    monkeypatch.setattr(startup.service, "translate_many", busy)
    assert own(api, ALICE, CHINESE).status == 429 and deepl_v2(api, ALICE, CHINESE).status == 429
    monkeypatch.undo()
    usage = payload(call(api, "GET", f"/usage?api_key={ALICE}"))
    assert usage["characters"]["used"] == 0 and usage["requests"]["used"] == 2  # the requests were sent


# --- periods, and what each request writes ----------------------------------------------------------------------
def test_a_period_ends_on_the_calendar_in_utc() -> None:
    new_year = datetime(2027, 1, 1, tzinfo=UTC).timestamp()
    assert window("month", new_year - 1).label == "M2026-12" and window("month", new_year - 1).ends == new_year
    assert window("month", new_year).label == "M2027-01"
    assert window("day", new_year - 1).ends == new_year and window("hour", new_year + 1).ends == new_year + 3600
    assert window("minute", new_year + 59.5).ends == new_year + 60 and window("second", new_year + 0.2).ends == (
        new_year + 1
    )
    february = datetime(2028, 2, 10, tzinfo=UTC).timestamp()  # a leap year's
    assert window("month", february).ends == datetime(2028, 3, 1, tzinfo=UTC).timestamp()


def test_a_used_up_quota_comes_back_when_its_period_ends() -> None:
    clock = [datetime(2026, 12, 31, 23, 59, 58, tzinfo=UTC).timestamp()]
    config = RuntimeConfig(api_keys=("k;chars=10/month;rate=2/day",))
    quotas = Quotas(config, ProcessCounters, clock=lambda: clock[0])
    quotas.charge("k", 10)
    with pytest.raises(quotas_module.QuotaExceededError) as refused:
        quotas.charge("k", 1)
    assert refused.value.retry_after_s == 2 and "ends in 2 s" in str(refused.value)
    quotas.count_request("k")
    quotas.count_request("k")
    with pytest.raises(quotas_module.RateLimitedError):
        quotas.count_request("k")
    clock[0] += 2  # midnight, 1 January (UTC): a new month and a new day
    quotas.charge("k", 10)
    quotas.count_request("k")
    usage = quotas.usage("k")
    assert usage is not None and usage.characters.used == 10 and usage.requests is not None
    assert usage.requests.used == 1 and usage.characters.resets_in_s == 31 * 86_400


class CountingCounters(ProcessCounters):
    """The process store, counting the calls a request makes (each would be one round trip to a shared store)."""

    def __init__(self) -> None:
        super().__init__()
        self.adds = 0
        self.batches = 0

    def add(self, counter: str, amount: int, limit: int | None, expires_at: int) -> Added:
        self.adds += 1
        return super().add(counter, amount, limit, expires_at)

    def add_many(self, amounts: Mapping[str, tuple[int, int]]) -> None:
        self.batches += 1
        super().add_many(amounts)


def test_a_limit_is_one_write_a_request_and_a_key_without_one_is_batched() -> None:
    counters = CountingCounters()
    clock = [1_800_000_000.0]
    config = RuntimeConfig(api_keys=("limited;chars=1000000/month;rate=1000/minute", "free"))
    quotas = Quotas(config, lambda: counters, clock=lambda: clock[0])
    for _ in range(100):
        quotas.count_request("limited")
        quotas.charge("limited", 7)
        quotas.count_request("free")  # no rate: nothing written
        quotas.charge("free", 7)
        clock[0] += 0.01  # 100 requests in a second: within one batch
    assert counters.adds == 200 and counters.batches == 0  # the limits: exact, one atomic write each
    clock[0] += quotas_module.FLUSH_S
    quotas.charge("free", 7)  # the batch is due: written once for 101 requests
    assert counters.batches == 1
    usage = quotas.usage("free")
    assert usage is not None and usage.characters.used == 707 and usage.requests is None


def test_batched_counts_written_by_one_process_are_read_by_another(tmp_path: Path) -> None:
    config = RuntimeConfig(api_keys=("free",), state_dir=tmp_path)
    writer = Quotas(config)
    for _ in range(10):
        writer.charge("free", 3)
    reader = Quotas(config)  # another process's view: the same file
    assert reader.usage("free").characters.used == 0  # type: ignore[union-attr]
    writer.flush()  # (at exit, when due, or when its own usage is read)
    assert reader.usage("free").characters.used == 30  # type: ignore[union-attr]
    assert (tmp_path / "usage.sqlite3").is_file()


# --- a store that fails, or that is missing ---------------------------------------------------------------------
def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_store_refuses_a_limited_key_rather_than_not_counting(startup: Startup, tmp_path: Path) -> None:
    api = keyed_api(startup, tmp_path, usage_store=f"redis://127.0.0.1:{closed_port()}")
    refused = own(api, ALICE, CHINESE)
    assert refused.status == 500 and payload(refused)["error"]["code"] == "storage_unavailable"
    assert deepl_v2(api, BOB, CHINESE).status == 200  # a key without limits: its count waits in the batch


def test_a_deployment_without_a_usage_store_refuses_limits(startup: Startup, tmp_path: Path) -> None:
    api = keyed_api(startup, tmp_path, output_bucket="out-bucket")
    refused = own(api, ALICE, CHINESE)
    assert refused.status == 500 and payload(refused)["error"]["code"] == "configuration_error"
    assert "TRANSLATE_USAGE_STORE is empty" in payload(refused)["error"]["message"]
    assert deepl_v2(api, BOB, CHINESE).status == 200  # its count waits in this process's batch...
    usage = call(api, "GET", "/v2/usage", {"Authorization": f"DeepL-Auth-Key {BOB}"})
    assert usage.status == 500 and "TRANSLATE_USAGE_STORE is empty" in payload(usage)["message"]  # ...for a store


def test_a_deployment_without_limits_counts_each_instance_alone(startup: Startup, tmp_path: Path) -> None:
    api = keyed_api(startup, tmp_path, keys=(BOB,), output_bucket="out-bucket")
    assert deepl_v2(api, BOB, CHINESE).status == 200
    assert payload(call(api, "GET", "/v2/usage", {"Authorization": f"DeepL-Auth-Key {BOB}"}))["character_count"] == 5
    assert not (tmp_path / "usage.sqlite3").exists()


def test_the_usage_answers_are_their_documented_types(startup: Startup, tmp_path: Path) -> None:

    api = keyed_api(startup, tmp_path)
    document = build_document(api.config)
    assert deepl_v2(api, ALICE, CHINESE).status == 200
    for path, headers, key in (("/usage", {}, ALICE), ("/usage", {}, BOB), ("/v2/usage", {}, ALICE)):
        sent = {**headers, "X-API-Key": key}
        answer = payload(call(api, "GET", path, sent))
        schema = described(document, path, "GET", "200")
        Draft202012Validator({**schema, "components": document["components"]}).validate(answer)
        assert members_named(document, schema, answer) == [], (path, key)


def test_the_deepl_client_reads_456_as_quota_exceeded_and_its_usage_as_the_keys(
    startup: Startup, tmp_path: Path
) -> None:

    for url in serve(keyed_api(startup, tmp_path)):
        translator = deepl.Translator(ALICE, server_url=url)
        assert translator.translate_text(CHINESE * 5, target_lang="EN-US").text  # 25 of 30
        with pytest.raises(deepl.QuotaExceededException):  # not retried: one request
            translator.translate_text(CHINESE * 2, target_lang="EN-US")
        usage = translator.get_usage().character
        assert (usage.count, usage.limit, usage.limit_reached) == (25, 30, False)
        assert deepl.Translator(BOB, server_url=url).get_usage().character.count == 0


def test_a_files_characters_count_once_it_is_done(startup: Startup, tmp_path: Path) -> None:

    text = "第一章\n\n今天天气很好。我们去公园散步吧。\n"
    billed = format_for("notes.txt").read(text.encode(), "notes.txt", None).characters  # as the formats bill it
    assert billed > 0
    for url in serve(keyed_api(startup, tmp_path / "state", keys=(f"{ALICE};chars=1000/month", BOB))):
        sent = requests.post(
            f"{url}/translate_file",
            data={"source": "zh", "target": "en", "api_key": ALICE},
            files={"file": ("notes.txt", text.encode())},
            timeout=60,
        )
        assert sent.status_code == 200, sent.text
        assert payload_of(url, ALICE)["characters"]["used"] == billed  # LibreTranslate's /translate_file
        source, output = tmp_path / "notes.txt", tmp_path / "notes.en.txt"
        source.write_bytes(text.encode())
        deepl.Translator(BOB, server_url=url).translate_document_from_filepath(source, output, target_lang="EN-US")
        assert output.read_text()  # uploaded, its status asked until done, downloaded once
        assert payload_of(url, BOB)["characters"]["used"] == billed  # DeepL's document, at its download


def payload_of(url: str, key: str) -> Any:

    return requests.get(f"{url}/usage", headers={"X-API-Key": key}, timeout=30).json()


def test_a_file_is_refused_before_its_work_when_the_keys_characters_are_used_up(
    startup: Startup, tmp_path: Path
) -> None:
    # a file's characters count once it is done, so the check before its work is whether any are left at all
    text = "今天天气很好。我们去公园散步吧。"
    api = keyed_api(startup, tmp_path / "state", keys=(f"{ALICE};chars=10/month",))
    assert deepl_v2(api, ALICE, text[:10]).status == 200  # the month's 10 characters, spent
    for url in serve(api):
        refused = requests.post(
            f"{url}/translate_file",
            data={"source": "zh", "target": "en", "api_key": ALICE},
            files={"file": ("notes.txt", text.encode())},
            timeout=60,
        )
        assert refused.status_code == 429 and "has none left" in refused.json()["error"], refused.text
        assert int(refused.headers["Retry-After"]) >= 1
        source = tmp_path / "notes.txt"
        source.write_bytes(text.encode())
        with pytest.raises(deepl.QuotaExceededException, match="has none left"):  # DeepL's 456, at the upload
            deepl.Translator(ALICE, server_url=url).translate_document_from_filepath(
                source, tmp_path / "notes.en.txt", target_lang="EN-US"
            )
        assert payload_of(url, ALICE)["characters"]["used"] == 10  # nothing more was counted
