"""``make fidelity``: how much of what must survive translation does, per class, before and after protection.

On the fidelity set (``tests/fixtures/fidelity.jsonl``, ``bench/quality/fidelity_set.py``) it reports per class

* **exact**: the share of expected spans found in the output byte for byte (converted amounts, currency
  amounts, ranges and glossary targets as the English they must become; for ``no_chinese`` the whole output must
  equal the input);
* **leaked**: the share of outputs holding a placeholder (``X1``...) the input did not;
* **skeleton** (``html``, ``markdown``): the share of outputs whose markup skeleton equals the input's;

* **subtitles** (``.srt``, ``.vtt`` files made by ``fidelity_set.subtitle_files``, translated as a file upload is):
  the share of files whose structure (everything but cue text: numbers, timing lines with their settings, headers,
  NOTE/STYLE blocks, blank lines, line endings) is kept byte for byte, whose cue count is equal, and the cues left
  empty, cues with Chinese left and lines over the 42-character maximum;

* **Word documents** (``.docx`` files made by ``fidelity_set.word_files``, translated as a file upload is:
  ``translate_file_bytes``): the share of files whose parts without text are byte for byte the source's and whose
  translated parts keep every structural element (``word_documents.structure_of``); paragraphs, table cells,
  headers, footers and footnotes counted on both sides; the share of bold stretches whose English is bold (a
  non-empty bold run in the same paragraph); text nodes with Chinese left;

* **file formats** (a row per format with a samples module in ``tests/formats``: PowerPoint, Excel, XLIFF, gettext,
  OpenDocument, EPUB; ``bench.quality.format_fidelity``): the fidelity set's sentences with spans written into one
  file each, translated as an upload is, read back with the user's library: structure kept, texts, texts with
  Chinese left, spans kept;

"before" is today's raw pipeline (no protection, plain text, the 3-gram repetition guard); "after" is the
default pipeline (protection on, the item's format, the default guard: no 4-gram twice, no stretch repeated at
once). With ``--dev`` it also scores the
repository's dev set (sacreBLEU) with protection on and off; ``--guards`` adds the repetition-guard comparison
(BLEU and the share of outputs with a loop for the 3-gram guard, the new guard and none). ``--tiny`` runs the
same table on the random tiny test model (built here as the test suite builds it), whose outputs never keep a
placeholder: the stitching fallback path.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import handler.model.decoding as decoding
from handler.config import DEFAULT_BUNDLE_DIR, REPO_ROOT, RuntimeConfig
from handler.formats import translate_file
from handler.formats.subtitles import MAX_LINE_CHARS, Track, parse_track
from handler.model.loader import load_model
from handler.service import TranslateOptions, TranslationService
from handler.text.markup import TagRules, skeleton, translate_tagged
from handler.text.numbers import find_amounts
from handler.text.spans import contains_placeholder, has_chinese

FIDELITY_SET = REPO_ROOT / "tests" / "fixtures" / "fidelity.jsonl"
BATCH = 64
TARGETS = {
    "url": 1.0,
    "email": 1.0,
    "code": 1.0,
    "emoji": 1.0,
    "path": 1.0,
    "mention": 1.0,
    "number": 0.99,
    "amount": 0.95,
    "latin": 0.98,
    "glossary": 0.99,
    "no_chinese": 1.0,
    # issue 25: currency signs, operators inside code-like tokens, inline math, angle brackets, ranges with a unit
    "currency": 1.0,
    "operator": 1.0,
    "math": 1.0,
    "angle": 1.0,
    "range": 1.0,
    # issue 32: text that must stay as written (the html format, DeepL's tag handling); tagged XML must also parse
    "translate_no": 1.0,
    "notranslate": 1.0,
    "xml_inline": 1.0,
    "ignore_tags": 1.0,
}
MARKUP_CLASSES = ("html", "markdown")


@dataclass
class ClassScore:
    items: int = 0
    spans: int = 0
    exact: int = 0
    leaked: int = 0
    skeletons: int = 0
    failures: list[str] = field(default_factory=list)


def load_set(path: Path = FIDELITY_SET) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@contextmanager
def guard(which: str) -> Iterator[None]:
    """Decode with the ``new`` (default), ``old`` (3-gram) guard or ``none``."""
    saved = decoding.DEFAULT_GUARD
    decoding.DEFAULT_GUARD = {"new": saved, "old": decoding.TRIGRAM_GUARD, "none": decoding.RepetitionGuard(0, 0, 0)}[
        which
    ]
    try:
        yield
    finally:
        decoding.DEFAULT_GUARD = saved


def translate_items(service: TranslationService, items: list[dict[str, object]], after: bool) -> list[str]:
    """Each item's English: "after" in its format, or with DeepL's tag handling where it has ``tags``
    (``translate_tagged``, as ``/v2/translate`` does); "before" as plain text."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for index, item in enumerate(items):
        glossary = json.dumps(item.get("glossary") or {}, ensure_ascii=False, sort_keys=True)
        tags = json.dumps(item.get("tags") or {}, sort_keys=True) if after else "{}"
        groups.setdefault((str(item["format"]) if after else "text", glossary, tags), []).append(index)
    results: dict[int, str] = {}
    for (fmt, glossary, tags), indices in groups.items():
        terms = json.loads(glossary) or None
        tagging = json.loads(tags)
        options = TranslateOptions(format="text" if tagging else fmt, glossary=terms, protect_spans=after)
        for start in range(0, len(indices), BATCH):
            chunk = indices[start : start + BATCH]
            sources = [str(items[i]["source"]) for i in chunk]
            if tagging:
                translate = partial(service.translate_many, options=options)
                texts = translate_tagged(sources, tagging["tag_handling"], _tag_rules(tagging), translate)
            else:
                texts = service.translate_many(sources, options)
            results.update(zip(chunk, texts, strict=True))
    return [results[index] for index in range(len(items))]


def _tag_rules(tagging: dict[str, object]) -> TagRules:
    def names(key: str) -> frozenset[str]:
        return frozenset(str(name) for name in tagging.get(key) or [])  # type: ignore[attr-defined]

    return TagRules(
        names("ignore_tags"),
        names("non_splitting_tags"),
        names("splitting_tags"),
        bool(tagging.get("outline_detection", True)),
    )


def well_formed(text: str) -> bool:
    """Whether ``text`` parses as XML: a whole document, or a fragment (wrapped in one element)."""
    for candidate in (text, f"<fragment>{text}</fragment>"):
        try:
            ElementTree.fromstring(candidate.encode("utf-8"))
        except ElementTree.ParseError:
            continue
        return True
    return False


def span_found(text: str, source: str, output: str) -> bool:
    """Whether the expected span ``text`` of ``source`` is in ``output``: as written, capitalised (at the start of a
    sentence a glossary term or an amount is, "Machine learning is ..."), or for an amount or date in another correct
    form ("$57", "15 March 2024")."""
    forms = [text, *(alt for a in find_amounts(source) if a.english == text for alt in a.alternatives)]
    return any(f in output or f[:1].upper() + f[1:] in output for f in forms)


def score(items: list[dict[str, object]], outputs: list[str]) -> dict[str, ClassScore]:
    scores: dict[str, ClassScore] = {}
    for item, output in zip(items, outputs, strict=True):
        kind = str(item["class"])
        result = scores.setdefault(kind, ClassScore())
        result.items += 1
        source = str(item["source"])
        if contains_placeholder(output) and not contains_placeholder(source):
            result.leaked += 1
        if kind in MARKUP_CLASSES:
            ok = skeleton(output, kind) == skeleton(source, kind)
            result.skeletons += ok
            if not ok:
                result.failures.append(f"{item['id']}: {source!r} -> {output!r}")
            continue
        expected = [str(text) for text in item["expect"]]  # type: ignore[attr-defined]
        if item["format"] == "xml" and well_formed(source):
            result.spans += 1  # the output parses whenever the input did
            result.exact += well_formed(output)
            if not well_formed(output):
                result.failures.append(f"{item['id']}: {source!r} -> {output!r} (not well-formed)")
        for text in expected:
            result.spans += 1
            ok = output == text if kind == "no_chinese" else span_found(text, source, output)
            result.exact += ok
            if not ok:
                result.failures.append(f"{item['id']}: {source!r} -> {output!r} (wanted {text!r})")
    return scores


def table(before: dict[str, ClassScore], after: dict[str, ClassScore]) -> str:
    lines = [
        "| class | items | exact before | exact after | target | leaked after | skeleton before | skeleton after |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind in list(TARGETS) + list(MARKUP_CLASSES):
        if kind not in after:
            continue
        b, a = before[kind], after[kind]
        if kind in MARKUP_CLASSES:
            lines.append(
                f"| {kind} | {a.items} | | | 100% | {a.leaked / a.items:.0%} | {b.skeletons / b.items:.1%} | "
                f"{a.skeletons / a.items:.1%} |"
            )
        else:
            lines.append(
                f"| {kind} | {a.items} | {b.exact / b.spans:.1%} | {a.exact / a.spans:.1%} | {TARGETS[kind]:.0%} | "
                f"{a.leaked / a.items:.0%} | | |"
            )
    leaked = sum(score.leaked for score in after.values())
    lines.append(f"\nleaked placeholders after: {leaked} of {sum(score.items for score in after.values())} outputs")
    return "\n".join(lines)


# --- subtitles -----------------------------------------------------------------------------------------------
_TAGS = re.compile(r"<[^<>]*>|\{\\[^{}]*\}")


def subtitle_structure(track: Track) -> str:
    """Everything in a subtitle file but its cue text (each cue's text replaced by one marker)."""
    pieces, at = [], 0
    for cue in track.cues:
        pieces += [track.source[at : cue.text_start], "\0"]
        at = cue.text_end
    return "".join(pieces) + track.source[at:]


def subtitle_report(service: TranslationService) -> str:
    from bench.quality.fidelity_set import subtitle_files

    rows = []
    for fmt in ("srt", "vtt"):
        files = [(name, text) for name, text, kind in subtitle_files() if kind == fmt]
        kept = equal = cues = empty = chinese = long_lines = 0
        for name, text in files:
            source = parse_track(text, fmt, name=name)
            english = translate_file(text.encode("utf-8"), name, service).data.decode("utf-8")
            output = parse_track(english, fmt, name=name)
            kept += subtitle_structure(source) == subtitle_structure(output)
            equal += len(source.cues) == len(output.cues)
            cues += len(source.cues)
            for before, after in zip(source.cues, output.cues, strict=False):
                visible = [_TAGS.sub("", line) for line in after.lines]
                empty += any(line.strip() for line in before.lines) and not any(line.strip() for line in visible)
                chinese += any(has_chinese(line) for line in visible)
                long_lines += sum(len(line) > MAX_LINE_CHARS and " " in line.strip() for line in visible)
        rows.append(
            f"| {fmt} | {len(files)} | {cues} | {kept / len(files):.0%} | {equal / len(files):.0%} | {empty} | "
            f"{chinese} | {long_lines} |"
        )
    header = (
        f"| format | files | cues | structure kept | cue count equal | cues empty | cues with Chinese | "
        f"lines over {MAX_LINE_CHARS} |\n|---|---|---|---|---|---|---|---|"
    )
    return "\n".join(["", "subtitles (targets: 100%, 100%, 0, 0, 0):", header, *rows])


# --- Word documents ----------------------------------------------------------------------------------------------
def word_report(service: TranslationService) -> str:
    import io
    import zipfile

    from bench.quality.fidelity_set import word_files
    from handler.formats.word import W, iter_text_entries, structure_of

    files = word_files()
    kept = paragraphs = chinese = bold_source = bold_kept = 0
    counted = {"p": 0, "tc": 0, "header": 0, "footer": 0, "footnote": 0}
    equal = dict.fromkeys(counted, 0)
    for name, data in files:
        output = translate_file(data, name, service).data
        with zipfile.ZipFile(io.BytesIO(data)) as before_zip, zipfile.ZipFile(io.BytesIO(output)) as after_zip:
            before = {info.filename: before_zip.read(info) for info in before_zip.infolist()}
            after = {info.filename: after_zip.read(info) for info in after_zip.infolist()}
        source_parts = {entry: (kind, root) for entry, kind, root in iter_text_entries(data)}
        output_parts = {entry: (kind, root) for entry, kind, root in iter_text_entries(output)}
        same = list(before) == list(after) and all(
            after.get(entry) == content for entry, content in before.items() if entry not in source_parts
        )
        totals = [dict.fromkeys(counted, 0), dict.fromkeys(counted, 0)]
        for side, parts in enumerate((source_parts, output_parts)):
            for kind, root in parts.values():
                counts = structure_of(root)
                totals[side]["p"] += counts.get("p", 0)
                totals[side]["tc"] += counts.get("tc", 0)
                totals[side]["footnote"] += counts.get("footnote", 0) if kind == "footnotes" else 0
                totals[side]["header"] += kind == "header"
                totals[side]["footer"] += kind == "footer"
        for entry, (_kind, root) in source_parts.items():
            same = same and entry in output_parts and structure_of(root) == structure_of(output_parts[entry][1])
        kept += same
        for key in counted:
            counted[key] += totals[0][key]
            equal[key] += totals[0][key] == totals[1][key]
        body_before = source_parts["word/document.xml"][1].iter(f"{{{W}}}p")
        body_after = output_parts["word/document.xml"][1].iter(f"{{{W}}}p")
        for source_paragraph, output_paragraph in zip(body_before, body_after, strict=False):
            paragraphs += 1
            if any(_is_bold(run) and has_chinese(_run_text(run)) for run in source_paragraph.iter(f"{{{W}}}r")):
                bold_source += 1
                bold_kept += any(_is_bold(run) and _run_text(run).strip() for run in output_paragraph.iter(f"{{{W}}}r"))
        for _kind, root in output_parts.values():
            chinese += sum(has_chinese(t.text or "") for t in root.iter(f"{{{W}}}t"))

    def share(count: int) -> str:
        return f"{count / len(files):.0%}"

    header = (
        "| files | paragraphs | structure kept | paragraph count equal | table cells equal | headers, footers equal "
        "| footnotes equal | bold stretches bold | text nodes with Chinese |\n|---|---|---|---|---|---|---|---|---|"
    )
    row = (
        f"| {len(files)} | {paragraphs} | {share(kept)} | {share(equal['p'])} | {share(equal['tc'])} | "
        f"{share(min(equal['header'], equal['footer']))} | {share(equal['footnote'])} | "
        f"{bold_kept}/{bold_source} | {chinese} |"
    )
    return "\n".join(["", "Word documents (targets: 100% throughout, every bold stretch bold, 0):", header, row])


def _is_bold(run: object) -> bool:
    from handler.formats.word import W

    rpr = run.find(f"{{{W}}}rPr")  # type: ignore[attr-defined]
    return rpr is not None and rpr.find(f"{{{W}}}b") is not None


def _run_text(run: object) -> str:
    from handler.formats.word import W

    return "".join(t.text or "" for t in run.iter(f"{{{W}}}t"))  # type: ignore[attr-defined]


# --- dev BLEU and loops --------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z0-9']+")


def has_loop(text: str) -> bool:
    """A degenerate loop: a stretch of 2+ words right after itself, a word 3+ times in a row, or a 4-word
    phrase 3+ times."""
    words = [word.lower() for word in _WORD.findall(text)]
    for n in range(1, 9):
        for i in range(len(words) - 2 * n + 1):
            if words[i : i + n] == words[i + n : i + 2 * n] and (n >= 2 or words[i + 2 : i + 3] == words[i : i + 1]):
                return True
    grams = [tuple(words[i : i + 4]) for i in range(len(words) - 3)]
    return any(grams.count(gram) >= 3 for gram in set(grams))


def dev_scores(service: TranslationService, protect: bool, pairs: int) -> tuple[float, float, float]:
    import sacrebleu

    from build.corpus import REPOSITORY_CORPUS_DIR, dev_pairs

    dev = dev_pairs(REPOSITORY_CORPUS_DIR)[: pairs or None]
    options = TranslateOptions(protect_spans=protect)
    began = time.perf_counter()
    hypotheses: list[str] = []
    for start in range(0, len(dev), BATCH):
        hypotheses.extend(service.translate_many([p.zh for p in dev[start : start + BATCH]], options))
    bleu = sacrebleu.corpus_bleu(hypotheses, [[p.en for p in dev]]).score
    loops = sum(has_loop(text) for text in hypotheses) / len(hypotheses)
    return bleu, loops, time.perf_counter() - began


# --- runs ------------------------------------------------------------------------------------------------------


def format_report(service: TranslationService, items: list[dict[str, object]]) -> str:
    from bench.quality.format_fidelity import format_report as report

    return report(service, items)


def fidelity_report(service: TranslationService, label: str, show_failures: int) -> str:
    items = load_set()
    with guard("old"):
        before = score(items, translate_items(service, items, after=False))
    after = score(items, translate_items(service, items, after=True))
    out = [
        f"### {label}: {len(items)} sentences",
        "",
        table(before, after),
        subtitle_report(service),
        word_report(service),
        format_report(service, items),
    ]
    if show_failures:
        for kind, result in after.items():
            for failure in result.failures[:show_failures]:
                out.append(f"  {kind}: {failure}")
    return "\n".join(out)


def tiny_bundle(work: Path) -> Path:
    """The random tiny Marian the test suite uses, exported into a bundle (needs the build environment)."""
    sys.path.insert(0, str(REPO_ROOT))
    from build.export import export_bundle
    from build.verify import VerifyThresholds
    from tests.conftest import TINY_THRESHOLDS_KW, _one_torch_thread, build_tiny_marian

    _one_torch_thread()
    checkpoint = build_tiny_marian(work / "tiny-marian")
    bundle = work / "tiny"
    export_bundle(checkpoint, bundle, name="tiny", thresholds=VerifyThresholds(**TINY_THRESHOLDS_KW))
    return bundle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quality.fidelity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", type=Path, default=DEFAULT_BUNDLE_DIR)
    parser.add_argument("--tiny", action="store_true", help="also the random tiny test model (the fallback path)")
    parser.add_argument("--dev", action="store_true", help="dev BLEU and loops with protection on and off")
    parser.add_argument("--guards", action="store_true", help="dev BLEU and loops without a guard too")
    parser.add_argument("--pairs", type=int, default=0, help="first N dev pairs only (default: all)")
    parser.add_argument("--failures", type=int, default=0, help="show up to N failed items per class")
    args = parser.parse_args(argv)

    config = RuntimeConfig(bundle_dir=args.bundle)
    service = TranslationService(load_model(config), config)
    print(fidelity_report(service, f"bundle {args.bundle.name}", args.failures), flush=True)
    if args.dev or args.guards:
        print("\n### dev set (beam 4): BLEU and the share of outputs with a loop, by span protection and guard")
        print("| protection | repetition guard | BLEU | outputs with a loop | seconds |\n|---|---|---|---|---|")
        runs = [(False, "old"), (True, "new")]  # today's pipeline, and the default one now
        if args.dev:
            runs += [(True, "old"), (False, "new")]
        if args.guards:
            runs += [(False, "none"), (True, "none")]
        for protect, which in runs:
            with guard(which):
                bleu, loops, seconds = dev_scores(service, protect, args.pairs)
            label = {"old": "3-gram (before)", "new": "4-gram + no stretch twice in a row (now)", "none": "none"}[which]
            print(f"| {'on' if protect else 'off'} | {label} | {bleu:.2f} | {loops:.1%} | {seconds:.0f} |", flush=True)
    if args.tiny:
        with tempfile.TemporaryDirectory() as work:
            bundle = tiny_bundle(Path(work))
            tiny_config = RuntimeConfig(bundle_dir=bundle)
            tiny = TranslationService(load_model(tiny_config), tiny_config)
            print("\n" + fidelity_report(tiny, "tiny random test model (fallback path)", args.failures), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
