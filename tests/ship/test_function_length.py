"""No function in ``handler/`` outside ``handler/model/`` is longer than ``MAX_FUNCTION_LINES`` lines (ast, nothing
imported): a longer one is split into named steps, so each can be read, and tested, on its own. ``handler/model/``
holds the decoding loops, which read best whole."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.ship.dockerfile_model import REPO_ROOT

MAX_FUNCTION_LINES = 100
HANDLER = REPO_ROOT / "handler"
EXEMPT = HANDLER / "model"


def function_lengths(root: Path, exempt: Path | None = None) -> list[tuple[int, str]]:
    """``(lines, "path:name")`` of every function and method under ``root`` (its decorators and docstring counted)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if exempt is not None and path.is_relative_to(exempt):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
                assert node.end_lineno is not None
                found.append((node.end_lineno - first + 1, f"{path.relative_to(root.parent)}:{node.name}"))
    return sorted(found, reverse=True)


def test_no_function_outside_the_model_is_longer_than_the_limit() -> None:
    too_long = [(lines, name) for lines, name in function_lengths(HANDLER, EXEMPT) if lines > MAX_FUNCTION_LINES]
    assert too_long == [], f"functions over {MAX_FUNCTION_LINES} lines (split them into named steps): {too_long}"


def test_the_measure_counts_every_line_of_a_function_and_skips_the_exempt_folder(tmp_path: Path) -> None:
    root = tmp_path / "handler"
    (root / "model").mkdir(parents=True)
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))  # the def line makes it one too long
    (root / "long.py").write_text(
        f"import functools\n\n@functools.cache\ndef long() -> None:\n{body}", encoding="utf-8"
    )
    (root / "short.py").write_text("class A:\n    def short(self) -> int:\n        return 1\n", encoding="utf-8")
    (root / "model" / "loop.py").write_text(f"def loop() -> None:\n{body}", encoding="utf-8")
    assert function_lengths(root, root / "model") == [
        (MAX_FUNCTION_LINES + 2, "handler/long.py:long"),
        (2, "handler/short.py:short"),
    ]
