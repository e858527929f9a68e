"""The request texts of the load test: real Chinese from the dev set, sized from one word to the character limit.

A ``SizeMix`` is a list of size classes with weights; ``plan_texts`` draws ``count`` texts from it with a seeded
generator, so a run is repeatable. Every text is real Chinese from ``data/corpus/dev.zh-en.tsv.gz`` (read with
``build.corpus.dev_pairs``):

* ``word``: one word of a dev sentence, as jieba cuts it (two to four Chinese characters);
* ``sentence``: one dev sentence as it is (8 to 175 characters);
* a sized class (``low``-``high`` characters, ``high`` None = the server's limit): consecutive dev sentences joined
  until the drawn size is reached, then cut to exactly that size; the size is drawn log-uniformly, so small and
  large ends are both represented;
* ``limit``: exactly the server's character limit (``TRANSLATE_MAX_CHARS``), the largest request it accepts.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache

from handler.config import REPO_ROOT

JIEBA_CACHE_DIR = REPO_ROOT / ".bench" / "jieba"  # jieba writes its prefix-dictionary cache here, not in /tmp
CHINESE_WORD = re.compile(r"^[\u4e00-\u9fff]{2,4}$")


@dataclass(frozen=True)
class SizeClass:
    name: str
    weight: float
    low: int = 0  # characters, for a sized class
    high: int | None = None  # None: up to the limit


WORD = "word"
SENTENCE = "sentence"
LIMIT = "limit"


@dataclass(frozen=True)
class SizeMix:
    name: str
    classes: tuple[SizeClass, ...]

    def describe(self, limit: int) -> str:
        total = sum(size.weight for size in self.classes)
        parts = []
        for size in self.classes:
            share = f"{100 * size.weight / total:g} %"
            if size.name == WORD:
                parts.append(f"{share} one word (2-4 characters)")
            elif size.name == SENTENCE:
                parts.append(f"{share} one dev sentence (8-175 characters)")
            elif size.name == LIMIT:
                parts.append(f"{share} exactly the limit ({limit:,} characters)")
            else:
                high = min(size.high or limit, limit)
                low = min(size.low, high)
                parts.append(f"{share} {low:,}-{high:,} characters (log-uniform)")
        return f"{self.name}: " + ", ".join(parts)


# The load phase: every size up to the limit, weighted towards what an interactive translator receives (mean about
# 300 characters a request with the default limit of 20,000).
LOAD_MIX = SizeMix(
    "load mix",
    (
        SizeClass(WORD, 20),
        SizeClass(SENTENCE, 48),
        SizeClass("paragraph", 29.75, 180, 1_000),
        SizeClass("document", 2, 1_000, None),
        SizeClass(LIMIT, 0.25),
    ),
)
# The soak: mostly words and sentences, so that 20,000 requests fit in well under an hour on 2 cores (mean about
# 15 characters), with rare large ones up to the limit so that the big buffers a long request needs are part of
# what must not grow.
SOAK_MIX = SizeMix(
    "soak mix",
    (
        SizeClass(WORD, 70),
        SizeClass(SENTENCE, 29.88),
        SizeClass("paragraph", 0.08, 180, 1_000),
        SizeClass("document", 0.03, 1_000, None),
        SizeClass(LIMIT, 0.01),
    ),
)


@cache
def dev_sentences() -> tuple[str, ...]:
    from build import corpus

    # the repository's dev set itself, whatever TRANSLATE_CORPUS_DIR says (CI points it at a folder that does not exist)
    return tuple(pair.zh for pair in corpus.dev_pairs(corpus.REPOSITORY_CORPUS_DIR))


@cache
def dev_words() -> tuple[str, ...]:
    import jieba

    jieba.setLogLevel(60)  # silence its start-up messages
    JIEBA_CACHE_DIR.mkdir(parents=True, exist_ok=True)
    jieba.dt.tmp_dir = str(JIEBA_CACHE_DIR)
    cut = (word for sentence in dev_sentences() for word in jieba.cut(sentence))
    words = dict.fromkeys(word for word in cut if CHINESE_WORD.match(word))
    return tuple(words)


def joined_text(chars: int, rng: random.Random) -> str:
    """Consecutive dev sentences from a random start, joined and cut to exactly ``chars`` characters."""
    sentences = dev_sentences()
    index = rng.randrange(len(sentences))
    parts: list[str] = []
    length = 0
    while length < chars:
        sentence = sentences[index % len(sentences)]
        parts.append(sentence)
        length += len(sentence)
        index += 1
    return "".join(parts)[:chars]


def draw_text(size: SizeClass, limit: int, rng: random.Random) -> str:
    if size.name == WORD:
        return rng.choice(dev_words())
    if size.name == SENTENCE:
        return rng.choice(dev_sentences())
    if size.name == LIMIT:
        return joined_text(limit, rng)
    high = min(size.high or limit, limit)
    low = min(size.low, high)
    chars = round(math.exp(rng.uniform(math.log(max(1, low)), math.log(max(1, high)))))
    return joined_text(max(1, min(chars, limit)), rng)


def plan_texts(count: int, mix: SizeMix, limit: int, seed: int) -> list[tuple[str, str]]:
    """``count`` (size class, text) pairs drawn from ``mix``; every text within ``limit`` characters."""
    rng = random.Random(seed)
    weights = [size.weight for size in mix.classes]
    classes = rng.choices(mix.classes, weights=weights, k=count)
    planned = [(size.name, draw_text(size, limit, rng)) for size in classes]
    # every class appears at least once when there is room (a short run still reaches the limit): a missing
    # class takes a slot of the most frequent one
    for size in mix.classes:
        counts = Counter(name for name, _ in planned)
        common, occurrences = counts.most_common(1)[0]
        if size.name not in counts and occurrences > 1:
            slot = next(i for i, (name, _) in enumerate(planned) if name == common)
            planned[slot] = (size.name, draw_text(size, limit, rng))
    return planned
