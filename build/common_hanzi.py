"""Write ``handler/formats/data/common_hanzi.txt``: the most frequent Han characters, most frequent first, in both
Simplified and Traditional forms.

``handler.formats.encodings`` tells GB18030/GBK from Big5/Big5-HKSCS (almost every Big5 byte sequence is valid
GB18030, and many GB18030 ones valid Big5) by decoding a file both ways and scoring each result by how common its
characters are: a real text is mostly made of the few thousand most frequent characters, a mis-decoded one of
characters drawn nearly at random from the whole table. The ranking is the character counts of jieba's word list
(``jieba/dict.txt``, MIT licence: about 349,000 words with their frequencies in a large Simplified corpus), each
word counted again in Traditional forms through OpenCC's ``s2t``, ``s2tw`` and ``s2hk`` so Traditional characters
rank as their Simplified forms do, and Hong Kong's common written-Cantonese characters (``CANTONESE``) placed at
rank 1,500. Run again to change the list (``tests/runtime_text/test_encoding_detection.py`` measures the result):

    python -m build.common_hanzi
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from handler.formats.encodings import COMMON_HANZI, COMMON_HANZI_COUNT

TRADITIONAL_CONFIGS = ("s2t", "s2tw", "s2hk")  # OpenCC's standard, Taiwan and Hong Kong character forms
# Hong Kong's written Cantonese (Big5-HKSCS files): characters a Mandarin word list hardly has, placed at this rank
CANTONESE = "嘅啲咗冇嘢喺哋睇諗佢噉咁嚟嗰乜嘛啱攞畀俾揾搵瞓靚喇囉咩𠝹嚿噚餸"
CANTONESE_RANK = 1500


def is_han(char: str) -> bool:
    code = ord(char)
    return 0x3400 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or 0x20000 <= code <= 0x3FFFF


def ranked_characters(count: int) -> str:
    """The ``count`` most frequent Han characters of jieba's word list and its OpenCC ``s2t`` conversion."""
    import jieba
    import opencc

    dictionary = Path(jieba.__file__).parent / "dict.txt"
    words: list[tuple[str, int]] = []
    for line in dictionary.read_text(encoding="utf-8").splitlines():
        fields = line.split(" ")
        if len(fields) >= 2 and fields[1].isdigit():
            words.append((fields[0], int(fields[1])))
    joined = "\n".join(word for word, _ in words)
    conversions = []
    for config in TRADITIONAL_CONFIGS:
        converted = opencc.OpenCC(config).convert(joined).split("\n")
        if len(converted) != len(words):
            raise RuntimeError(f"OpenCC {config} returned {len(converted)} lines for {len(words)} words")
        conversions.append(converted)
    counts: Counter[str] = Counter()
    for index, (word, frequency) in enumerate(words):
        forms = set(word).union(*(converted[index] for converted in conversions))
        for char in forms:
            if is_han(char):
                counts[char] += frequency * word.count(char) if char in word else frequency
    ranked = [char for char, _ in counts.most_common()]
    cantonese = [char for char in CANTONESE if char not in ranked[:CANTONESE_RANK]]
    ranked = [char for char in ranked if char not in cantonese]
    ranked[CANTONESE_RANK:CANTONESE_RANK] = cantonese
    return "".join(ranked[:count])


def main() -> int:
    characters = ranked_characters(COMMON_HANZI_COUNT)
    lines = [characters[start : start + 100] for start in range(0, len(characters), 100)]
    COMMON_HANZI.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {COMMON_HANZI} ({len(characters):,} characters, {COMMON_HANZI.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
