"""Glossaries: validation with messages that say what is allowed, files, and merging."""

from __future__ import annotations

from pathlib import Path

import pytest

from handler.errors import ConfigurationError, InvalidRequestError
from handler.text.glossary import MAX_REQUEST_TERMS, Glossary, load_glossary


def test_a_request_glossary_is_validated_term_by_term() -> None:
    assert Glossary.from_mapping({"人工智能": "artificial intelligence"}).as_dict() == {
        "人工智能": "artificial intelligence"
    }
    with pytest.raises(
        InvalidRequestError, match="must be an object of Chinese term -> English term.*got a JSON array"
    ):
        Glossary.from_mapping(["人工智能"])
    with pytest.raises(
        InvalidRequestError, match=r'glossary\["人工智能"\] must be a non-empty string.*got a JSON number'
    ):
        Glossary.from_mapping({"人工智能": 1})
    with pytest.raises(InvalidRequestError, match='the term "AI" has no Chinese character'):
        Glossary.from_mapping({"AI": "artificial intelligence"})
    with pytest.raises(
        InvalidRequestError, match=f"has {MAX_REQUEST_TERMS + 1} terms; the limit is {MAX_REQUEST_TERMS}"
    ):
        Glossary.from_mapping({f"词{i}": "word" for i in range(MAX_REQUEST_TERMS + 1)})
    with pytest.raises(InvalidRequestError, match="may not hold line breaks"):
        Glossary.from_mapping({"词": "a\nb"})


def test_a_request_term_wins_over_the_deployment_term() -> None:
    deployment = Glossary.from_mapping({"模型": "model", "芯片": "chip"})
    merged = deployment.merged(Glossary.from_mapping({"芯片": "microchip"}))
    assert merged.as_dict() == {"模型": "model", "芯片": "microchip"}


def test_glossary_files_are_json_or_tsv(tmp_path: Path) -> None:
    (tmp_path / "g.json").write_text('{"人工智能": "AI"}', encoding="utf-8")
    (tmp_path / "g.tsv").write_text("# terms\n人工智能\tAI\n\n芯片\tchip\n", encoding="utf-8")
    assert load_glossary(tmp_path / "g.json", "VAR").as_dict() == {"人工智能": "AI"}
    assert load_glossary(tmp_path / "g.tsv", "VAR").as_dict() == {"人工智能": "AI", "芯片": "chip"}
    (tmp_path / "bad.tsv").write_text("人工智能 AI\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"^VAR=.*bad.tsv: line 1 has no tab"):
        load_glossary(tmp_path / "bad.tsv", "VAR")
    with pytest.raises(ConfigurationError, match="cannot read the glossary file"):
        load_glossary(tmp_path / "missing.json", "VAR")
