"""Write ``handler/text/data/han_forms.json``: the Han characters only Traditional, and only Simplified, Chinese writes.

``handler.text.script_conversion`` detects a text's script from these two sets instead of loading OpenCC's
dictionaries for every request (31.5 MB of heap, measured): OpenCC is then loaded only to convert text that is
Traditional. The sets are what OpenCC's character-level converters say, one character at a time over every
code point of the Han ranges: ``t2s`` changes the Traditional-only forms, ``s2t`` the Simplified-only ones.
Run again when the pinned OpenCC changes (``tests/runtime_text/test_script_conversion.py`` fails until then):

    python -m build.han_forms
"""

from __future__ import annotations

import json
import sys

from handler.text import script_conversion


def compute_forms() -> dict[str, str]:
    """``{"opencc": version, "traditional_only": chars, "simplified_only": chars}``, each in code point order."""
    from importlib.metadata import version

    import opencc

    characters = [chr(code) for first, last in script_conversion.HAN_RANGES for code in range(first, last + 1)]
    joined = "\n".join(characters)  # one character per line: the character dictionaries, never a phrase
    forms = {}
    for key, config in (("traditional_only", "t2s"), ("simplified_only", "s2t")):
        converted = opencc.OpenCC(config).convert(joined).split("\n")
        if len(converted) != len(characters):
            raise RuntimeError(f"OpenCC {config} returned {len(converted)} lines for {len(characters)} characters")
        forms[key] = "".join(sorted(a for a, b in zip(characters, converted, strict=True) if a != b))
    return {"opencc": version("opencc"), **forms}


def main() -> int:
    path = script_conversion.HAN_FORMS
    path.write_text(json.dumps(compute_forms(), ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
