"""A finished bundle's manifest written again after a build step changed its files (``build.quantize
--per-row-activations``, ``build.optimize``, ``build.compact``): the model card, when the bundle has one, is
written again from the new record and listed with its new sha256, and the manifest is replaced by a rename, so that
a reader sees the old manifest or the new one, never half of one."""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from handler.model import bundle


def rewrite_manifest(bundle_dir: Path, record: dict[str, Any]) -> None:
    """Write ``record`` as ``bundle_dir``'s manifest, its model card (if listed) rewritten to match first."""
    if bundle.MODEL_CARD in record["files"]:
        from build.model_card import write_model_card

        card = write_model_card(bundle_dir, bundle.Manifest.from_dict(record))
        record["files"][bundle.MODEL_CARD] = asdict(bundle.file_entry(card))
    manifest_path = bundle_dir / bundle.MANIFEST
    temporary = manifest_path.with_name(f".{bundle.MANIFEST}.tmp")
    temporary.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, manifest_path)
