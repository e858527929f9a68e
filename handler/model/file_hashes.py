"""The sha256 of a bundle's files: hashed side by side, largest first, and at a cold start begun before the imports.

``sha256s(folder, names)`` returns the digest of each file, hashing on ``threads`` threads (hashlib hashes without
the GIL, so the threads run on every core while the interpreter does other work). ``begin(folder)`` starts hashing
the files a bundle's ``manifest.json`` lists, on background threads, and returns at once: ``handler.coldstart``
calls it before it imports ONNX Runtime, numpy and the service (~0.2-0.3 s on one core, the other one idle), so that
by the time the loader checks the hashes most of them are done. Nothing here judges a digest: the loader compares
them with the manifest (``handler.model.loader.verify_file_hashes``), and refuses the bundle on a mismatch.

A hash begun early and not started yet when ``sha256s`` asks for it is taken back and done with the rest, on all
the check's threads. A digest begun early is used once, by the first ``sha256s`` that asks for that file, and only
if the file is still the one that was hashed (same device, inode, size, modification and change times) and in the
process that began it (a forked child hashes again); otherwise the file is hashed again. Only regular files
directly inside the folder are begun early; ``sha256s`` hashes what it is asked and raises ``OSError`` for a file
it cannot read.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from handler.model import bundle

# Each file is hashed through a memory map, WINDOW_BYTES at a time: hashlib hashes a whole window without the GIL,
# so a hashing thread asks for the GIL once per ~10 ms of work. Read in 1 MB chunks it asked every ~0.6 ms and,
# while the main thread ran Python (the imports, the tokenizer), waited up to the 5 ms switch interval each time:
# 434 MB hashed beside the imports took 0.46 s instead of 0.28 s alone (0.36 s in 16 MB windows; 0.31 s in 64 MB
# ones, measured on this 2-core machine). A window's pages count in RSS while it is mapped: 16 MB per thread. A
# file cut shorter while it is mapped would stop the process (SIGBUS), as it would ONNX Runtime reading mapped
# external data: the build replaces a bundle's files by renames (build.export, build.optimize), never in place.
WINDOW_BYTES = 16 << 20
THREADS = 2
# threads hashing early: one, so that the imports keep a core of their own on a 2-core machine
EARLY_THREADS = 1

_Identity = tuple[int, int, int, int, int]
_lock = threading.Lock()
_begun: dict[Path, tuple[_Identity, Future[str]]] = {}
_begun_by = os.getpid()


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        for offset in range(0, size, WINDOW_BYTES):
            length = min(WINDOW_BYTES, size - offset)
            try:
                window = mmap.mmap(handle.fileno(), length, offset=offset, access=mmap.ACCESS_READ)
            except (OSError, ValueError):  # a file that cannot be mapped (a special file system): read it
                handle.seek(offset)
                digest.update(handle.read(length))
                continue
            with window:
                digest.update(window)
        handle.seek(size)
        digest.update(handle.read())  # whatever the file grew by meanwhile: it then differs from the manifest
    return digest.hexdigest()


def _identity(path: Path) -> _Identity:
    found = path.stat()
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def _largest_first(folder: Path, names: Sequence[str]) -> list[str]:
    def size(name: str) -> int:
        try:
            return (folder / name).stat().st_size
        except OSError:
            return 0

    return sorted(names, key=size, reverse=True)


def _inside(name: str) -> bool:
    """Whether ``name`` is a file name directly inside the folder (the loader refuses a manifest listing others)."""
    return Path(name).name == name and name not in ("", ".", "..")


def begin(folder: Path | str, *, threads: int | None = None) -> int:
    """Start hashing the regular files ``folder/manifest.json`` lists, largest first; the number begun (0 when
    the folder has no readable manifest)."""
    folder = Path(folder).resolve()
    try:
        listed = json.loads((folder / bundle.MANIFEST).read_text(encoding="utf-8"))["files"]
        names = [name for name in listed if isinstance(name, str) and _inside(name)]
    except (OSError, ValueError, KeyError, TypeError):
        return 0
    files = {name: folder / name for name in names if (folder / name).is_file()}
    if not files:
        return 0
    workers = EARLY_THREADS if threads is None else max(1, threads)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sha256-early")
    with _lock:
        _forget_another_process()
        for name in _largest_first(folder, list(files)):
            path = files[name]
            try:
                identity = _identity(path)
            except OSError:
                continue
            _begun[path] = (identity, pool.submit(sha256_of, path))
    pool.shutdown(wait=False)  # its threads end when the files are hashed
    return len(files)


def _forget_another_process() -> None:
    global _begun_by
    if _begun_by != os.getpid():  # a forked child: the parent's threads are not here, their futures never end
        _begun.clear()
        _begun_by = os.getpid()


def _take_begun(path: Path) -> Future[str] | None:
    with _lock:
        _forget_another_process()
        entry = _begun.pop(path, None)
    if entry is None:
        return None
    identity, future = entry
    if future.cancel():  # not started yet: hashed with the rest, on all the check's threads
        return None
    try:
        still = _identity(path) == identity
    except OSError:
        still = False
    return future if still else None


def sha256s(folder: Path | str, names: Sequence[str], *, threads: int = THREADS) -> dict[str, str]:
    """``{name: sha256 of folder/name}``: what ``begin`` already started, the rest on ``threads`` threads."""
    folder = Path(folder)
    begun = {name: _take_begun(folder.resolve() / name) for name in names}
    rest = _largest_first(folder, [name for name in names if begun[name] is None])
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="sha256") as pool:
        hashed = dict(zip(rest, pool.map(lambda name: sha256_of(folder / name), rest), strict=True))
        for name, future in begun.items():
            if future is not None:
                try:
                    hashed[name] = future.result()
                except OSError:  # the early read failed (the file changed meanwhile): read it now
                    hashed[name] = sha256_of(folder / name)
    return {name: hashed[name] for name in names}
