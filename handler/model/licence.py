"""A bundle's licence, and the one-line notice a non-commercial (demo) bundle shows wherever it is served or shipped.

The licence is the manifest's ``licence`` field when the build wrote one, else what the bundle's ``MODEL_CARD.md``
says: a ``license:`` key in its front matter (Hugging Face cards), a ``Licence: ...`` line, or the first licence
named in its "Terms of use" / "Licence" section. A licence is non-commercial when its identifier carries ``NC``
(CC BY-NC, CC BY-NC-SA, CC BY-NC-ND, ``cc-by-nc-4.0``) or the text that names it says non-commercial. The shipped
default bundle (CC BY-NC-SA 4.0) is such a demo.

Standard library only, so that shell scripts can ask with any ``python3`` (no numpy, no ONNX Runtime)::

    python3 -m handler.model.licence model_artifacts/default          # the notice, or nothing
    python3 -m handler.model.licence --json model_artifacts/default   # {"name": ..., "commercial_use": ..., ...}
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# spelled here, not imported from handler.model.bundle, so that this module stays importable on its own
MANIFEST = "manifest.json"
MODEL_CARD = "MODEL_CARD.md"

PRODUCTION_HUB_ID = "Helsinki-NLP/opus-mt-zh-en"
PRODUCTION_BUNDLE = "model_artifacts/opus-mt-zh-en"
HOW_TO_BUILD_PRODUCTION = (
    f"for production, build one with `make model MODEL={PRODUCTION_HUB_ID}`, then serve "
    f"`TRANSLATE_BUNDLE_DIR={PRODUCTION_BUNDLE} make run` or bake `make image BUNDLE={PRODUCTION_BUNDLE}`"
)

# "NC" as a licence element (CC BY-NC-SA 4.0, cc-by-nc-4.0), or the words
_NON_COMMERCIAL = re.compile(r"(?<![a-z0-9])nc(?![a-z0-9])|non[- ]?commercial", re.IGNORECASE)
# a licence named in prose: Creative Commons (CC BY-NC-SA 4.0, CC0), or a common software licence
_LICENCE_NAME = re.compile(
    r"\bCC[- ]BY(?:[- ](?:NC|SA|ND))*(?:[- ]\d\.\d)?(?:[- ][A-Z]{2}\b)?"
    r"|\bCC0(?:[- ]1\.0)?"
    r"|\bApache(?:[- ]License)?[- ]?(?:2\.0)?"
    r"|\bMIT\b"
    r"|\bBSD[- ]\d[- ]Clause\b",
    re.IGNORECASE,
)
_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.DOTALL)
_FRONT_MATTER_LICENSE = re.compile(r"^licen[cs]e\s*:\s*(.+?)\s*$", re.MULTILINE | re.IGNORECASE)
_LICENCE_LINE = re.compile(r"^[*_\s-]*licen[cs]e[*_]*\s*:[*_]*\s*(.+?)\s*$", re.MULTILINE | re.IGNORECASE)
_SECTION = re.compile(r"^#{1,6}\s*(.+?)\s*$", re.MULTILINE)
_TERMS_HEADINGS = ("terms of use", "licence", "license", "licensing")


@dataclass(frozen=True)
class BundleLicence:
    """What a bundle may be used for: ``name`` (None when unknown), ``commercial_use`` (None when unknown) and the
    one-line ``notice`` to show wherever it is served (None for commercial-use or unknown bundles)."""

    name: str | None
    commercial_use: bool | None
    notice: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def notice_for(licence_name: str | None) -> str:
    """The one-line notice of a non-commercial bundle."""
    named = f" ({licence_name})" if licence_name else ""
    return f"Non-commercial demo model{named}: not for commercial use; {HOW_TO_BUILD_PRODUCTION}."


def classify(name: str | None, text: str | None = None) -> BundleLicence:
    """The licence ``name`` (None when unknown), non-commercial when it or ``text`` (the words around it) says so."""
    name = name.strip() if name and name.strip() else None
    if any(part and _NON_COMMERCIAL.search(part) for part in (name, text)):
        return BundleLicence(name=name, commercial_use=False, notice=notice_for(name))
    if name is None:
        return BundleLicence(name=None, commercial_use=None, notice=None)
    return BundleLicence(name=name, commercial_use=True, notice=None)


def from_card(card: str) -> BundleLicence:
    """The licence a model card states (``MODEL_CARD.md``, or a checkpoint's Hugging Face ``README.md``)."""
    front = _FRONT_MATTER.match(card)
    if front:
        found = _FRONT_MATTER_LICENSE.search(front.group(1))
        if found:
            return classify(found.group(1).strip("'\""))
    line = _LICENCE_LINE.search(card)
    if line:
        return classify(line.group(1).strip("*_` "))
    terms = _terms_section(card)
    if terms is None:
        return classify(None)
    result = classify(licence_named_in(terms), terms)
    if result.commercial_use is None and re.search(r"commercial use", terms, re.IGNORECASE):
        return BundleLicence(name=None, commercial_use=True, notice=None)  # "permit commercial use", no name
    return result


def licence_named_in(text: str) -> str | None:
    """The first licence ``text`` names ("CC BY-NC-SA 4.0 (DailyDialog)" -> "CC BY-NC-SA 4.0"), or None."""
    named = _LICENCE_NAME.search(text)
    return named.group(0) if named else None


def _terms_section(card: str) -> str | None:
    headings = list(_SECTION.finditer(card))
    for index, heading in enumerate(headings):
        if heading.group(1).strip("# ").lower() in _TERMS_HEADINGS:
            end = headings[index + 1].start() if index + 1 < len(headings) else len(card)
            return card[heading.end() : end]
    return None


class LicenceError(Exception):
    """The folder is not a bundle (or its manifest cannot be read)."""


def read(bundle_dir: Path | str) -> BundleLicence:
    """The licence of the bundle in ``bundle_dir``: its manifest's ``licence`` field, else its model card's."""
    folder = Path(bundle_dir)
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise LicenceError(f"{folder} is not a model bundle: it has no {MANIFEST} (build one with `make model`)")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LicenceError(f"cannot read {manifest_path}: {error}") from error
    stated = manifest.get("licence") if isinstance(manifest, dict) else None
    if isinstance(stated, str) and stated.strip():
        return classify(stated)
    card_path = folder / MODEL_CARD
    if not card_path.is_file():
        return classify(None)
    try:
        return from_card(card_path.read_text(encoding="utf-8", errors="replace"))
    except OSError as error:
        raise LicenceError(f"cannot read {card_path}: {error}") from error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m handler.model.licence",
        description="Print the one-line notice of a non-commercial (demo) bundle; nothing for a commercial-use one.",
    )
    parser.add_argument("bundle", type=Path, help="bundle folder, e.g. model_artifacts/default")
    parser.add_argument("--json", action="store_true", help="print the whole record as JSON instead")
    args = parser.parse_args(argv)
    try:
        licence = read(args.bundle)
    except LicenceError as error:
        print(f"handler.model.licence: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(licence.to_dict(), ensure_ascii=False))
    elif licence.notice:
        print(licence.notice)
    return 0


if __name__ == "__main__":
    sys.exit(main())
