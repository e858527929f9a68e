"""A ModelScope hub id (``damo/nlp_csanmt_translation_zh2en``) becomes a local CSANMT folder, downloaded with
ModelScope's own ``snapshot_download`` (as a Hugging Face hub id becomes a Marian folder with huggingface_hub's).

modelscope reads its endpoint from ``MODELSCOPE_ENDPOINT`` (default https://www.modelscope.cn; the older
``MODELSCOPE_DOMAIN`` too), its cache from ``MODELSCOPE_CACHE`` (default ``~/.cache/modelscope``) and a token from
``MODELSCOPE_API_TOKEN``; a folder already downloaded is reused.
"""

from __future__ import annotations

from pathlib import Path

from build.errors import ExportError
from build.hub_check import looks_like_a_path, modelscope_download_hint


def resolve_folder(model: str | Path) -> Path:
    """A local CSANMT folder, or the snapshot folder of a ModelScope hub id (downloaded if needed)."""
    path = Path(model)
    if path.is_dir():
        return path
    if path.exists():
        raise ExportError(f"{path} is a file; --model takes a CSANMT folder or a ModelScope hub id")
    if looks_like_a_path(str(model)) or str(model).count("/") != 1:
        raise ExportError(
            f"CSANMT model folder {path} does not exist (a ModelScope id is <owner>/<name>, e.g. "
            "damo/nlp_csanmt_translation_zh2en)"
        )
    from modelscope.hub.snapshot_download import snapshot_download

    try:
        return Path(snapshot_download(str(model)))
    except Exception as error:  # network, missing repo, auth: one message with the cause, and the way around it
        raise ExportError(
            f"cannot download {model!r} from ModelScope: {error}; to build it anyway, "
            f"{modelscope_download_hint(str(model))}"
        ) from error
