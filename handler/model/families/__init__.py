"""The model families the runtime serves, keyed by the manifest's ``family`` (absent: ``"marian"``).

Each family module provides a ``ModelFamily`` (``handler.model.families.base``): graph contract, tokenizer, decoding
protocol. The loader picks one with ``family_named``; nothing else in the runtime looks at the family.
A family whose tokenizer needs extra libraries imports them only when one of its bundles is loaded.
"""

from __future__ import annotations

from handler.errors import BundleError
from handler.model.bundle import FAMILY_MARIAN
from handler.model.families.base import ModelFamily
from handler.model.families.csanmt import CsanmtFamily
from handler.model.families.marian import MarianFamily

DEFAULT_FAMILY = FAMILY_MARIAN

FAMILIES: dict[str, ModelFamily] = {family.name: family for family in (MarianFamily(), CsanmtFamily())}


def family_named(name: str | None, where: str = "manifest.json") -> ModelFamily:
    """The family called ``name`` (None: the default, Marian); ``BundleError`` listing the known ones otherwise."""
    key = DEFAULT_FAMILY if name is None else name
    family = FAMILIES.get(key) if isinstance(key, str) else None
    if family is None:
        raise BundleError(
            f"{where} names model family {name!r}, which this runtime does not serve; "
            f"supported families: {', '.join(sorted(FAMILIES))}"
        )
    return family
