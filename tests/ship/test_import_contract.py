"""handler/'s layers, read from the imports of its source (ast, nothing imported): arrows point down only.

    handler/  errors, config, options, service, streaming, translation_memory, coldstart   the core
      adapters/  events and servers -> service calls
      api/       the HTTP surfaces (framework-free)
      text/      text in and out of the model
      formats/   the file formats: one module per format
      model/     the model at run time
      storage/   files in object stores

Rules: no import cycle, counting imports inside functions too (so that none exists to dodge a cycle); ``text`` and
``model`` never import ``api``, ``adapters``, ``formats`` or ``storage``; ``formats`` never imports ``api``,
``adapters`` or ``storage``; ``api`` never imports ``adapters``; the core never
imports ``api`` or ``adapters``; ``config`` imports nothing of handler but ``errors``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ship.dockerfile_model import REPO_ROOT

HANDLER = REPO_ROOT / "handler"


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    in_function: bool


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[list[str], int, bool]]:
    """(candidate module names, line, inside a function) for every import statement of ``tree``: for
    ``from a.b import c`` the candidates are ``a.b.c`` (when it is a module) before ``a.b``."""

    def visit(node: ast.AST, in_function: bool) -> Iterator[tuple[list[str], int, bool]]:
        for child in ast.iter_child_nodes(node):
            nested = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield [alias.name], child.lineno, in_function
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative: from the importer's package
                    package = module.split(".") if is_package else module.split(".")[:-1]
                    package = package[: len(package) - (child.level - 1)]
                    base = ".".join([*package, *([base] if base else [])])
                for alias in child.names:
                    yield [f"{base}.{alias.name}", base], child.lineno, in_function
            yield from visit(child, nested)

    yield from visit(tree, False)


def read_imports(root: Path = HANDLER) -> tuple[set[str], list[Import]]:
    modules = {module_name(path, root): path for path in root.rglob("*.py")}
    found: list[Import] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for candidates, line, in_function in _imports(tree, module, path.name == "__init__.py"):
            imported = next((name for name in candidates if name in modules), None)
            if imported is not None and imported != module:
                found.append(Import(module, imported, line, in_function))
    return set(modules), found


def find_cycle(modules: set[str], imports: list[Import]) -> list[str] | None:
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for edge in imports:
        graph[edge.importer].add(edge.imported)
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(modules):
        if module not in state and (cycle := visit(module)) is not None:
            return cycle
    return None


def _layer(module: str) -> str:
    parts = module.split(".")
    if module == "handler.__main__":
        return "adapters"  # `python -m handler`: the command line's two-line delegate
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "core"


LAYERS = ("adapters", "api", "text", "model", "formats", "storage")
FORBIDDEN = {  # layer -> the layers it must never import
    "text": {"api", "adapters", "formats", "storage"},
    "model": {"api", "adapters", "formats", "storage"},
    "formats": {"api", "adapters", "storage"},
    "api": {"adapters"},
    "core": {"api", "adapters"},
}
CONFIG_MAY_IMPORT = {"handler", "handler.errors"}


def violations(imports: list[Import]) -> list[str]:
    found = []
    for edge in imports:
        if edge.imported == "handler":
            continue  # the package itself (its import-time clock)
        if _layer(edge.imported) in FORBIDDEN.get(_layer(edge.importer), set()):
            found.append(
                f"{edge.importer} imports {edge.imported} (line {edge.line}): "
                f"{_layer(edge.importer)} must not import {_layer(edge.imported)}"
            )
        if edge.importer == "handler.config" and edge.imported not in CONFIG_MAY_IMPORT:
            found.append(f"handler.config imports {edge.imported} (line {edge.line}): config depends only on errors")
    return list(dict.fromkeys(found))  # `from a import b, c`: one report per statement


def test_ls_handler_shows_the_layers() -> None:
    folders = sorted(p.name for p in HANDLER.iterdir() if p.is_dir() and p.name != "__pycache__")
    modules = sorted(p.stem for p in HANDLER.glob("*.py"))
    assert folders == sorted(LAYERS)
    assert modules == [
        "__init__",
        "__main__",
        "alternatives",
        "coldstart",
        "config",
        "decoder",
        "errors",
        "metrics",
        "options",
        "service",
        "streaming",
        "translation_memory",
    ]


def test_no_import_cycle_even_counting_imports_inside_functions() -> None:
    modules, imports = read_imports()
    assert find_cycle(modules, imports) is None, " -> ".join(find_cycle(modules, imports) or [])


def test_imports_point_down_only() -> None:
    _, imports = read_imports()
    assert violations(imports) == []


# --- the checker itself, on small trees written here --------------------------------------------------------
def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "handler"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_forbidden_import_is_reported(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "text/__init__.py": "",
            "text/spans.py": "from handler.api.router import HttpApi\n",
            "api/__init__.py": "",
            "api/router.py": "import json\n",
            "config.py": "from handler import errors\nfrom handler.text import spans\n",
            "errors.py": "",
        },
    )
    _, imports = read_imports(root)
    assert sorted(violations(imports)) == [
        "handler.config imports handler.text.spans (line 2): config depends only on errors",
        "handler.text.spans imports handler.api.router (line 1): text must not import api",
    ]


def test_a_cycle_held_by_an_import_inside_a_function_is_found(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "api/__init__.py": "",
            "api/router.py": "def make():\n    from handler.api.compat import deepl\n",
            "api/compat/__init__.py": "",
            "api/compat/deepl.py": "from .. import router\n",
        },
    )
    modules, imports = read_imports(root)
    assert any(edge.in_function for edge in imports)
    assert find_cycle(modules, imports) == [
        "handler.api.compat.deepl",
        "handler.api.router",
        "handler.api.compat.deepl",
    ]


@pytest.mark.parametrize(
    "statement", ["import handler.text.spans", "from handler.text import spans", "from handler.text.spans import x"]
)
def test_every_import_form_is_read(tmp_path: Path, statement: str) -> None:
    root = _tree(
        tmp_path,
        {"text/__init__.py": "", "text/spans.py": "", "model/__init__.py": "", "model/loader.py": f"{statement}\n"},
    )
    _, imports = read_imports(root)
    assert ("handler.model.loader", "handler.text.spans") in {(e.importer, e.imported) for e in imports}
