"""What a translated file must keep, read with the library a user opens the file with (never the module under test).

Each format's samples module (``tests/formats/<format>_samples.py``) provides ``inspect(data) -> Inspection``:
the file's **structure** (how many of each element a faithful translation keeps: slides, shapes, cells, units,
entries, chapters, inline codes...) and its **texts** (every text a reader sees and the format translates, in
document order). ``assert_translated`` is the one check every path's test and ``make fidelity`` apply.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class Inspection:
    structure: dict[str, int]
    texts: list[str] = field(default_factory=list)

    @property
    def chinese_left(self) -> list[str]:
        return [text for text in self.texts if HAN.search(text)]


def assert_translated(inspect: Callable[[bytes], Inspection], source: bytes, translated: bytes) -> None:
    """``translated`` keeps ``source``'s structure, has as many texts, and no Chinese is left in them."""
    before, after = inspect(source), inspect(translated)
    assert after.structure == before.structure, (before.structure, after.structure)
    assert len(after.texts) == len(before.texts), (before.texts, after.texts)
    assert before.chinese_left, "the sample has no Chinese to translate"
    assert not after.chinese_left, after.chinese_left
