"""The serving sweep's three servers (``bench.load.serving``), each behind functions-framework's gunicorn server as
``make run`` starts it:

* ``this-tree``: this checkout's ``infra/local/run.sh`` (the working tree as it is: one shared decoder per process,
  ``handler/decoder.py``);
* ``per-request``: the same script of a ``git worktree`` of ``--baseline-commit`` (default ``7295841``, the commit
  before the shared decoder: each request decoded alone under the service's lock), made once under
  ``.bench/serving/`` and served from the same environment and bundle; skipped, saying why, where the history
  lacks the commit;
* ``ctranslate2``: ``bench/load/ctranslate2_server.py`` on the same bundle's model converted by
  ``bench.pipeline.ctranslate2_model`` (its decoder started from the trained ``<pad>`` row); skipped for a CSANMT
  bundle, which CTranslate2 does not convert, and for a bundle whose transformers checkpoint is not here.

Which checkpoint CTranslate2 converts: for ``random-opus`` the very checkpoint the bundle was exported from
(``.bench/runtime/checkpoint``); for ``default`` ``model_artifacts/training-checkpoint`` rebuilt as a
transformers folder (``bench.pipeline.default_checkpoint``: the same architecture and vocabulary, the main training
run's weights rather than the cooldown weights the bundle holds, so its translations differ a little); for another
bundle folder the ``source_model`` its manifest names, when that folder is here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.load.served_function import REPO_ROOT
from bench.pipeline.runtime_bench import BENCH_DIR, CHECKPOINT

SERVING_DIR = REPO_ROOT / ".bench" / "serving"  # the baseline worktrees and converted models
BASELINE_COMMIT = "7295841"
CT2_SERVER = REPO_ROOT / "bench" / "load" / "ctranslate2_server.py"
UNAVAILABLE_EXIT = 3
CSANMT_NOTE = "CTranslate2 does not convert CSANMT models (it has no converter for their architecture)"


@dataclass(frozen=True)
class Unavailable:
    """A server that this run cannot start, and why."""

    reason: str


def git(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def baseline_worktree(commit: str, serving_dir: Path = SERVING_DIR) -> Path | Unavailable:
    """A detached ``git worktree`` of ``commit`` under ``serving_dir`` (made once, reused while it is at that
    commit), or why there is none."""
    resolved = git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    if resolved.returncode != 0:
        return Unavailable(f"git history lacks commit {commit} (a shallow clone or a source archive?)")
    sha = resolved.stdout.strip()
    folder = serving_dir / f"baseline-{sha[:12]}"
    if (folder / ".git").exists():
        head = git("rev-parse", "HEAD", cwd=folder).stdout.strip()
        if head == sha:
            return folder
        return Unavailable(
            f"{folder} is at {head[:12] or 'no commit'}, not {sha[:12]}: remove it (git worktree remove)"
        )
    serving_dir.mkdir(parents=True, exist_ok=True)
    made = git("worktree", "add", "--detach", str(folder), sha)
    if made.returncode != 0:
        return Unavailable(f"git worktree add {folder} {sha[:12]} failed: {made.stderr.strip()}")
    return folder


def is_csanmt(bundle_dir: Path) -> bool:
    manifest = bundle_dir / "manifest.json"
    return manifest.is_file() and json.loads(manifest.read_text(encoding="utf-8")).get("family") == "csanmt"


def checkpoint_for(bundle: str, bundle_dir: Path) -> Path | Unavailable:
    """The transformers checkpoint of ``bundle``'s model (written first where it must be: torch, so in a child
    process of the sweep), or why there is none."""
    if is_csanmt(bundle_dir):
        return Unavailable(CSANMT_NOTE)
    if bundle == "default":
        from bench.pipeline import default_checkpoint

        return default_checkpoint.write(BENCH_DIR / "default" / "checkpoint")
    if bundle == "random-opus":
        return BENCH_DIR / CHECKPOINT
    source = json.loads((bundle_dir / "manifest.json").read_text(encoding="utf-8")).get("source_model") or ""
    folder = (REPO_ROOT / source).resolve() if source else None
    if folder is None or not (folder / "config.json").is_file():
        return Unavailable(
            f"the transformers checkpoint of {bundle_dir} (its manifest's source_model {source!r}) is not here"
        )
    return folder


def ctranslate2_model(bundle: str, bundle_dir: Path, python: Path) -> Path | Unavailable:
    """The converted model of ``bundle`` for the CTranslate2 server (cached under ``.bench/serving/``), converted by
    a child process of ``python`` (``python -m bench.load.serving_servers BUNDLE BUNDLE_DIR``)."""
    if is_csanmt(bundle_dir):  # said without starting a process
        return Unavailable(CSANMT_NOTE)
    command = [str(python), "-m", "bench.load.serving_servers", bundle, str(bundle_dir)]
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    said = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode == UNAVAILABLE_EXIT:
        return Unavailable(said)
    if done.returncode != 0:
        return Unavailable(f"converting {bundle} for CTranslate2 failed: {done.stderr.strip()[-600:]}")
    return Path(said)


def main(argv: list[str] | None = None) -> int:
    """Converts one bundle's model for the CTranslate2 server and prints the folder (or why not, exit 3)."""
    bundle, bundle_dir = argv if argv is not None else sys.argv[1:]
    checkpoint = checkpoint_for(bundle, Path(bundle_dir))
    if isinstance(checkpoint, Unavailable):
        print(checkpoint.reason)
        return UNAVAILABLE_EXIT
    from bench.pipeline import ctranslate2_model as conversion

    print(conversion.convert(checkpoint, SERVING_DIR / "ctranslate2" / _slug(bundle), trained_start=True))
    return 0


def _slug(bundle: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in bundle.strip("/").replace("/", "_"))[-80:]


def default_ctranslate2_venv() -> Path:
    """This interpreter's environment (``.venv``: the one with ctranslate2), which serves the CTranslate2 app."""
    return Path(sys.prefix)


if __name__ == "__main__":
    sys.exit(main())
