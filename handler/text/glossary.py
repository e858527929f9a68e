"""Glossaries: Chinese terms and the English each must become, from a request or a deployment's file.

A glossary maps each source term (it must hold a Chinese character) to its target term; every occurrence of a
source term in a text yields the target term in the translation (``handler.text.spans`` carries it as a protected
span). A request's glossary (``"glossary": {"人工智能": "artificial intelligence"}``) is merged over the
deployment's (``TRANSLATE_GLOSSARY_FILE``, also used for file events): for a term in both, the request wins.

Limits: a request's glossary holds at most ``MAX_REQUEST_TERMS`` terms, a file at most ``MAX_FILE_TERMS``; a source
term is at most ``MAX_TERM_CHARS`` characters, a target term at most ``MAX_TARGET_CHARS``; neither may be empty or
hold a line break. A file is JSON (one object, term -> target) or TSV (``term<TAB>target`` per line; blank lines and
lines starting with ``#`` are skipped), UTF-8 with or without a byte-order mark.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from handler.errors import ConfigurationError, InvalidRequestError
from handler.text.spans import has_chinese

MAX_REQUEST_TERMS = 200
MAX_FILE_TERMS = 10_000
MAX_TERM_CHARS = 100
MAX_TARGET_CHARS = 200
_LINE_BREAK = re.compile(r"[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, int | float):
        return "a JSON number"
    if isinstance(value, list):
        return "a JSON array"
    if value is None:
        return "null"
    return "a JSON object" if isinstance(value, Mapping) else type(value).__name__


@dataclass(frozen=True)
class Glossary:
    """Source term -> target term, in a stable order (longest source terms match first)."""

    terms: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.terms)

    def __len__(self) -> int:
        return len(self.terms)

    def as_dict(self) -> dict[str, str]:
        return dict(self.terms)

    def merged(self, override: Glossary | None) -> Glossary:
        """This glossary with ``override``'s terms added; ``override`` wins for a term in both."""
        if not override:
            return self
        combined = self.as_dict()
        combined.update(override.as_dict())
        return Glossary(tuple(combined.items()))

    @classmethod
    def from_mapping(cls, data: object, *, limit: int = MAX_REQUEST_TERMS, where: str = "glossary") -> Glossary:
        """A glossary from user JSON; ``InvalidRequestError`` says which term is wrong and what is allowed."""
        if not isinstance(data, Mapping):
            raise InvalidRequestError(
                f'{where} must be an object of Chinese term -> English term, e.g. {{"人工智能": '
                f'"artificial intelligence"}}; got {_type_name(data)}'
            )
        if len(data) > limit:
            raise InvalidRequestError(f"{where} has {len(data):,} terms; the limit is {limit:,}")
        terms = []
        for source, target in data.items():
            shown = json.dumps(source, ensure_ascii=False)
            if not isinstance(source, str) or not source.strip():
                raise InvalidRequestError(f"{where}: every term must be a non-empty string; got {shown}")
            if len(source) > MAX_TERM_CHARS:
                raise InvalidRequestError(
                    f"{where}: the term {shown[:40]}... has {len(source)} characters; the limit is {MAX_TERM_CHARS}"
                )
            if not has_chinese(source):
                raise InvalidRequestError(f"{where}: the term {shown} has no Chinese character; terms are Chinese")
            if not isinstance(target, str) or not target.strip():
                raise InvalidRequestError(
                    f"{where}[{shown}] must be a non-empty string (the English term); got {_type_name(target)}"
                    if not isinstance(target, str)
                    else f"{where}[{shown}] must be a non-empty string (the English term); got an empty one"
                )
            if len(target) > MAX_TARGET_CHARS:
                raise InvalidRequestError(
                    f"{where}[{shown}] has {len(target)} characters; the limit is {MAX_TARGET_CHARS}"
                )
            if _LINE_BREAK.search(source) or _LINE_BREAK.search(target):
                raise InvalidRequestError(f"{where}[{shown}]: terms may not hold line breaks")
            terms.append((source.strip(), target.strip()))
        return cls(tuple(terms))


def load_glossary(path: Path, variable: str) -> Glossary:
    """The glossary in ``path`` (JSON object or TSV); ``ConfigurationError`` names ``variable`` and the problem."""
    try:
        raw = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows editors) is dropped, either format
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"{variable}={path}: cannot read the glossary file ({error})") from error
    try:
        if path.suffix.lower() == ".json":
            try:
                data: object = json.loads(raw)
            except json.JSONDecodeError as error:
                raise InvalidRequestError(f"not valid JSON ({error})") from error
        else:
            data = _tsv(raw)
        return Glossary.from_mapping(data, limit=MAX_FILE_TERMS, where="the glossary")
    except InvalidRequestError as error:
        raise ConfigurationError(
            f"{variable}={path}: {error}; a glossary file is a JSON object or TSV lines 'term<TAB>target'"
        ) from error


def _tsv(raw: str) -> dict[str, str]:
    terms: dict[str, str] = {}
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        source, tab, target = line.partition("\t")
        if not tab:
            raise InvalidRequestError(f"line {number} has no tab between the term and its target")
        terms[source] = target
    return terms


def deployment_glossary(path: Path | None, variable: str) -> Glossary:
    """The deployment's glossary (``TRANSLATE_GLOSSARY_FILE``): empty without a file; ``ConfigurationError`` names
    ``variable`` when the file cannot be used."""
    return load_glossary(path, variable) if path is not None else Glossary()
