"""``RuntimeConfig.from_env``: every variable parsed, every bound at its edge, every bad value named in the error."""

from __future__ import annotations

from pathlib import Path

import pytest

from handler import config as cfg
from handler.config import RuntimeConfig
from handler.errors import ConfigurationError
from handler.text.glossary import Glossary, deployment_glossary


def test_defaults_suit_a_2048_mb_function() -> None:
    c = RuntimeConfig.from_env({})
    assert c.bundle_dir == cfg.REPO_ROOT / "model_artifacts" / "default"
    assert (c.threads, c.thread_spinning, c.verify_hashes, c.log_text) == (0, False, True, False)
    assert (c.max_chars, c.max_texts, c.max_file_bytes) == (20_000, 64, 2_000_000)
    assert (c.beam_size, c.batch_tokens, c.part_chars) == (4, 2_048, 20_000)
    assert (c.cors_origins, c.output_bucket, c.output_prefix, c.work_prefix) == ((), "", "translated/", "_bulk/")
    assert (c.deadline_margin_s, c.event_timeout_s) == (10.0, 540.0)
    assert (c.glossary_file, c.api_keys, c.api_keys_file) == (None, (), None)


def test_every_variable_is_read(tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("# team keys\n\nk-file\n  k-two  \n", encoding="utf-8")
    env = {
        "TRANSLATE_BUNDLE_DIR": "/opt/bundle",
        "TRANSLATE_THREADS": "3",
        "TRANSLATE_THREAD_SPINNING": "yes",
        "TRANSLATE_VERIFY_HASHES": "off",
        "TRANSLATE_MAX_CHARS": "100",
        "TRANSLATE_MAX_TEXTS": "5",
        "TRANSLATE_MAX_FILE_BYTES": "777",
        "TRANSLATE_BEAM_SIZE": "8",
        "TRANSLATE_BATCH_TOKENS": "64",
        "TRANSLATE_CORS_ORIGINS": " https://a.example/ , *,, http://b.example , http://BOX/",
        "TRANSLATE_OUTPUT_BUCKET": "out-bucket",
        "TRANSLATE_OUTPUT_PREFIX": "done/",
        "TRANSLATE_DEADLINE_MARGIN_S": "2.5",
        "TRANSLATE_EVENT_TIMEOUT_S": "60.5",
        "TRANSLATE_GLOSSARY_FILE": "/opt/glossary.tsv",
        "TRANSLATE_API_KEYS": " k-env , k-two ,",
        "TRANSLATE_API_KEYS_FILE": str(keys),
        "TRANSLATE_LOG_TEXT": "TRUE",
        "TRANSLATE_PART_CHARS": "0",
        "TRANSLATE_WORK_PREFIX": "work/",
    }
    c = RuntimeConfig.from_env(env)
    assert c.bundle_dir == Path("/opt/bundle") and c.glossary_file == Path("/opt/glossary.tsv")
    assert (c.threads, c.thread_spinning, c.verify_hashes, c.log_text) == (3, True, False, True)
    assert (c.max_chars, c.max_texts, c.max_file_bytes, c.beam_size, c.batch_tokens) == (100, 5, 777, 8, 64)
    assert c.cors_origins == ("https://a.example", "*", "http://b.example", "http://BOX")  # one trailing "/" cut
    assert (c.output_bucket, c.output_prefix, c.work_prefix, c.part_chars) == ("out-bucket", "done/", "work/", 0)
    assert (c.deadline_margin_s, c.event_timeout_s) == (2.5, 60.5)
    assert c.api_keys_file == keys
    assert c.api_keys == ("k-env", "k-two", "k-file")  # the variable's keys first, each key once


def test_blank_values_keep_the_default_and_values_are_trimmed() -> None:
    c = RuntimeConfig.from_env({"TRANSLATE_MAX_CHARS": "   ", "TRANSLATE_MAX_TEXTS": " 7 ", "TRANSLATE_BEAM_SIZE": ""})
    assert (c.max_chars, c.max_texts, c.beam_size) == (20_000, 7, 4)


def test_explicit_overrides_beat_the_environment_and_none_does_not() -> None:
    c = RuntimeConfig.from_env({"TRANSLATE_MAX_TEXTS": "7", "TRANSLATE_BEAM_SIZE": "2"}, max_texts=9, beam_size=None)
    assert (c.max_texts, c.beam_size) == (9, 2)
    assert c.with_overrides(max_chars=5).max_chars == 5 and c.max_chars == 20_000


def test_environ_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRANSLATE_MAX_TEXTS", "11")
    assert RuntimeConfig.from_env().max_texts == 11
    assert RuntimeConfig.from_env({}).max_texts == 64


@pytest.mark.parametrize(
    ("variable", "allowed", "refused", "use"),
    [
        ("TRANSLATE_THREADS", "0", "-1", "0 (automatic) or a positive number of threads"),
        ("TRANSLATE_MAX_CHARS", "1", "0", "a positive number of characters"),
        ("TRANSLATE_MAX_TEXTS", "1", "0", "a positive number of texts"),
        ("TRANSLATE_MAX_FILE_BYTES", "1", "0", "a positive number of bytes"),
        ("TRANSLATE_BEAM_SIZE", "1", "0", "an integer from 1 to 8"),
        ("TRANSLATE_BEAM_SIZE", "8", "9", "an integer from 1 to 8"),
        ("TRANSLATE_BATCH_TOKENS", "64", "63", "at least 64 tokens"),
        ("TRANSLATE_DEADLINE_MARGIN_S", "0", "-0.5", "a non-negative number of seconds"),
        ("TRANSLATE_PART_CHARS", "1000", "999", "0 (no fan-out) or at least 1000"),
        ("TRANSLATE_PART_CHARS", "0", "1", "0 (no fan-out) or at least 1000"),
    ],
)
def test_each_bound_allows_its_edge_and_refuses_one_past_it(
    variable: str, allowed: str, refused: str, use: str
) -> None:
    RuntimeConfig.from_env({variable: allowed})
    with pytest.raises(ConfigurationError) as caught:
        RuntimeConfig.from_env({variable: refused})
    value = float(refused) if "." in refused else int(refused)
    assert str(caught.value) == f"{variable}={value!r} is not allowed; use {use}"


def test_the_event_time_limit_must_exceed_the_margin() -> None:
    RuntimeConfig.from_env({"TRANSLATE_DEADLINE_MARGIN_S": "10", "TRANSLATE_EVENT_TIMEOUT_S": "10.5"})
    with pytest.raises(
        ConfigurationError,
        match=r"^TRANSLATE_EVENT_TIMEOUT_S=10\.0 is not allowed; .*more than "
        r"TRANSLATE_DEADLINE_MARGIN_S",
    ):
        RuntimeConfig.from_env({"TRANSLATE_DEADLINE_MARGIN_S": "10", "TRANSLATE_EVENT_TIMEOUT_S": "10"})


def test_the_bound_messages_say_what_to_use() -> None:
    with pytest.raises(ConfigurationError, match=r"^TRANSLATE_BEAM_SIZE=9 is not allowed; use an integer from 1 to 8$"):
        RuntimeConfig(beam_size=9)
    with pytest.raises(ConfigurationError, match=r"^TRANSLATE_MAX_CHARS=0 is not allowed; use a positive number of "):
        RuntimeConfig(max_chars=0)


@pytest.mark.parametrize(
    ("work", "output"),
    [("work", "translated/"), ("translated/parts/", "translated/"), ("_bulk/", "_bulk/x/"), ("_bulk/", "_bulk/")],
)
def test_the_work_prefix_ends_in_a_slash_and_stays_apart_from_the_output(work: str, output: str) -> None:
    with pytest.raises(ConfigurationError, match=r"^TRANSLATE_WORK_PREFIX=.* ending in '/' .*TRANSLATE_OUTPUT_PREFIX"):
        RuntimeConfig(work_prefix=work, output_prefix=output)


def test_an_empty_output_prefix_allows_any_work_prefix() -> None:
    assert RuntimeConfig(work_prefix="w/", output_prefix="").work_prefix == "w/"
    assert RuntimeConfig(work_prefix="translated-work/", output_prefix="translated/").output_prefix == "translated/"


@pytest.mark.parametrize(
    ("variable", "raw", "what"),
    [
        ("TRANSLATE_THREADS", "two", "is not an integer"),
        ("TRANSLATE_MAX_CHARS", "abc", "is not an integer"),
        ("TRANSLATE_MAX_TEXTS", "1.5", "is not an integer"),
        ("TRANSLATE_DEADLINE_MARGIN_S", "soon", "is not a number"),
        ("TRANSLATE_EVENT_TIMEOUT_S", "x", "is not a number"),
        ("TRANSLATE_LOG_TEXT", "maybe", "is not a boolean; use true/false, 1/0, yes/no or on/off"),
    ],
)
def test_an_unparsable_value_is_named_with_what_it_should_be(variable: str, raw: str, what: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        RuntimeConfig.from_env({variable: raw})
    assert str(caught.value) == f"{variable}={raw!r} {what}"
    assert caught.value.__context__ is None or caught.value.__suppress_context__  # no parser traceback shown


@pytest.mark.parametrize(
    ("raw", "value"),
    [(w, True) for w in ("1", "true", "Yes", "ON")] + [(w, False) for w in ("0", "False", "no", "off")],
)
def test_booleans_accept_the_usual_words(raw: str, value: bool) -> None:
    assert RuntimeConfig.from_env({"TRANSLATE_VERIFY_HASHES": raw}).verify_hashes is value
    assert RuntimeConfig.from_env({"TRANSLATE_THREAD_SPINNING": raw}).thread_spinning is value


def test_an_origin_without_a_scheme_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError) as caught:
        RuntimeConfig.from_env({"TRANSLATE_CORS_ORIGINS": "https://ok.example, example.com"})
    assert str(caught.value) == (
        "TRANSLATE_CORS_ORIGINS has 'example.com'; use '*' or comma-separated origins such as https://example.com"
    )


def test_a_keys_file_alone_gives_its_keys(tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("only\n", encoding="utf-8")
    assert RuntimeConfig.from_env({"TRANSLATE_API_KEYS_FILE": str(keys)}).api_keys == ("only",)
    assert RuntimeConfig.from_env({}, api_keys_file=keys).api_keys == ("only",)


def test_an_unreadable_keys_file_names_its_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"^TRANSLATE_API_KEYS_FILE="):
        RuntimeConfig.from_env({"TRANSLATE_API_KEYS_FILE": str(tmp_path / "missing.txt")})


def test_threads_zero_means_one_per_cpu_up_to_two(monkeypatch: pytest.MonkeyPatch) -> None:
    assert RuntimeConfig(threads=3).intra_op_threads == 3
    for cpus, expected in ((1, 1), (2, 2), (16, 2)):
        monkeypatch.setattr(cfg.os, "sched_getaffinity", lambda _pid, n=cpus: set(range(n)))
        assert RuntimeConfig().intra_op_threads == expected
    monkeypatch.delattr(cfg.os, "sched_getaffinity")
    for cpus, expected in ((None, 1), (1, 1), (8, 2)):
        monkeypatch.setattr(cfg.os, "cpu_count", lambda n=cpus: n)
        assert RuntimeConfig().intra_op_threads == expected


def test_the_glossary_comes_from_its_file_or_is_empty(tmp_path: Path) -> None:
    def glossary_of(config: RuntimeConfig) -> Glossary:
        return deployment_glossary(config.glossary_file, cfg.ENV_GLOSSARY_FILE)

    assert glossary_of(RuntimeConfig()).terms == ()
    tsv = tmp_path / "glossary.tsv"
    tsv.write_text("模型\tmodel\n", encoding="utf-8")
    assert glossary_of(RuntimeConfig.from_env({"TRANSLATE_GLOSSARY_FILE": str(tsv)})).as_dict() == {"模型": "model"}
    missing = tmp_path / "missing.tsv"
    with pytest.raises(ConfigurationError, match=r"TRANSLATE_GLOSSARY_FILE"):
        glossary_of(RuntimeConfig(glossary_file=missing))


def test_the_number_parsers_convert_or_name_the_variable() -> None:
    # the parsers are built when handler.config is imported; called here so a change to the factory is seen
    assert cfg._number(int, "an integer")("TRANSLATE_X", "42") == 42
    with pytest.raises(ConfigurationError, match=r"^TRANSLATE_X='4x' is not a number$"):
        cfg._number(float, "a number")("TRANSLATE_X", "4x")
