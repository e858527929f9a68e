"""Can ``make model MODEL=<hub id>`` download that checkpoint here? Asked before the 3.8 GB build environment is
installed, with the standard library only (``make model`` runs it with the system ``python3``):

    python3 -m build.hub_check MODEL [--family marian|csanmt]

Exit status 0 when MODEL is an existing folder (``build.export`` judges what is in it), a hub id already in the
Hugging Face cache (the hub library falls back to it offline), or a hub id the hub answers for
(``GET $HF_ENDPOINT/api/models/<id>``, default endpoint https://huggingface.co, ``HF_TOKEN`` sent when set, at most
``HUB_CHECK_TIMEOUT_S`` seconds, default 10). Otherwise exit status 2 and what to do: download the checkpoint where
there is network and pass ``MODEL=<folder>``. ``HF_HUB_OFFLINE=1`` means: the cache or nothing.

A CSANMT id (``damo/<name>``, another ``<owner>/<name>`` naming csanmt, or any ``<owner>/<name>`` with
``--family csanmt``) is asked of ModelScope instead, as its ``snapshot_download`` asks first
(``GET $MODELSCOPE_ENDPOINT/api/v1/models/<id>/repo/files``, default endpoint https://www.modelscope.cn,
``MODELSCOPE_API_TOKEN`` sent when set).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_MODELSCOPE_ENDPOINT = "https://www.modelscope.cn"
MODELSCOPE_OWNERS = ("damo/",)  # the owner of ModelScope's CSANMT translation models
DEFAULT_TIMEOUT_S = 10.0
TRUE_VALUES = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class HubSettings:
    """Where and how the hub is asked, from the same variables huggingface_hub reads."""

    endpoint: str = DEFAULT_ENDPOINT
    offline: bool = False
    cache: Path = Path.home() / ".cache" / "huggingface" / "hub"
    token: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    modelscope_endpoint: str = DEFAULT_MODELSCOPE_ENDPOINT
    modelscope_token: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> HubSettings:
        home = Path(
            environ.get("HF_HOME") or Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface"
        )
        cache = Path(environ.get("HF_HUB_CACHE") or environ.get("HUGGINGFACE_HUB_CACHE") or home / "hub")
        timeout = environ.get("HUB_CHECK_TIMEOUT_S") or ""
        return cls(
            endpoint=(environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/"),
            offline=(environ.get("HF_HUB_OFFLINE") or "").strip().lower() in TRUE_VALUES,
            cache=cache,
            token=environ.get("HF_TOKEN") or None,
            timeout_s=float(timeout) if timeout else DEFAULT_TIMEOUT_S,
            modelscope_endpoint=modelscope_endpoint(environ),
            modelscope_token=environ.get("MODELSCOPE_API_TOKEN") or None,
        )


def modelscope_endpoint(environ: Mapping[str, str]) -> str:
    """modelscope's own choice: ``MODELSCOPE_ENDPOINT``, else the older ``MODELSCOPE_DOMAIN`` (https), else default."""
    endpoint = (environ.get("MODELSCOPE_ENDPOINT") or "").strip()
    if not endpoint:
        domain = (environ.get("MODELSCOPE_DOMAIN") or "").strip()
        endpoint = (domain if "://" in domain else f"https://{domain}") if domain else DEFAULT_MODELSCOPE_ENDPOINT
    return endpoint.rstrip("/")


def download_hint(model: str) -> str:
    """How to build from a folder instead: download it where there is network, bring it here, pass its path."""
    folder = model.rstrip("/").rsplit("/", 1)[-1]
    return (
        f"download it where you have network and pass MODEL=<folder>: pip install huggingface_hub, then "
        f"`hf download {model} --local-dir {folder}` (older huggingface_hub: `huggingface-cli download {model} "
        f"--local-dir {folder}`), copy that folder here and run: make model MODEL={folder} NAME={folder}"
    )


def looks_like_a_path(model: str) -> bool:
    """A hub id is ``name`` or ``owner/name``; anything else can only be meant as a folder."""
    return model.startswith((".", "/", "~")) or model.count("/") > 1 or model.endswith("/")


def is_modelscope_id(model: str) -> bool:
    """``owner/name`` of a CSANMT model on ModelScope: owned by ``damo`` or naming csanmt."""
    if looks_like_a_path(model) or model.count("/") != 1:
        return False
    return model.startswith(MODELSCOPE_OWNERS) or "csanmt" in model.lower()


def modelscope_download_hint(model: str) -> str:
    """How to build a CSANMT model from a folder instead."""
    return (
        f"download the folder where you have network (`pip install modelscope && modelscope download {model} "
        "--local-dir DIR`), copy it here and pass MODEL=DIR"
    )


def in_cache(model: str, cache: Path) -> bool:
    snapshots = cache / f"models--{model.replace('/', '--')}" / "snapshots"
    return snapshots.is_dir() and any(snapshots.iterdir())


def ask_hub(model: str, settings: HubSettings) -> str | None:
    """None when the hub answers for the model, else why not."""
    return _ask(
        f"{settings.endpoint}/api/models/{model}",
        settings.token,
        settings.timeout_s,
        model,
        hub=f"the Hugging Face hub ({settings.endpoint})",
        unreachable=f"the Hugging Face hub at {settings.endpoint}",
        login="for a gated or private model log in (HF_TOKEN=...)",
    )


def ask_modelscope(model: str, settings: HubSettings) -> str | None:
    """None when ModelScope lists the model's files (the call its ``snapshot_download`` makes first), else why not."""
    return _ask(
        f"{settings.modelscope_endpoint}/api/v1/models/{model}/repo/files?Revision=master&Recursive=True",
        settings.modelscope_token,
        settings.timeout_s,
        model,
        hub=f"ModelScope ({settings.modelscope_endpoint})",
        unreachable=f"ModelScope at {settings.modelscope_endpoint}",
        login="for a private model set MODELSCOPE_API_TOKEN",
    )


def _ask(
    url: str, token: str | None, timeout_s: float, model: str, *, hub: str, unreachable: str, login: str
) -> str | None:
    """None when ``url`` answers with JSON, else why not, in words naming ``hub``."""
    request = urllib.request.Request(url, method="GET")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:  # noqa: S310 - http(s) endpoint
            json.load(answer)
        return None
    except urllib.error.HTTPError as error:
        if error.code in (401, 403, 404):
            return f"{hub} has no model {model!r} this machine may read (HTTP {error.code}): check the id, or {login}"
        return f"{hub} answered HTTP {error.code} for {model!r}"
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        return f"cannot reach {unreachable} ({reason})"


def problem(model: str, settings: HubSettings, family: str | None = None) -> str | None:
    """None when ``make model`` can go on with MODEL, else the message that says what to do instead."""
    if Path(model).expanduser().exists():
        return None
    if looks_like_a_path(model):
        return f"MODEL={model}: no such folder (a hub id is <owner>/<name>, e.g. Helsinki-NLP/opus-mt-zh-en)"
    if is_modelscope_id(model) or (family == "csanmt" and model.count("/") == 1):
        unanswered = ask_modelscope(model, settings)
        if unanswered is None:
            return None
        hint = modelscope_download_hint(model)
        return f"MODEL={model}: {unanswered}. Nothing was installed. To build it anyway, {hint}"
    if family == "csanmt" or "csanmt" in model.lower():
        return (
            f"MODEL={model} is not a local folder; CSANMT models come from ModelScope, not the Hugging Face hub: "
            f"download the folder where you have network (`modelscope download {model} --local-dir DIR`) and pass "
            "MODEL=DIR"
        )
    if in_cache(model, settings.cache):
        return None
    why: str | None = f"HF_HUB_OFFLINE is set and {model!r} is not in the Hugging Face cache ({settings.cache})"
    if not settings.offline:
        why = ask_hub(model, settings)
    if why is None:
        return None
    return f"MODEL={model}: {why}. Nothing was installed. To build it anyway, {download_hint(model)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m build.hub_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="checkpoint folder or Hugging Face hub id (make model's MODEL)")
    parser.add_argument("--family", default=None, help="make model's FAMILY, when given")
    arguments = parser.parse_args(argv)
    message = problem(arguments.model, HubSettings.from_env(os.environ), arguments.family or None)
    if message is None:
        return 0
    print(f"make model: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
