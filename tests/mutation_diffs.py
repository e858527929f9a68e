"""Print the change each surviving mutant of a module makes: ``python -m tests.mutation_diffs handler/config.py``.

mutmut's own ``mutmut show`` reads the mutated copy in ``mutants/``, which a later run of another module overwrites
with the plain source (and it cannot find methods of a class in 3.8.1); this regenerates the module's mutants in
memory (same generator, same names) and diffs each one whose recorded result is "survived" (or the exit codes given).
"""

from __future__ import annotations

import ast
import difflib
import json
import sys
from pathlib import Path

from mutmut.mutation.file_mutation import mutate_file_contents


def _functions(source: str) -> dict[str, str]:
    tree = ast.parse(source)
    lines = source.splitlines()  # sliced by line numbers: ast.get_source_segment re-splits the source per call
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.setdefault(node.name, "\n".join(lines[node.lineno - 1 : node.end_lineno]))
    return found


def main(path: str, codes: set[int | None]) -> None:
    mutated = mutate_file_contents(path, Path(path).read_text(encoding="utf-8"))
    functions = _functions(mutated.code)
    results = json.loads(Path("mutants", path + ".meta").read_text(encoding="utf-8"))["exit_code_by_key"]
    for name, code in results.items():
        if code not in codes:
            continue
        local = name[name.index("xǁ") :] if "xǁ" in name else name.rsplit(".", 1)[-1]
        original = functions.get(local.rsplit("__mutmut_", 1)[0] + "__mutmut_orig", "")
        diff = difflib.unified_diff(original.splitlines(), functions.get(local, "").splitlines(), lineterm="", n=0)
        changed = [line.strip() for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---")]
        print(f"{name}\n    " + "\n    ".join(line for line in changed if "mutmut" not in line))


if __name__ == "__main__":
    main(sys.argv[1], {int(code) for code in sys.argv[2].split(",")} if len(sys.argv) > 2 else {0})
