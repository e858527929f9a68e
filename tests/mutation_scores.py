"""The mutation score of each module of handler/ from mutmut's results in mutants/ (``make mutation`` prints it).

Score = killed / (tested - equivalent): killed counts mutants a test failed on or that timed out; a mutant no
selected test reaches ("no tests") counts as tested and surviving; the equivalent mutants (docs/mutation.md: they
change no behaviour, so no test can kill them) are listed in ``EQUIVALENT`` with the reason and left out.
Run: ``.venv/bin/python -m tests.mutation_scores [module ...]`` at the repository root after ``make mutation``
(``--equivalent`` prints the list of equivalent mutants with their reasons).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

MUTANTS = Path("mutants")
RUN_TIMES = MUTANTS / "run_times.json"  # written by tests.mutation_run

# mutant name -> why it changes no observable behaviour (also in docs/mutation.md)
EQUIVALENT: dict[str, str] = {
    "handler.config.xǁRuntimeConfigǁ__post_init____mutmut_44": (
        '"\\0" -> "XX\\0XX": the sentinel stands for "no output prefix" in work_prefix.startswith(...); no key prefix '
        "starts with either, so both refuse nothing"
    ),
    "handler.config.xǁRuntimeConfigǁ__post_init____mutmut_48": (
        '(output_prefix or "") -> (output_prefix or "XXXX"): the work prefix must end in "/", so it is a prefix of '
        "neither string"
    ),
    # --- handler/text/segmentation.py
    "handler.text.segmentation.xǁDocumentǁjoin__mutmut_4": (
        "previous_end = 0 -> None: source[None:start] is source[0:start], and previous_end is set before any other use"
    ),
    "handler.text.segmentation.xǁDocumentǁjoin__mutmut_6": "line_has_text = False -> None: only tested for truth",
    "handler.text.segmentation.xǁDocumentǁjoin__mutmut_22": "line_has_text = False -> None: only tested for truth",
    "handler.text.segmentation.xǁDocumentǁjoin__mutmut_11": (
        "zip(strict=True) -> strict=None: join checks the two lengths first and raises, so zip never sees unequal ones"
    ),
    "handler.text.segmentation.xǁDocumentǁjoin__mutmut_14": "zip(strict=True) dropped: the lengths are checked first",
    "handler.text.segmentation.xǁDocumentǁjoin__mutmut_15": "zip(strict=True) -> strict=False: lengths checked first",
    "handler.text.segmentation.xǁDocumentǁjoin__mutmut_27": (
        "index > 0 -> index >= 0 in inside_word: at index 0 line_has_text is False, so inside_word is never read"
    ),
    "handler.text.segmentation.x__fit__mutmut_10": (
        "count <= max -> count < max for the whole span: a span of exactly the budget then goes to the cutting "
        "levels, whose packing (fits() with <=) and last resort (longest prefix that fits) give back the whole span"
    ),
    "handler.text.segmentation.x__fit__mutmut_38": (
        "start < cut -> start <= cut: no cut equals start (the span is stripped; a clause cut is after a mark, a "
        "whitespace cut at a space)"
    ),
    "handler.text.segmentation.x__fit__mutmut_39": (
        "cut < end -> cut <= end: a cut at end only repeats the last boundary; the empty piece it makes is skipped"
    ),
    "handler.text.segmentation.x__fit__mutmut_105": (
        "piece_start < piece_end -> <=: every piece between two distinct boundaries holds a non-space character "
        "(boundaries are after a clause mark or at the start of a maximal whitespace run)"
    ),
    "handler.text.segmentation.x__outside_ascii_run__mutmut_11": (
        "run_start > start -> >=: the loop goes one further only when run_start == start, and then both return cut"
    ),
    "handler.text.segmentation.xǁDocumentǁjoin__mutmut_7": (
        "line_has_text = False -> True before the loop: the first segment (index 0) always sets it to False"
    ),
    "handler.text.segmentation.x__strip__mutmut_7": (
        "end > start -> end >= start: goes one step further only for an all-whitespace span, returning (start, "
        "start - 1) instead of (start, start); every caller treats both as empty (start >= end, span[0] < span[1])"
    ),
    "handler.text.segmentation.x__sentences__mutmut_40": (
        "span[0] < span[1] -> <= for a sentence cut at an end mark: the span holds that mark, so it is never empty"
    ),
    "handler.text.segmentation.x__sentences__mutmut_52": (
        "span[0] < span[1] -> <= for the line's last span: an empty span (the line ended with a sentence) reaches "
        "_fit, which strips it and returns without a segment"
    ),
    "handler.text.segmentation.x__ends_sentence__mutmut_6": (
        'following = "" -> "XXXX" at the end of the line: a run there is then no cut, but the line ends at the same '
        "place, so the last span is the same sentence"
    ),
    "handler.text.segmentation.x__ends_sentence__mutmut_49": (
        "the next non-space looked for beyond the line end: it differs only when the rest of the line is blank, where "
        "not cutting gives the same last span (the line ends there)"
    ),
    "handler.text.segmentation.x__clause_cuts__mutmut_7": (
        "clause marks looked for beyond the span's end: such cuts are dropped (start < cut < end), and no run of "
        "clause marks crosses a span's end (spans end after an end mark or a closer, or before whitespace)"
    ),
    "handler.text.segmentation.x__clause_cuts__mutmut_12": (
        '",:" -> "XX,:XX": a clause-mark run never starts with "X", so the test is true for the same characters'
    ),
    "handler.text.segmentation.x__whitespace_cuts__mutmut_6": (
        "whitespace looked for beyond the span's end: those cuts are dropped (start < cut < end); the span is "
        "stripped, so no whitespace run crosses its end"
    ),
    "handler.text.segmentation.x__fit__mutmut_8": (
        "start >= end -> start > end: _fit never gets a span that strips to empty (sentences hold text; a piece it "
        "recurses on is over the budget, so it holds text too)"
    ),
    "handler.text.segmentation.x__cut_by_budget__mutmut_2": (
        "rstrip -> lstrip of a prefix: _cut_by_budget gets one whitespace-free word (the level before it cut at "
        "every whitespace run), so both strip nothing"
    ),
    "handler.text.segmentation.x__outside_ascii_run__mutmut_8": (
        "run_start = cut - 1 -> cut + 1: text[cut] and text[cut - 1] are both run characters here, so the walk back "
        "passes them and stops at the same run start"
    ),
    # --- handler/storage/files.py
    "handler.storage.files.x_check_key__mutmut_2": 'problem = "" -> None: only tested for truth',
    "handler.storage.files.x_plan_output__mutmut_19": (
        "the message of a raise the checks before it make unreachable (output == source needs an empty prefix on "
        "the same bucket, refused above)"
    ),
    "handler.storage.files.x_plan_output__mutmut_22": (
        "the message of a raise that cannot happen: output.key is prefix + source.key"
    ),
    "handler.storage.files.x_decode_text__mutmut_10": (
        "description.split(' ') -> split(None): the descriptions hold single spaces, so both give the same first word"
    ),
    "handler.storage.files.x_decode_text__mutmut_13": "split(' ') -> split(None): as above",
    "handler.storage.files.x_decode_text__mutmut_25": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.storage.files.x_decode_text__mutmut_34": '"gb18030" -> "GB18030": codec names are case-insensitive',
    "handler.storage.files.x_translate_object__mutmut_44": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.storage.files.x_format_for__mutmut_6": (
        '"dot >= 0" -> "(dot >= 0) or True": without a dot name[-1:] is one character, never a suffix in '
        "MARKUP_SUFFIXES, so the answer is text either way"
    ),
    "handler.storage.files.x__check_deadline__mutmut_3": (
        "monotonic() >= deadline -> >: differs only when the clock reads exactly the deadline (one tick)"
    ),
    "handler.storage.files.x_translate_object__mutmut_50": (
        'quote(bucket, safe="") -> default safe="/": bucket names cannot hold "/" (S3 and Cloud Storage rules)'
    ),
    "handler.storage.files.x_translate_object__mutmut_51": (
        'quote(bucket, safe="") -> safe="XXXX": letters are never escaped, so the result is the same'
    ),
    "handler.storage.files.x_translate_object__mutmut_55": (
        'quote(key, safe="/") -> quote(key): "/" is already quote\'s default safe character'
    ),
    "handler.storage.files.x_translate_object__mutmut_56": (
        'quote(key, safe="/") -> safe="XX/XX": letters are never escaped, so the result is the same'
    ),
    "handler.storage.files.x_handle_upload__mutmut_14": (
        'logger.error("%s", error) -> logger.error(error): logging formats a message only when it has arguments, '
        "so both log str(error), even one holding a %"
    ),
    "handler.storage.files.x_translate_object__mutmut_69": (
        'quote(model, safe="") -> safe="XXXX": letters are never escaped, so the result is the same'
    ),
    "handler.storage.files.x_translate_object__mutmut_63": (
        'info.get("model", "") default changed: TranslationService.info() always holds "model"'
    ),
    "handler.storage.files.x_translate_object__mutmut_65": 'as above: info() always holds "model"',
    "handler.storage.files.x_translate_object__mutmut_68": 'as above: info() always holds "model"',
    "handler.storage.files.x_translate_object__mutmut_72": 'info.get("bundle_hash", "") default: always present',
    "handler.storage.files.x_translate_object__mutmut_74": 'info.get("bundle_hash", "") default: always present',
    "handler.storage.files.x_translate_object__mutmut_77": 'info.get("bundle_hash", "") default: always present',
    # --- handler/service.py
    "handler.service.x__shown__mutmut_2": "ensure_ascii=False -> None: json.dumps only tests it for truth",
    "handler.service.xǁTranslationServiceǁ__init____mutmut_16": (
        "max_positions // 2 -> / 2: 256.0 for 512 positions (x.5 for an odd count); the budget is only compared "
        "(<=) with integer token counts, which give the same answers"
    ),
    "handler.service.xǁTranslationServiceǁ_translate__mutmut_46": (
        'Translation(text, "plain", ()) -> method None: the service reads only text and spans of a Translation'
    ),
    "handler.service.xǁTranslationServiceǁ_translate__mutmut_54": (
        "model(sources) if sources or True: model([]) decodes no batch and gives [], the same as the else branch"
    ),
    "handler.service.xǁTranslationServiceǁ_translate__mutmut_60": (
        "zip(sources, found, strict=True) -> strict=None: found has one translation per source (translate_protected "
        "and the model give one per input)"
    ),
    "handler.service.xǁTranslationServiceǁ_translate__mutmut_63": "as above: strict dropped, lengths always equal",
    "handler.service.xǁTranslationServiceǁ_translate__mutmut_64": "as above: strict=False, lengths always equal",
    "handler.service.xǁTranslationServiceǁ_translate__mutmut_68": (
        "zip(markups, documents, strict=True) -> None: documents is built from markups, one per markup"
    ),
    "handler.service.xǁTranslationServiceǁ_translate__mutmut_71": "as above: strict dropped",
    "handler.service.xǁTranslationServiceǁ_translate__mutmut_72": "as above: strict=False",
    "handler.service.xǁTranslationServiceǁ_model_translate__mutmut_80": (
        "zip(segments.texts, tokens, strict=True) -> None: restore_order returns one output per segment or raises"
    ),
    "handler.service.xǁTranslationServiceǁ_model_translate__mutmut_83": "as above: strict dropped",
    "handler.service.xǁTranslationServiceǁ_model_translate__mutmut_84": "as above: strict=False",
    "handler.service.xǁTranslationServiceǁmax_new_tokens__mutmut_9": (
        "max(1, ...) -> max(2, ...): allowed is at least EXTRA_NEW_TOKENS (10), so the floor matters only for a "
        "model of fewer than 3 positions, which could not hold a segment (max_source_tokens >= 8)"
    ),
    "handler.service.xǁTranslationServiceǁ_decode__mutmut_4": (
        "pad_batch max_width=max_positions -> None: a segment has at most max_positions // 2 tokens, which rounded "
        "up to a multiple of 16 never passes max_positions (>= 32 for any real model)"
    ),
    "handler.service.xǁTranslationServiceǁ_decode__mutmut_8": "as above: max_width dropped",
    "handler.service.xǁTranslationServiceǁ_check_deadline__mutmut_7": (
        "monotonic() >= deadline -> >: differs only when the clock reads exactly the deadline (one tick)"
    ),
    "handler.service.xǁTranslationServiceǁ_check_deadline__mutmut_40": (
        "needed > left -> >=: differs only when the projection equals the time left to the last bit"
    ),
    # --- handler/api/router.py
    "handler.api.router.xǁHttpResponseǁbody_text__mutmut_3": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.api.router.xǁHttpApiǁ__init____mutmut_37": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.api.messages.x_json_response__mutmut_9": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.api.page.x_render_page__mutmut_53": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.api.page.x_render_page__mutmut_62": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.api.router.xǁHttpApiǁ__init____mutmut_31": (
        "ensure_ascii=False -> None: json.dumps only tests it for truth, so None is False"
    ),
    "handler.api.messages.x_json_response__mutmut_4": "ensure_ascii=False -> None: only tested for truth",
    "handler.api.page.x_render_page__mutmut_40": "ensure_ascii=False -> None: only tested for truth",
    "handler.api.router.xǁHttpApiǁ__init____mutmut_33": (
        "the OpenAPI document with ensure_ascii=True (the default): \\u escapes instead of UTF-8, the same JSON "
        "value for every client that parses it"
    ),
    "handler.api.router.xǁHttpApiǁ__init____mutmut_35": "as above: ensure_ascii=True, the same document once parsed",
    "handler.api.page.x_render_page__mutmut_42": (
        "the page's configuration with ensure_ascii=True (the default): the page's script parses the same values "
        "(and escapes hold no < or >)"
    ),
    "handler.api.page.x_render_page__mutmut_43": "as above: ensure_ascii=True, the same values once parsed",
    "handler.api.page.x_render_page__mutmut_46": (
        '"\\u003c" -> "\\u003C": JSON hex escapes are case-insensitive, the same character once parsed'
    ),
    "handler.api.page.x_render_page__mutmut_49": '"\\u003e" -> "\\u003E": as above',
    "handler.api.router.xǁHttpApiǁhandle__mutmut_36": (
        'headers.get("x-forwarded-proto", "") -> default "XXXX": without the header neither is "https"'
    ),
    "handler.api.router.xǁHttpApiǁ_json_body__mutmut_3": (
        'headers.get("content-type", "") -> default None: media_type_of and the message test it for truth only'
    ),
    "handler.api.router.xǁHttpApiǁ_json_body__mutmut_5": "as above: the default None",
    "handler.api.router.xǁHttpApiǁ_log__mutmut_49": (
        'headers.get("Content-Type", "") -> default "XXXX": without a Content-Type neither starts with "text/html"'
    ),
    "handler.api.messages.x_media_type_of__mutmut_6": (
        'message["CONTENT-TYPE"]: email header names are case-insensitive'
    ),
    "handler.api.messages.x_media_type_of__mutmut_10": 'get_param("CHARSET"): parameter names are case-insensitive',
    "handler.api.router.x__normalise_path__mutmut_5": 'path.split("?", 1)[0] -> split("?")[0]: the same first part',
    "handler.api.router.x__normalise_path__mutmut_8": 'split("?", 1)[0] -> split("?", 2)[0]: the same first part',
    "handler.api.router.x__normalise_path__mutmut_10": (
        'len(path) > 1 -> >= 1: "/" stripped is "", which "path or \'/\'" turns back into "/"'
    ),
    # --- handler/api/keys.py
    "handler.api.keys.x_presented_key__mutmut_16": (
        'headers.get("authorization", "") -> default "XXXX": without the header the scheme "XXXX" is not a '
        "key scheme either, so the parameter is presented as before"
    ),
    "handler.api.keys.xǁApiKeysǁaccepts__mutmut_6": (
        '_digest(key or "") -> key or "XXXX": an empty or missing key is refused by "matched and bool(key)" '
        "whatever its digest matched"
    ),
    "handler.api.keys.x__digest__mutmut_7": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    # --- handler/storage/bulk.py
    "handler.storage.bulk.x_job_id__mutmut_9": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.storage.bulk.x_job_id__mutmut_10": (
        'the field separator b"\\0" -> b"XX\\0XX": still a separator no field holds (str(ObjectRef), a hex '
        "digest, a bundle hash, a number), so the ids stay distinct; only their values change, and nothing "
        "compares them with a value computed elsewhere"
    ),
    "handler.storage.bulk.x__sha256__mutmut_4": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.storage.bulk.x__json_bytes__mutmut_3": "ensure_ascii=False -> None: json.dumps only tests it for truth",
    "handler.storage.bulk.x__json_bytes__mutmut_9": (
        "indent=1 -> indent=2: the manifest is read back as JSON; the indentation width is presentation only"
    ),
    "handler.storage.bulk.x__json_bytes__mutmut_11": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.storage.bulk.x__fan_out__mutmut_52": (
        "size = 0 -> 1 for a refused upload: part_chars is 0 (then the branch is skipped) or at least 1000 "
        "(RuntimeConfig), so a size of 1 never fans out either"
    ),
    "handler.storage.bulk.x_start_job__mutmut_18": (
        'info.get("bundle_hash", "") default changed: TranslationService.info() always holds "bundle_hash"'
    ),
    "handler.storage.bulk.x_start_job__mutmut_20": 'as above: info() always holds "bundle_hash"',
    "handler.storage.bulk.x_start_job__mutmut_23": 'as above: info() always holds "bundle_hash"',
    "handler.storage.bulk.x_start_job__mutmut_152": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.storage.bulk.x_translate_part__mutmut_35": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.storage.bulk.x_translate_part__mutmut_60": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.storage.bulk.x_assemble__mutmut_20": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.storage.bulk.x_assemble__mutmut_28": '"utf-8" -> "UTF-8": codec names are case-insensitive',
    "handler.storage.bulk.x_assemble__mutmut_49": (
        'quote(bucket, safe="") -> default safe="/": bucket names cannot hold "/" (S3 and Cloud Storage rules)'
    ),
    "handler.storage.bulk.x_assemble__mutmut_52": (
        'quote(bucket, safe="") -> safe="XXXX": letters are never escaped, so the result is the same'
    ),
    "handler.storage.bulk.x_assemble__mutmut_56": (
        'quote(key, safe="/") -> quote(key): "/" is already quote\'s default safe character'
    ),
    "handler.storage.bulk.x_assemble__mutmut_59": (
        'quote(key, safe="/") -> safe="XX/XX": letters are never escaped, so the result is the same'
    ),
    "handler.storage.bulk.x_assemble__mutmut_72": (
        'quote(model, safe="") -> safe="XXXX": letters are never escaped, so the result is the same'
    ),
    # --- handler/text/glossary.py
    "handler.text.glossary.xǁGlossaryǁfrom_mapping__mutmut_11": (
        "ensure_ascii=False -> None: json.dumps only tests it for truth"
    ),
    "handler.text.glossary.x_load_glossary__mutmut_4": '"utf-8-sig" -> "UTF-8-SIG": codec names are case-insensitive',
    # --- handler/text/markup.py
    "handler.text.markup.x__blank_attributes__mutmut_5": (
        'match.group(1) or "" -> or "XXXX": group 1 (the attribute name) is not optional in _ATTRIBUTE, so it'
        " is never None and the default is never used"
    ),
    # --- handler/api/compat/deepl.py
    "handler.api.compat.deepl.xǁDeepLApiǁhandle__mutmut_57": (
        '(fields.text("type") or "source") -> "SOURCE": lower-cased on the next call, so the default is '
        '"source" either way'
    ),
    "handler.api.compat.deepl.xǁDeepLApiǁ_translate__mutmut_105": (
        "zip(translations, billed, strict=True) -> strict=None: translate_many returns one translation per "
        "text, and billed has one count per text"
    ),
    "handler.api.compat.deepl.xǁDeepLApiǁ_translate__mutmut_108": (
        "as above: strict dropped, the lengths are always equal"
    ),
    "handler.api.compat.deepl.xǁDeepLApiǁ_translate__mutmut_109": (
        "as above: strict=False, the lengths are always equal"
    ),
    # --- handler/api/compat/libretranslate.py
    "handler.api.compat.libretranslate.xǁLibreTranslateApiǁclaims__mutmut_17": (
        'headers.get("content-type", "") -> default "XXXX": without a Content-Type, "xxxx" is neither a form '
        'nor multipart nor JSON, so the request is not claimed, as with ""'
    ),
    "handler.api.compat.libretranslate.xǁLibreTranslateApiǁclaims__mutmut_29": (
        '"utf-8" -> "UTF-8": codec names are case-insensitive'
    ),
    "handler.api.compat.libretranslate.xǁLibreTranslateApiǁ_translate__mutmut_9": (
        '(fields.text("source") or "auto") -> "AUTO": canonical_variant lower-cases it, so the default is '
        "auto either way"
    ),
    "handler.api.compat.libretranslate.xǁLibreTranslateApiǁ_translate__mutmut_45": (
        '(fields.text("format") or "text") -> "TEXT": lower-cased on the same line, so the default is text either way'
    ),
    # --- handler/text/spans.py
    "handler.text.spans.x__at_start__mutmut_7": (
        'split(" ", 1)[0] -> split(" ")[0]: the first word is the same however often the rest is split'
    ),
    "handler.text.spans.x__at_start__mutmut_10": 'split(" ", 1)[0] -> split(" ", 2)[0]: as above, the same first word',
}


def module_results(meta: Path) -> Counter[str]:
    data = json.loads(meta.read_text(encoding="utf-8"))
    counts: Counter[str] = Counter()
    for name, exit_code in data.get("exit_code_by_key", {}).items():
        if name in EQUIVALENT and exit_code is not None:  # an equivalent mutant counts once a run checked it
            counts["equivalent"] += 1
            continue
        counts[status_by_exit_code[exit_code]] += 1
    return counts


def main(modules: list[str]) -> None:
    runs = json.loads(RUN_TIMES.read_text(encoding="utf-8")) if RUN_TIMES.exists() else {}
    print("| module | mutants | checked | killed | timeout | survived | no tests | equivalent | score | run time |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for meta in sorted(MUTANTS.glob("handler/**/*.py.meta")):
        module = str(meta.relative_to(MUTANTS))[: -len(".meta")]
        if modules and module not in modules:
            continue
        counts = module_results(meta)
        killed = counts["killed"] + counts["timeout"] + counts["caught by type check"]
        checked = killed + counts["survived"] + counts["no tests"] + counts["suspicious"] + counts["segfault"]
        score = f"{100 * killed / checked:.1f} %" if checked else "-"
        total = sum(counts.values())
        run = runs.get(module, {})
        took = f"{run['seconds']} s" if run else "-"
        if run.get("sample"):
            took += f" (sample of {run['sample']}, seed {run['seed']})"
        print(
            f"| {module} | {total} | {checked + counts['equivalent']} | {counts['killed']} | {counts['timeout']} "
            f"| {counts['survived']} | {counts['no tests']} | {counts['equivalent']} | {score} | {took} |"
        )


def print_equivalent() -> None:
    """The equivalent mutants as a Markdown list (docs/mutation.md)."""
    for name, reason in EQUIVALENT.items():
        print(f"- `{name}`: {reason}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--equivalent"]:
        print_equivalent()
    else:
        main(sys.argv[1:])
