"""The licence of the checkpoint a bundle is built from, for the manifest's ``licence`` field.

Our own checkpoints (``training.json`` names the training data) take the licence of their non-commercial training
sources when they have any (the shipped default: CC BY-NC-SA 4.0); foreign checkpoints (a Hugging Face hub id's
snapshot, a downloaded folder, a ModelScope folder) take the ``license:`` their ``README.md`` model card declares.
"" when neither says: the runtime then reports the licence as unknown (``handler.model.licence``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from build.corpus import ALLOWED_SOURCES
from handler.model import licence

CHECKPOINT_CARD = "README.md"  # the model card of a Hugging Face or ModelScope checkpoint folder


def source_licence(folder: Path, training: dict[str, Any]) -> str:
    """The licence of the checkpoint in ``folder`` with the training record ``training`` ({} for foreign ones)."""
    data = training.get("data") or {}
    if data:
        sources = [ALLOWED_SOURCES[name] for name in data if name in ALLOWED_SOURCES]
        names = {
            licence.licence_named_in(source.licence) or source.licence for source in sources if source.non_commercial
        }
        return " + ".join(sorted(names))
    card = folder / CHECKPOINT_CARD
    if card.is_file():
        return licence.from_card(card.read_text(encoding="utf-8", errors="replace")).name or ""
    return ""
