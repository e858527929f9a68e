"""The README's runnable code blocks: each fenced block whose info string names it, ```` ```sh runs=NAME ````.

A rendered page shows only the language (the info string's first word); the suite finds a block by its name and
runs it as written (``tests/ship/test_readme_runs.py``). In a block, a line that is only a comment right after a
command shows what that command prints (``# {"translation": ...}`` after ``curl``, ``# This book is interesting.``
after ``print``); a comment after a command on its line explains it. A command continued with a trailing
backslash is one command.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

_MARKED_BLOCK = re.compile(r"^```(?P<language>\w+) runs=(?P<name>[\w-]+)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Command:
    text: str  # without its trailing comment; continuation lines joined as written
    prints: str | None  # what the comment line right after it says it prints


@dataclass(frozen=True)
class Block:
    name: str
    language: str
    body: str

    def commands(self) -> list[Command]:
        commands: list[Command] = []
        pending = ""
        for line in self.body.splitlines():
            stripped = line.strip()
            if not stripped:
                continue
            if stripped.startswith("#") and not pending:
                if commands and commands[-1].prints is None:
                    commands[-1] = Command(commands[-1].text, stripped.lstrip("#").strip())
                continue
            code = _without_trailing_comment(line) if self.language in ("sh", "python") else line
            pending += code.rstrip() + "\n"
            if not code.rstrip().endswith("\\"):
                commands.append(Command(pending.rstrip("\n"), None))
                pending = ""
        assert not pending, f"block {self.name} ends inside a continued command"
        return commands


def _without_trailing_comment(line: str) -> str:
    """``make run     # serve ...`` -> ``make run``; a ``#`` inside quotes stays (shell and Python quoting alike)."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[:index].rstrip()
    return line


def runnable_blocks(readme: Path) -> dict[str, Block]:
    blocks: dict[str, Block] = {}
    for match in _MARKED_BLOCK.finditer(readme.read_text(encoding="utf-8")):
        name = match["name"]
        assert name not in blocks, f"{readme.name} marks two blocks as {name}"
        blocks[name] = Block(name, match["language"], match["body"])
    return blocks


def shown_json(prints: str) -> dict[str, object]:
    """``{"translation": "...", "model": "default-zh-en", ...}`` -> the members shown (``...`` stands for the rest)."""
    shown = json.loads(re.sub(r",\s*\.\.\.\s*}$", "}", prints))
    assert isinstance(shown, dict), prints
    return shown
