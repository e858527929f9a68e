"""Glossaries: what a request's or a file's glossary may hold (each limit at its boundary), the message for each
wrong term, the file formats, the merge order, and a glossary's effect on a translation by the shipped bundle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from handler.errors import ConfigurationError, InvalidRequestError
from handler.service import TranslateOptions
from handler.text.glossary import (
    MAX_FILE_TERMS,
    MAX_REQUEST_TERMS,
    MAX_TARGET_CHARS,
    MAX_TERM_CHARS,
    Glossary,
    deployment_glossary,
    load_glossary,
)
from tests.fuzz.shipped import needs_shipped_bundle, shipped_config, shipped_model

VARIABLE = "TRANSLATE_GLOSSARY_FILE"


def refused(data: object, **options: object) -> str:
    with pytest.raises(InvalidRequestError) as caught:
        Glossary.from_mapping(data, **options)  # type: ignore[arg-type]
    return str(caught.value)


# --- the glossary value -----------------------------------------------------------------------------------------


def test_an_empty_glossary_is_false_and_empty() -> None:
    assert not Glossary()
    assert len(Glossary()) == 0
    assert Glossary().as_dict() == {}
    assert Glossary.from_mapping({}) == Glossary()
    one = Glossary.from_mapping({"人工智能": "AI"})
    assert one and len(one) == 1 and one.as_dict() == {"人工智能": "AI"}


def test_terms_keep_their_order_and_are_stripped() -> None:
    glossary = Glossary.from_mapping({" 人工智能 ": "  artificial intelligence\t", "机器学习": "machine learning"})
    assert glossary.terms == (("人工智能", "artificial intelligence"), ("机器学习", "machine learning"))


def test_a_merge_adds_the_overrides_terms_and_the_override_wins() -> None:
    base = Glossary.from_mapping({"人工智能": "artificial intelligence", "机器学习": "machine learning"})
    override = Glossary.from_mapping({"人工智能": "AI", "深度学习": "deep learning"})
    merged = base.merged(override)
    assert merged.terms == (("人工智能", "AI"), ("机器学习", "machine learning"), ("深度学习", "deep learning"))
    assert base.merged(None) is base
    assert base.merged(Glossary()) is base
    assert Glossary().merged(override).terms == override.terms


# --- what a glossary may hold -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        ([["人工智能", "AI"]], "a JSON array"),
        (None, "null"),
        (True, "a JSON boolean"),
        (3, "a JSON number"),
        (2.5, "a JSON number"),
        ("人工智能=AI", "str"),
    ],
)
def test_a_glossary_that_is_not_an_object_is_refused_saying_what_it_got(data: object, shown: str) -> None:
    assert refused(data) == (
        'glossary must be an object of Chinese term -> English term, e.g. {"人工智能": "artificial intelligence"}; '
        f"got {shown}"
    )


def test_the_request_limit_on_terms() -> None:
    terms = {f"术语{n}": f"term {n}" for n in range(MAX_REQUEST_TERMS + 1)}
    assert MAX_REQUEST_TERMS == 200
    allowed = dict(list(terms.items())[:MAX_REQUEST_TERMS])
    assert len(Glossary.from_mapping(allowed)) == 200
    assert refused(terms) == "glossary has 201 terms; the limit is 200"
    assert len(Glossary.from_mapping(terms, limit=201)) == 201
    assert refused(terms, limit=5, where="options.glossary") == "options.glossary has 201 terms; the limit is 5"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("", 'glossary: every term must be a non-empty string; got ""'),
        ("   ", 'glossary: every term must be a non-empty string; got "   "'),
        (7, "glossary: every term must be a non-empty string; got 7"),
        ("AI", 'glossary: the term "AI" has no Chinese character; terms are Chinese'),
        ("２０２６", 'glossary: the term "２０２６" has no Chinese character; terms are Chinese'),
    ],
)
def test_a_wrong_source_term_is_named(source: object, message: str) -> None:
    assert refused({source: "x"}) == message


def test_the_source_term_length_limit() -> None:
    assert MAX_TERM_CHARS == 100
    longest = "中" * 100
    assert Glossary.from_mapping({longest: "x"}).as_dict() == {longest: "x"}
    too_long = "中" * 101
    shown = json.dumps(too_long, ensure_ascii=False)
    assert refused({too_long: "x"}) == f"glossary: the term {shown[:40]}... has 101 characters; the limit is 100"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (None, 'glossary["人工智能"] must be a non-empty string (the English term); got null'),
        (1, 'glossary["人工智能"] must be a non-empty string (the English term); got a JSON number'),
        (False, 'glossary["人工智能"] must be a non-empty string (the English term); got a JSON boolean'),
        (["AI"], 'glossary["人工智能"] must be a non-empty string (the English term); got a JSON array'),
        ({"en": "AI"}, 'glossary["人工智能"] must be a non-empty string (the English term); got a JSON object'),
        ("", 'glossary["人工智能"] must be a non-empty string (the English term); got an empty one'),
        (" \t", 'glossary["人工智能"] must be a non-empty string (the English term); got an empty one'),
    ],
)
def test_a_wrong_target_is_named(target: object, message: str) -> None:
    assert refused({"人工智能": target}) == message


def test_the_target_length_limit() -> None:
    assert MAX_TARGET_CHARS == 200
    assert Glossary.from_mapping({"人工智能": "a" * 200}).as_dict() == {"人工智能": "a" * 200}
    assert refused({"人工智能": "a" * 201}) == 'glossary["人工智能"] has 201 characters; the limit is 200'


@pytest.mark.parametrize("mark", ["\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_line_breaks_are_refused_in_either_term(mark: str) -> None:
    assert (
        refused({f"人工{mark}智能": "AI"})
        == f"glossary[{json.dumps(f'人工{mark}智能', ensure_ascii=False)}]: terms may not hold line breaks"
    )
    assert refused({"人工智能": f"artificial{mark}intelligence"}) == (
        'glossary["人工智能"]: terms may not hold line breaks'
    )


def test_other_spacing_is_not_a_line_break() -> None:
    glossary = Glossary.from_mapping({"人工\t智能": "artificial\tintelligence", "机器 学习": "machine\u00a0learning"})
    assert len(glossary) == 2


def test_the_first_wrong_term_is_the_one_named() -> None:
    assert refused({"人工智能": "AI", "AI": "x", "机器": ""}) == (
        'glossary: the term "AI" has no Chinese character; terms are Chinese'
    )


# --- files ------------------------------------------------------------------------------------------------------


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def test_a_json_file(tmp_path: Path) -> None:
    path = write(tmp_path, "terms.json", json.dumps({"人工智能": "AI", "机器学习": "machine learning"}))
    assert load_glossary(path, VARIABLE).as_dict() == {"人工智能": "AI", "机器学习": "machine learning"}
    upper = write(tmp_path, "TERMS.JSON", json.dumps({"人工智能": "AI"}))
    assert load_glossary(upper, VARIABLE).as_dict() == {"人工智能": "AI"}


def test_a_tsv_file_with_comments_blank_lines_and_a_byte_order_mark(tmp_path: Path) -> None:
    content = (
        "\ufeff# our terms\n人工智能\tAI\n\n   \n机器学习\tmachine learning\r\n#不是\tterm\n深度学习\tdeep\tlearning\n"
    )
    path = write(tmp_path, "terms.tsv", content)
    assert load_glossary(path, VARIABLE).as_dict() == {
        "人工智能": "AI",
        "机器学习": "machine learning",
        "深度学习": "deep\tlearning",
    }
    assert load_glossary(write(tmp_path, "terms.txt", "人工智能\tAI"), VARIABLE).as_dict() == {"人工智能": "AI"}


def test_a_json_file_with_a_byte_order_mark(tmp_path: Path) -> None:
    # editors on Windows save UTF-8 with a BOM; the TSV form accepts it, and so must the JSON form
    path = write(tmp_path, "terms.json", "\ufeff" + json.dumps({"人工智能": "AI"}))
    assert load_glossary(path, VARIABLE).as_dict() == {"人工智能": "AI"}


def test_a_tsv_line_without_a_tab_is_named_by_its_number(tmp_path: Path) -> None:
    path = write(tmp_path, "terms.tsv", "# header\n人工智能\tAI\n机器学习 machine learning\n")
    with pytest.raises(ConfigurationError) as caught:
        load_glossary(path, VARIABLE)
    assert str(caught.value) == (
        f"{VARIABLE}={path}: line 3 has no tab between the term and its target; a glossary file is a JSON object "
        "or TSV lines 'term<TAB>target'"
    )


def test_a_file_with_a_wrong_term_says_so_with_the_files_limit(tmp_path: Path) -> None:
    path = write(tmp_path, "terms.tsv", "AI\tartificial intelligence\n")
    with pytest.raises(ConfigurationError) as caught:
        load_glossary(path, VARIABLE)
    assert str(caught.value) == (
        f'{VARIABLE}={path}: the glossary: the term "AI" has no Chinese character; terms are Chinese; a glossary '
        "file is a JSON object or TSV lines 'term<TAB>target'"
    )
    assert isinstance(caught.value.__cause__, InvalidRequestError)


def test_the_file_limit_on_terms(tmp_path: Path) -> None:
    assert MAX_FILE_TERMS == 10_000
    lines = "".join(f"术语{n}\tterm {n}\n" for n in range(MAX_FILE_TERMS))
    assert len(load_glossary(write(tmp_path, "ok.tsv", lines), VARIABLE)) == 10_000
    path = write(tmp_path, "big.tsv", lines + "术语x\tone more\n")
    with pytest.raises(ConfigurationError, match=r": the glossary has 10,001 terms; the limit is 10,000; a glossary"):
        load_glossary(path, VARIABLE)


def test_invalid_json_is_a_configuration_error(tmp_path: Path) -> None:
    path = write(tmp_path, "terms.json", '{"人工智能": "AI",}')
    with pytest.raises(ConfigurationError) as caught:
        load_glossary(path, VARIABLE)
    message = str(caught.value)
    assert message.startswith(f"{VARIABLE}={path}: not valid JSON (")
    assert message.endswith("); a glossary file is a JSON object or TSV lines 'term<TAB>target'")
    array = write(tmp_path, "array.json", '[["人工智能", "AI"]]')
    with pytest.raises(ConfigurationError, match=r"the glossary must be an object .*; got a JSON array"):
        load_glossary(array, VARIABLE)


def test_an_unreadable_file_names_the_variable(tmp_path: Path) -> None:
    missing = tmp_path / "missing.tsv"
    with pytest.raises(ConfigurationError) as caught:
        load_glossary(missing, "MY_VARIABLE")
    assert str(caught.value).startswith(f"MY_VARIABLE={missing}: cannot read the glossary file (")
    assert isinstance(caught.value.__cause__, OSError)
    latin1 = write(tmp_path, "latin1.tsv", "caf\xe9\tcoffee\n".encode("latin-1"))
    with pytest.raises(ConfigurationError) as caught:
        load_glossary(latin1, "MY_VARIABLE")
    assert str(caught.value).startswith(f"MY_VARIABLE={latin1}: cannot read the glossary file (")
    assert isinstance(caught.value.__cause__, UnicodeDecodeError)


def test_the_deployment_glossary(tmp_path: Path) -> None:
    assert deployment_glossary(None, VARIABLE) == Glossary()
    path = write(tmp_path, "terms.tsv", "人工智能\tAI\n")
    assert deployment_glossary(path, VARIABLE).as_dict() == {"人工智能": "AI"}
    with pytest.raises(ConfigurationError, match=r"^OTHER="):
        deployment_glossary(tmp_path / "nope.tsv", "OTHER")


# --- the effect on a translation -------------------------------------------------------------------------------


@needs_shipped_bundle
def test_the_request_glossary_wins_over_the_deployments_in_a_translation() -> None:
    from handler.service import TranslationService

    deployment = Glossary.from_mapping({"人工智能": "artificial intelligence", "机器学习": "machine learning"})
    service = TranslationService(shipped_model(), shipped_config(beam_size=1), glossary=deployment)
    text = "我们研究人工智能和机器学习。"
    plain = service.translate_document(text)
    assert "artificial intelligence" in plain and "machine learning" in plain
    overridden = service.translate_document(text, TranslateOptions(glossary={"人工智能": "AI"}))  # type: ignore[arg-type]
    assert "AI" in overridden and "artificial intelligence" not in overridden and "machine learning" in overridden
