"""gettext catalogues for the tests, made with polib (the library a catalogue's users script with), and what a
translation must keep, read with polib from a file as a user would (never with ``handler.formats.gettext``).

``sample_file()`` is a Chinese catalogue (``Language: zh_CN``, ``nplurals=1``) with the awkward cases: a plural
entry, the same msgid in two contexts (``msgctxt``), translator and extracted comments, references, flags, a fuzzy
entry with a previous msgid, placeholders of every kind (``%d``, ``%s``, ``%5.2f``, ``%%``, ``%(count)s``,
``{name}``, ``{0}``, ``{}``, ``{count:>5}``), a multi-line msgid, an already-translated entry, obsolete entries
and entries without Chinese.

``inspect(data)``: ``structure`` counts what a translation keeps (entries, plural entries, contexts, comments,
references, flags other than fuzzy, previous msgids, obsolete entries, and each entry's placeholders and line
breaks); ``texts`` is what each message says, form by form, as a translator's tool shows it: the ``msgstr`` (each
plural form: English's two) when filled, else the ``msgid`` (``msgid_plural``) gettext falls back to.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from collections.abc import Sequence

import polib

from tests.formats.inspection import Inspection

FORMAT = "po"
SUFFIX = ".po"

WELCOME = "欢迎使用我们的应用程序。"
DELETED = "已删除 %d 个文件。"
UPLOADED = "%(user)s 上传了 %(count)d 张照片。"
PROGRESS = "下载进度：%5.2f%%，剩余时间 %s。"
GREETING = "你好，{name}！你有 {0} 条新消息和 {} 个提醒，共 {count:>5} 项。"
MULTI_LINE = "第一行说明文字。\n第二行说明文字。\n"
TRANSLATED = ("保存", "Save")
OBSOLETE = "旧的菜单项"
WITHOUT_CHINESE = ("OK", "Version %s")
FUZZY_MSGID, FUZZY_PREVIOUS = "请稍候，正在加载……", "请稍等"
OPEN_CONTEXTS = ("菜单", "动词")
OPEN = "打开"

# what a placeholder looks like to the inspection (printf, Python named, brace fields): independent of the module
PLACEHOLDER = re.compile(
    r"%%|%\([^)]*\)[-+ #0]*\d*(?:\.\d+)?[a-zA-Z]|%(?:\d+\$)?[-+ #0]*\d*(?:\.\d+)?(?:ll|l|h)?[diouxXeEfFgGcs]"
    r"|\{\{|\}\}|\{[A-Za-z0-9_]*(?::[^{}]*)?\}"
)


def _header(catalogue: polib.POFile, *, language: str = "zh_CN", charset: str = "UTF-8") -> None:
    catalogue.header = "Chinese messages for the demo application.\nCopyright (C) 2024 Demo Ltd."
    catalogue.metadata = {
        "Project-Id-Version": "demo 2.1",
        "Report-Msgid-Bugs-To": "i18n@example.com",
        "POT-Creation-Date": "2024-05-01 10:00+0800",
        "PO-Revision-Date": "2024-05-02 09:30+0800",
        "Last-Translator": "Li Lei <lilei@example.com>",
        "Language-Team": "Chinese (simplified)",
        "Language": language,
        "MIME-Version": "1.0",
        "Content-Type": f"text/plain; charset={charset}",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": "nplurals=1; plural=0;",
    }


def sample_catalogue() -> polib.POFile:
    """The sample as polib objects (a test may change one thing before saving it)."""
    catalogue = polib.POFile(wrapwidth=78)
    _header(catalogue)
    entries = [
        polib.POEntry(msgid=WELCOME, occurrences=[("app/views.py", "12")], tcomment="首页的标题"),
        polib.POEntry(
            msgid=DELETED,
            msgid_plural=DELETED,
            msgstr_plural={0: ""},
            flags=["c-format"],
            comment="Translators: %d is how many files were deleted",
            occurrences=[("app/files.c", "88"), ("app/files.c", "131")],
        ),
        polib.POEntry(msgctxt=OPEN_CONTEXTS[0], msgid=OPEN, occurrences=[("app/menu.py", "7")]),
        polib.POEntry(msgctxt=OPEN_CONTEXTS[1], msgid=OPEN, occurrences=[("app/actions.py", "40")]),
        polib.POEntry(msgid=UPLOADED, flags=["python-format"], occurrences=[("app/photos.py", "55")]),
        polib.POEntry(msgid=PROGRESS, flags=["c-format"], comment="shown in the status bar"),
        polib.POEntry(msgid=GREETING, flags=["python-brace-format"], occurrences=[("app/inbox.py", "23")]),
        polib.POEntry(msgid=MULTI_LINE, occurrences=[("app/help.py", "3")]),
        polib.POEntry(msgid=TRANSLATED[0], msgstr=TRANSLATED[1], occurrences=[("app/editor.py", "19")]),
        polib.POEntry(msgid=WITHOUT_CHINESE[0], occurrences=[("app/dialog.py", "5")]),
        polib.POEntry(msgid=WITHOUT_CHINESE[1], flags=["c-format"], occurrences=[("app/about.c", "9")]),
        polib.POEntry(msgid=FUZZY_MSGID, flags=["fuzzy"], previous_msgid=FUZZY_PREVIOUS),
        polib.POEntry(msgid=OBSOLETE, obsolete=True),
        polib.POEntry(msgid="旧的提示", msgstr="Old hint", obsolete=True),
    ]
    for entry in entries:
        catalogue.append(entry)
    return catalogue


def sample_file() -> bytes:
    return str(sample_catalogue()).encode("utf-8")


def damaged_file() -> bytes:
    """The sample with a line that is no part of a catalogue (half a catalogue cut between entries is a valid
    catalogue, so the cross-path tests' damaged file is this one)."""
    return sample_file() + b"\nthis line is not gettext\n"


def file_of(sentences: Sequence[str]) -> bytes:
    """A catalogue of these Chinese sentences as msgids: references on every entry, a context on every 5th, a
    plural entry every 7th, a Python placeholder and its flag every 6th (a repeated sentence gets a context of its
    own: a catalogue holds each msgid once per context)."""
    catalogue = polib.POFile(wrapwidth=78)
    _header(catalogue)
    seen: set[str] = set()
    for index, sentence in enumerate(sentences):
        entry = polib.POEntry(msgid=sentence, occurrences=[(f"src/module_{index // 20}.py", str(10 + index))])
        if index % 6 == 5:
            entry.msgid = f"{sentence.replace('%', '%%')}（%(count)d）"  # a python-format string writes % as %%
            entry.flags = ["python-format"]
        if index % 5 == 4 or entry.msgid in seen:
            entry.msgctxt = f"screen {index}"
        if index % 7 == 6:
            entry.msgid_plural = entry.msgid
            entry.msgstr_plural = {0: ""}
        seen.add(entry.msgid)
        catalogue.append(entry)
    return str(catalogue).encode("utf-8")


def read_catalogue(data: bytes) -> polib.POFile:
    """``data`` opened as a user opens a catalogue: ``polib.pofile`` on a file (polib detects its charset)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "messages.po")
        with open(path, "wb") as file:
            file.write(data)
        return polib.pofile(path)


def forms(entry: polib.POEntry) -> list[str]:
    """What an entry says, form by form: its msgstr (English's two plural forms) or the msgid it falls back to."""
    if entry.msgid_plural:
        return [entry.msgstr_plural.get(0) or entry.msgid, entry.msgstr_plural.get(1) or entry.msgid_plural]
    return [entry.msgstr or entry.msgid]


def inspect(data: bytes) -> Inspection:
    catalogue = read_catalogue(data)
    structure: Counter[str] = Counter()
    texts: list[str] = []
    for index, entry in enumerate(catalogue):
        if entry.obsolete:
            structure["obsolete"] += 1
            structure["obsolete without msgstr"] += not entry.msgstr
            continue
        structure["entries"] += 1
        structure["plural entries"] += bool(entry.msgid_plural)
        structure["contexts"] += entry.msgctxt is not None
        structure["translator comments"] += bool(entry.tcomment)
        structure["extracted comments"] += bool(entry.comment)
        structure["references"] += len(entry.occurrences)
        structure["previous msgids"] += bool(entry.previous_msgid)
        for flag in entry.flags:
            if flag != "fuzzy":
                structure[f"flag {flag}"] += 1
        for text in forms(entry):
            texts.append(text)
            structure[f"entry {index} line breaks"] += text.count("\n")
            # what gettext's tools check: the directives of an entry flagged with a format (msgfmt --check)
            if any(flag.endswith("-format") and not flag.startswith("no-") for flag in entry.flags):
                for placeholder in PLACEHOLDER.findall(text):
                    structure[f"entry {index} placeholder {placeholder}"] += 1
    return Inspection({key: count for key, count in sorted(structure.items()) if count}, texts)
