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
        shown = False  # the line before was a comment line showing what the last command prints
        for line in self.body.splitlines():
            stripped = line.strip()
            if not stripped:
                shown = False
                continue
            if stripped.startswith("#") and not pending:
                said = stripped[1:].removeprefix(" ").rstrip()
                if commands and shown:  # a printout of several lines: one comment line each
                    commands[-1] = Command(commands[-1].text, f"{commands[-1].prints}\n{said}")
                elif commands and commands[-1].prints is None:
                    commands[-1] = Command(commands[-1].text, said)
                    shown = True
                continue
            shown = False
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


def runnable_blocks(page: Path) -> dict[str, Block]:
    blocks: dict[str, Block] = {}
    for match in _MARKED_BLOCK.finditer(page.read_text(encoding="utf-8")):
        name = match["name"]
        assert name not in blocks, f"{page.name} marks two blocks as {name}"
        blocks[name] = Block(name, match["language"], match["body"])
    return blocks


def shown_json(prints: str) -> dict[str, object]:
    """``{"translation": "...", "model": "default-zh-en", ...}`` -> the members shown (``...`` stands for the rest)."""
    shown = json.loads(re.sub(r",\s*\.\.\.\s*}$", "}", prints))
    assert isinstance(shown, dict), prints
    return shown


# ---- what a page shows against what was printed ---------------------------------------------------------------
_JSON_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_ANY = "\u0000any"
_REST = "\u0000rest"
_STATUS = re.compile(r"^(?P<status>[1-5]\d\d) (?P<body>[\[{].*)$", re.S)


def _shown_structure(text: str) -> object:
    """A shown JSON value with its ellipses read: ``...`` as a value is any value, ``, ...}`` any further members."""
    out, at = [], 0
    for literal in _JSON_STRING.finditer(text):
        out.append(_ellipses(text[at : literal.start()]))
        out.append(literal.group())
        at = literal.end()
    out.append(_ellipses(text[at:]))
    return json.loads("".join(out))


def _ellipses(outside_strings: str) -> str:
    marked = re.sub(r",\s*\.\.\.\s*}", lambda _: f", {json.dumps(_REST)}: true}}", outside_strings)
    return re.sub(r"\.\.\.", lambda _: json.dumps(_ANY), marked)


def _same(shown: object, printed: object) -> bool:
    if shown == _ANY:
        return True
    if isinstance(shown, dict):
        if not isinstance(printed, dict):
            return False
        keys = set(shown) - {_REST}
        if _REST not in shown and keys != set(printed):
            return False
        return keys <= set(printed) and all(_same(shown[key], printed[key]) for key in keys)
    if isinstance(shown, list):
        return isinstance(printed, list) and len(shown) == len(printed) and all(map(_same, shown, printed))
    if isinstance(shown, str) and isinstance(printed, str):
        return same_text(shown, printed)
    return type(shown) is type(printed) and shown == printed


def same_text(shown: str, printed: str) -> bool:
    """Text as shown, each ``...`` standing for any text (none included)."""
    pattern = ".*?".join(re.escape(part) for part in shown.split("..."))
    return re.fullmatch(pattern, printed, re.S) is not None


def shows(shown: str, printed: str, status: int | None = None) -> bool:
    """Whether ``printed`` (and the HTTP ``status`` of the call) is what the page shows: JSON compared as JSON (one
    value, or one a line as NDJSON), with ``...`` for any value or text; ``400 {...}`` shows a status too."""
    shown, printed = shown.strip(), printed.strip()
    with_status = _STATUS.match(shown)
    if with_status:
        if status != int(with_status["status"]):
            return False
        shown = with_status["body"]
    if not shown.startswith(("{", "[")):
        return same_text(shown, printed)
    shown_lines, printed_lines = shown.splitlines(), printed.splitlines()
    try:
        if len(shown_lines) > 1 and len(shown_lines) == len(printed_lines):
            try:
                return all(
                    _same(_shown_structure(a), json.loads(b)) for a, b in zip(shown_lines, printed_lines, strict=True)
                )
            except json.JSONDecodeError:
                pass  # one value written over several lines
        return _same(_shown_structure(" ".join(shown_lines)), json.loads(printed))
    except json.JSONDecodeError:
        return False
