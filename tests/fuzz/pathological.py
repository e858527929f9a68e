"""Pathological texts a demanding user sends, each 20,000 characters (the default TRANSLATE_MAX_CHARS) or less.

Shared by the hostile-input tests (``tests/fuzz/test_pathological_texts.py``) and the measurement behind the
README's bounds: ``.venv/bin/python -m tests.fuzz.pathological`` (``REPEATS=3``, ``CLASSES=name,name`` to
choose) posts each text to a real HTTP server on loopback serving the shipped default bundle with the default
configuration and prints the seconds each one took.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache

LIMIT = 20_000  # RuntimeConfig().max_chars
_PUNCTUATION_OR_SPACE = re.compile(r"[\s\W_]+")
_CHINESE = re.compile("[\u3400-\u9fff]")


@dataclass(frozen=True)
class Pathological:
    name: str
    text: str
    note: str

    @property
    def has_chinese(self) -> bool:
        """Whether any of it reaches the model (text without a Chinese character is kept as it is)."""
        return bool(_CHINESE.search(self.text))


def _chinese_without_punctuation() -> str:
    from tests.fixture_corpus import fixture_pairs

    run = "".join(_PUNCTUATION_OR_SPACE.sub("", pair.zh) for pair in fixture_pairs())
    return (run * (LIMIT // len(run) + 1))[:LIMIT]


def _fill(unit: str, limit: int = LIMIT) -> str:
    return (unit * (limit // len(unit) + 1))[:limit]


MIXED_SCRIPTS = "我们明天Hello世界Привет мир。こんにちは、안녕하세요！مرحبا بالعالم नमस्ते दुनिया Γειά σου κόσμε。"
COMBINING = "你" + "\u0301\u0308\u0323\u20dd" * 3 + "好" + "\u0300" * 5 + "e\u0301 "
LONG_URL = "https://example.com/" + _fill("a/b", LIMIT - 40)
CONTROL_CHARACTERS = "".join(chr(code) for code in range(32) if chr(code) not in "\t\n\r\x0b\x0c\x1c\x1d\x1e")


@cache
def pathological_texts() -> tuple[Pathological, ...]:
    """Each class once; the first ones are at the character limit."""
    return (
        Pathological("no punctuation", _chinese_without_punctuation(), "20,000 Chinese characters, no mark or space"),
        Pathological("one character repeated", "好" * LIMIT, "20,000 x 好"),
        Pathological("only emoji", _fill("😀👍🏽🇨🇳👨‍👩‍👧❤️"), "20,000 code points of emoji, ZWJ sequences and flags"),
        Pathological("only whitespace", _fill(" \t\u3000\u00a0\n\r\n\u2028 "), "20,000 characters of whitespace"),
        Pathological("mixed scripts", _fill(MIXED_SCRIPTS, 5_000), "Chinese, Latin, Cyrillic, kana, Hangul, Arabic..."),
        Pathological("right-to-left marks", _fill("\u200f我们\u202e明天\u202c见\u200e。", 5_000), "RLM, RLO, PDF, LRM"),
        Pathological("combining characters", _fill(COMBINING, 5_000), "up to 12 combining marks on one character"),
        Pathological("zero-width joiners", "\u200d".join(_fill("我们明天去北京。", 2_500)), "ZWJ between characters"),
        Pathological("NUL and control characters", _fill("你好" + CONTROL_CHARACTERS + "世界。", 5_000), "C0 controls"),
        Pathological("one long word", _fill("abcdefghij0123456789", LIMIT), "20,000 ASCII letters and digits"),
        Pathological("one long URL", f"请访问 {LONG_URL} 谢谢", "a 19,980-character URL in a Chinese sentence"),
    )


def significant(text: str) -> str:
    """The characters that must not silently vanish: neither whitespace, nor controls, nor format marks."""
    return "".join(char for char in text if not char.isspace() and unicodedata.category(char) not in ("Cc", "Cf"))


def _measure() -> None:  # pragma: no cover - a measurement, run by hand
    import http.client
    import json
    import os
    import threading
    import time

    from handler.adapters.local_server import make_server
    from handler.api.router import HttpApi
    from handler.coldstart import start

    startup = start()
    server = make_server(HttpApi(startup), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    repeats = int(os.environ.get("REPEATS", "3"))
    only = {name.strip() for name in os.environ.get("CLASSES", "").split(",") if name.strip()}
    print(f"threads {startup.config.intra_op_threads}, beam {startup.config.beam_size}, {repeats} runs each")
    print("| class | characters | status | seconds (min / max) | output characters |")
    for case in pathological_texts():
        if only and case.name not in only:
            continue
        body = json.dumps({"text": case.text}).encode("utf-8")
        seconds = []
        for _ in range(repeats):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=3_600)
            began = time.perf_counter()
            connection.request("POST", "/translate", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = json.loads(response.read())
            seconds.append(time.perf_counter() - began)
            connection.close()
        out = len(answer.get("translation", ""))
        timing = f"{min(seconds):.2f} / {max(seconds):.2f}"
        print(f"| {case.name} | {len(case.text):,} | {response.status} | {timing} | {out:,} |")
    server.shutdown()


if __name__ == "__main__":
    _measure()
