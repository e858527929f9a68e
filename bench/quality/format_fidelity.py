"""``make fidelity``'s row per file format (PowerPoint, Excel, XLIFF, gettext, OpenDocument, EPUB...: every format
with a samples module in ``tests/formats``): the fidelity set's plain-text sentences written into a file of the
format (its samples module's ``file_of``), translated as an upload is (``handler.formats.translate_file``), and read
back with the library a user opens it with (the module's ``inspect``):

* **structure kept**: the translated file's structure (slides, cells, units, entries, chapters, inline codes...)
  equals the source's;
* **texts**: as many texts as the source has; **with Chinese**: translated texts still holding a Han character;
* **spans kept**: the share of the sentences' expected spans (URLs, numbers, amounts, paths, glossary terms...)
  found in the translated texts (``fidelity.span_found``).
"""

from __future__ import annotations

from collections.abc import Sequence

from handler.formats import translate_file
from handler.service import TranslationService

SENTENCES = 40  # a file per format holds this many of the fidelity set's sentences with expected spans
_SKIPPED_CLASSES = {"no_chinese", "html", "markdown"}  # spans only (a text class); markup goes through HTML/Markdown


def span_items(items: Sequence[dict[str, object]], count: int = SENTENCES) -> list[dict[str, object]]:
    """The first ``count`` plain-text items with expected spans, one class after another in turn."""
    by_class: dict[str, list[dict[str, object]]] = {}
    for item in items:
        if item["format"] == "text" and item["class"] not in _SKIPPED_CLASSES and item["expect"]:
            by_class.setdefault(str(item["class"]), []).append(item)
    chosen: list[dict[str, object]] = []
    while len(chosen) < count and any(by_class.values()):
        for group in by_class.values():
            if group and len(chosen) < count:
                chosen.append(group.pop(0))
    return chosen


def format_report(service: TranslationService, items: Sequence[dict[str, object]]) -> str:
    from bench.quality.fidelity import span_found
    from tests.formats.samples import sample_modules

    chosen = span_items(items)
    rows = []
    for name, samples in sample_modules().items():
        sources = [str(item["source"]) for item in chosen]
        data = samples.file_of(sources)
        translated = translate_file(data, f"fidelity{samples.SUFFIX}", service).data
        before, after = samples.inspect(data), samples.inspect(translated)
        output = "\n".join(after.texts)
        spans = found = 0
        for item in chosen:
            for text in item["expect"]:  # type: ignore[attr-defined]
                spans += 1
                found += span_found(str(text), str(item["source"]), output)
        rows.append(
            f"| {name} | {len(before.texts)} | {'yes' if after.structure == before.structure else 'NO'} | "
            f"{len(after.texts)} | {len(after.chinese_left)} | {found}/{spans} ({found / max(spans, 1):.0%}) |"
        )
    header = (
        "| format | texts | structure kept | texts after | texts with Chinese | spans kept |\n|---|---|---|---|---|---|"
    )
    title = f"file formats: {len(chosen)} sentences with spans in one file each (targets: yes, equal, 0, 100%):"
    return "\n".join(["", title, header, *rows])
