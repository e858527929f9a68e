"""gettext catalogues (``handler.formats.gettext``): what becomes a line for the service, what the translated
catalogue says when read back with polib (msgstr and English's plural forms filled, fuzzy set, placeholders, line
breaks, contexts, comments, flags, obsolete and already-translated entries kept, the header made English and
UTF-8), charsets, refusals; and the sample through the shipped default model."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import polib
import pytest

from handler.errors import InvalidRequestError, TranslatorError
from handler.formats import content_type_for, format_for, translate_file
from handler.formats.gettext import ENGLISH_PLURAL_FORMS, GETTEXT, PO_CONTENT_TYPE, PoFile, read_po_file
from handler.text.spans import MARKUP_STANDALONE
from tests.formats import po_samples
from tests.formats.inspection import assert_translated
from tests.formats.po_samples import (
    DELETED,
    FUZZY_MSGID,
    GREETING,
    MULTI_LINE,
    OPEN,
    PROGRESS,
    UPLOADED,
    WELCOME,
    inspect,
    read_catalogue,
    sample_catalogue,
    sample_file,
)
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service

_HAN_RUN = re.compile(r"[\u3400-\u9fff，。：；！？（）、…]+")


def void(index: int) -> str:
    return chr(MARKUP_STANDALONE + index)


def fake_english(line: str) -> str:
    """A stand-in translator: every run of Chinese becomes "en", markup characters stay where they were."""
    return re.sub(" +", " ", _HAN_RUN.sub(lambda match: " en ", line)).strip()


def translated(data: bytes, translate: object = fake_english, name: str = "messages.po") -> bytes:
    parsed = read_po_file(data, name=name)
    assert callable(translate)
    return parsed.rebuild([translate(line) for line in parsed.lines])


def entries_by_key(catalogue: polib.POFile) -> dict[tuple[str | None, str, bool], polib.POEntry]:
    return {(entry.msgctxt, entry.msgid, bool(entry.obsolete)): entry for entry in catalogue}


def save(catalogue: polib.POFile) -> bytes:
    return str(catalogue).encode("utf-8")


# --- what goes to the service ---------------------------------------------------------------------------------------
def test_one_line_per_string_to_translate_placeholders_and_line_breaks_as_void_characters() -> None:
    parsed = read_po_file(sample_file())
    assert parsed.lines == [
        WELCOME,
        f"已删除 {void(0)} 个文件。",  # the plural entry: msgid and msgid_plural are the same text, one line
        OPEN,  # msgctxt 菜单
        OPEN,  # msgctxt 动词
        f"{void(0)} 上传了 {void(1)} 张照片。",
        f"下载进度：{void(0)}{void(1)}，剩余时间 {void(2)}。",
        f"你好，{void(0)}！你有 {void(1)} 条新消息和 {void(2)} 个提醒，共 {void(3)} 项。",
        f"第一行说明文字。{void(0)}第二行说明文字。",  # the trailing line break stays out of the line
        FUZZY_MSGID,  # fuzzy with an empty msgstr: translated
    ]  # not there: the header, 保存 (translated), OK and Version %s (no Chinese), the obsolete entries
    assert parsed.text == "\n".join(parsed.lines)
    assert parsed.characters == sum(len(line) for line in parsed.lines)


@pytest.mark.parametrize(
    ("flags", "msgid", "expected"),
    [
        (["c-format"], "共 %d 项 {name}", f"共 {void(0)} 项 {{name}}"),  # C: braces are text
        (["python-brace-format"], "共 %d 项 {name}", f"共 %d 项 {void(0)}"),  # brace: % is text
        (["python-format"], "共 %d 项 %(name)s {x}", f"共 {void(0)} 项 {void(1)} {{x}}"),
        ([], "共 %d 项 {name} %(n)s", f"共 {void(0)} 项 {void(1)} {void(2)}"),  # no flag: every syntax
        (["no-c-format"], "共 %d 项 {name}", f"共 %d 项 {void(0)}"),
        (["no-python-brace-format"], "共 %d 项 {name}", f"共 {void(0)} 项 {{name}}"),
        ([], "注意 {注意} 和 100% 完成", "注意 {注意} 和 100% 完成"),  # Chinese in braces, a percent: text
        (["qt-format"], "第 %1 页，共 %2 页", f"第 {void(0)} 页，共 {void(1)} 页"),
        (["c-format"], "%1$s 的 %2$5.1f%%", f"{void(0)} 的 {void(1)}{void(2)}"),
        (["python-brace-format"], "共 {{ {0.name} }} {a[0]!r:>{w}}", f"共 {void(0)} {void(1)} {void(2)} {void(3)}"),
    ],
)
def test_which_placeholders_are_protected_follows_the_entrys_flags(flags: list[str], msgid: str, expected: str) -> None:
    catalogue = polib.POFile()
    catalogue.append(polib.POEntry(msgid=msgid, flags=flags))
    assert read_po_file(save(catalogue)).lines == [expected]


# --- the translated catalogue read back with polib ------------------------------------------------------------------
def test_the_sample_translated_keeps_every_structure_and_leaves_no_chinese() -> None:
    source = sample_file()
    output = translated(source)
    assert_translated(inspect, source, output)


def test_msgstr_and_both_english_plural_forms_are_filled_with_placeholders_in_place() -> None:
    english = {
        f"已删除 {void(0)} 个文件。": f"Deleted {void(0)} files.",
        f"{void(0)} 上传了 {void(1)} 张照片。": f"{void(0)} uploaded {void(1)} photos.",
        f"下载进度：{void(0)}{void(1)}，剩余时间 {void(2)}。": f"Downloaded {void(0)}{void(1)}, {void(2)} left.",
        f"你好，{void(0)}！你有 {void(1)} 条新消息和 {void(2)} 个提醒，共 {void(3)} 项。": (
            f"Hello, {void(0)}! You have {void(1)} new messages and {void(2)} reminders, {void(3)} items."
        ),
        f"第一行说明文字。{void(0)}第二行说明文字。": f"First line. {void(0)} Second line.",
    }
    out = read_catalogue(translated(sample_file(), lambda line: english.get(line, fake_english(line))))
    found = entries_by_key(out)
    deleted = found[(None, DELETED, False)]
    assert deleted.msgstr_plural == {0: "Deleted %d files.", 1: "Deleted %d files."}
    assert found[(None, UPLOADED, False)].msgstr == "%(user)s uploaded %(count)d photos."
    assert found[(None, PROGRESS, False)].msgstr == "Downloaded %5.2f%%, %s left."
    assert found[(None, GREETING, False)].msgstr == (
        "Hello, {name}! You have {0} new messages and {} reminders, {count:>5} items."
    )
    # the line break is back in its place (the spaces the model put around it dropped), the trailing one kept
    assert found[(None, MULTI_LINE, False)].msgstr == "First line.\nSecond line.\n"


def test_plural_forms_come_from_msgid_and_msgid_plural_when_they_differ() -> None:
    catalogue = sample_catalogue()
    catalogue.append(
        polib.POEntry(msgid="一个文件", msgid_plural="%d 个文件", msgstr_plural={0: ""}, flags=["c-format"])
    )
    english = {"一个文件": "One file", f"{void(0)} 个文件": f"{void(0)} files"}
    out = read_catalogue(translated(save(catalogue), lambda line: english.get(line, fake_english(line))))
    assert entries_by_key(out)[(None, "一个文件", False)].msgstr_plural == {0: "One file", 1: "%d files"}


def test_machine_translated_entries_are_fuzzy_and_everything_else_is_kept() -> None:
    source_catalogue = sample_catalogue()
    out = read_catalogue(translated(sample_file()))
    before, after = entries_by_key(source_catalogue), entries_by_key(out)
    assert list(before) == list(after)  # same entries, same order, same contexts
    for key, old in before.items():
        new = after[key]
        assert (new.tcomment, new.comment, new.occurrences) == (old.tcomment, old.comment, old.occurrences)
        assert (new.previous_msgid, new.msgid_plural) == (old.previous_msgid, old.msgid_plural)
        assert [flag for flag in new.flags if flag != "fuzzy"] == [flag for flag in old.flags if flag != "fuzzy"]
        untouched = old.obsolete or bool(old.msgstr) or old.msgid in ("OK", "Version %s")
        if untouched:  # obsolete, already translated, without Chinese: written exactly as polib writes the source
            assert str(new) == str(old), key
        else:
            assert new.flags[0] == "fuzzy", key  # a translator reviews machine output
    assert after[(None, "保存", False)].msgstr == "Save" and "fuzzy" not in after[(None, "保存", False)].flags
    assert after[(None, po_samples.OBSOLETE, True)].msgstr == ""  # obsolete: never translated
    assert after[(None, "OK", False)].msgstr == ""  # no Chinese: gettext shows the msgid
    assert after[(None, FUZZY_MSGID, False)].previous_msgid == po_samples.FUZZY_PREVIOUS


def test_the_header_says_english_plural_forms_and_utf8_and_keeps_the_rest() -> None:
    source = sample_catalogue()
    out = read_catalogue(translated(sample_file()))
    assert out.metadata["Language"] == "en"
    assert out.metadata["Plural-Forms"] == ENGLISH_PLURAL_FORMS == "nplurals=2; plural=(n != 1);"
    assert out.metadata["Content-Type"] == "text/plain; charset=UTF-8"
    changed = {"Language", "Plural-Forms"}
    assert {k: v for k, v in out.metadata.items() if k not in changed} == {
        k: v for k, v in source.metadata.items() if k not in changed
    }
    assert out.header == source.header
    assert not out.metadata_is_fuzzy


def test_an_english_header_already_there_is_kept() -> None:
    catalogue = sample_catalogue()
    catalogue.metadata["Language"] = "en_GB"
    catalogue.metadata["Plural-Forms"] = "nplurals=2; plural=n != 1;"
    out = read_catalogue(translated(save(catalogue)))
    assert (out.metadata["Language"], out.metadata["Plural-Forms"]) == ("en_GB", "nplurals=2; plural=n != 1;")


def test_a_template_translated_is_a_filled_english_catalogue() -> None:
    template = polib.POFile()
    template.header = "SOME DESCRIPTIVE TITLE."
    template.metadata = {
        "Project-Id-Version": "PACKAGE VERSION",
        "Language": "",
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=CHARSET",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": "nplurals=INTEGER; plural=EXPRESSION;",
    }
    template.metadata_is_fuzzy = ["fuzzy"]
    template.append(polib.POEntry(msgid="文件", msgid_plural="%d 个文件", msgstr_plural={0: "", 1: ""}))
    template.append(polib.POEntry(msgid=WELCOME))
    data = save(template)
    assert format_for("messages.pot") is GETTEXT
    out = read_catalogue(translated(data, name="messages.pot"))
    assert out.metadata["Language"] == "en"
    assert out.metadata["Plural-Forms"] == ENGLISH_PLURAL_FORMS
    assert out.metadata["Content-Type"] == "text/plain; charset=UTF-8"
    assert [entry.translated() or "fuzzy" in entry.flags for entry in out] == [True, True]
    assert out[0].msgstr_plural == {0: "en", 1: "%d en"}


def test_a_plural_entry_gets_exactly_englishs_forms_and_keeps_a_filled_one() -> None:
    catalogue = sample_catalogue()
    catalogue.metadata["Plural-Forms"] = "nplurals=3; plural=(n==1 ? 0 : n==2 ? 1 : 2);"
    catalogue.append(polib.POEntry(msgid="一项", msgid_plural="多项", msgstr_plural={0: "", 1: "", 2: ""}))
    catalogue.append(polib.POEntry(msgid="一行", msgid_plural="多行", msgstr_plural={0: "One row"}))
    english = {"多项": "many items", "多行": "many rows"}
    out = entries_by_key(read_catalogue(translated(save(catalogue), lambda line: english.get(line, "one"))))
    assert out[(None, "一项", False)].msgstr_plural == {0: "one", 1: "many items"}
    assert out[(None, "一行", False)].msgstr_plural == {0: "One row", 1: "many rows"}


def test_a_placeholder_the_translation_dropped_is_appended_and_one_repeated_is_written_once() -> None:
    catalogue = polib.POFile()
    catalogue.append(polib.POEntry(msgid="%s 删除了 %d 个文件\n", flags=["c-format"]))
    catalogue.append(polib.POEntry(msgid="{a} 和 {b}", flags=["python-brace-format"]))
    answers = iter([f"{void(0)} deleted files", f"{void(1)} and {void(1)} {void(0)}"])
    out = read_catalogue(translated(save(catalogue), lambda line: next(answers)))
    assert [entry.msgstr for entry in out] == ["%s deleted files %d\n", "{b} and {a}"]


def test_an_empty_translation_leaves_the_entry_untranslated() -> None:
    out = read_catalogue(translated(sample_file(), lambda line: "" if line == WELCOME else fake_english(line)))
    welcome = entries_by_key(out)[(None, WELCOME, False)]
    assert welcome.msgstr == "" and "fuzzy" not in welcome.flags


def test_a_wrong_number_of_lines_is_refused() -> None:
    parsed = read_po_file(sample_file())
    with pytest.raises(TranslatorError, match="gave 1 lines for 9 strings"):
        parsed.rebuild(["one"])


def test_joined_parts_equal_the_whole_file_translated() -> None:
    data = po_samples.file_of([f"第{n}句话。" for n in range(40)])
    whole = translated(data)
    text = GETTEXT.read(data, "big.po").text
    cut = GETTEXT.cut(text, 60, "big.po")
    assert cut is not None
    lead, parts = cut
    assert len(parts) > 1 and not lead
    assert all(part.separator == "\n" for part in parts[:-1])  # cut only between strings
    translation = "".join(
        "\n".join(fake_english(line) for line in part.text.split("\n")) + part.separator for part in parts
    )
    assert GETTEXT.join(translation, lambda: data, "big.po") == whole
    assert_translated(inspect, data, whole)


# --- charsets -------------------------------------------------------------------------------------------------------
def test_a_gbk_catalogue_is_read_by_its_header_and_written_as_utf8() -> None:
    catalogue = sample_catalogue()
    catalogue.metadata["Content-Type"] = "text/plain; charset=GBK"
    data = str(catalogue).encode("gbk")
    source = GETTEXT.read(data, "zh.po")
    assert source.encoding == "gettext .po catalogue (GBK)"
    output = translated(data)
    assert b"charset=UTF-8" in output and output.decode("utf-8")
    assert read_catalogue(output).metadata["Content-Type"] == "text/plain; charset=UTF-8"
    assert_translated(inspect, data, output)


def test_a_catalogue_not_in_its_headers_charset_is_refused_with_the_line() -> None:
    data = sample_file().decode("utf-8").encode("gb18030")  # the header still says UTF-8
    with pytest.raises(InvalidRequestError, match=r"zh\.po is not valid UTF-8 as its header's charset says .*line 1"):
        read_po_file(data, name="zh.po")


def test_without_a_charset_the_bytes_are_decoded_as_any_text_file_is() -> None:
    catalogue = polib.POFile()
    catalogue.append(polib.POEntry(msgid="請問最近的捷運站在哪裡？這裡的交通很方便。"))
    out = read_catalogue(translated(str(catalogue).encode("big5")))
    assert out[0].msgstr == "en" and out.metadata["Content-Type"] == "text/plain; charset=UTF-8"


# --- refusals -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"hello world\nthis is plain text\n", "has a syntax error at line 1"),
        (b'msgid "a"\nmsgstr "b" "c"\n', "has a syntax error at line 2: unescaped double quote found"),
        (b'msgid "a"\nmsgid "b"\n', "has a syntax error at line 2"),
        (b"", "holds no msgid and msgstr lines"),
        (b"# only a comment\n# and another\n", "holds no entry and no header fields"),
    ],
)
def test_what_is_not_a_catalogue_is_refused_saying_why_and_what_is_allowed(data: bytes, reason: str) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        read_po_file(data, name="x.po")
    message = str(refused.value)
    assert message.startswith(f"not a gettext PO catalogue: x.po {reason}")
    assert "send a gettext catalogue (.po) or template (.pot)" in message


_UNQUOTED = [  # (catalogue, its line at fault, the string's owner and what is wrong); msgfmt refuses each
    (b'msgid "\xe4\xbd\xa0\xe5\xa5\xbd\nmsgstr ""\n', 1, "msgid's string has no closing double quote"),
    (b'msgid "a"\nmsgstr "bc\n', 2, "msgstr's string has no closing double quote"),
    (b'msgid "a"\nmsgstr ""\n"Language: zh\n', 3, "the continuation string has no closing double quote"),
    (b'msgid "a\\"\nmsgstr ""\n', 1, "msgid's string has no closing double quote"),  # its last quote is escaped
    (b'msgctxt "c\nmsgid "a"\nmsgstr ""\n', 1, "msgctxt's string has no closing double quote"),
    (b'msgid "a"\nmsgid_plural "b\nmsgstr[0] ""\nmsgstr[1] ""\n', 2, "msgid_plural's string has no closing"),
    (b'msgid "a"\nmsgid_plural "b"\nmsgstr[0] "x\nmsgstr[1] ""\n', 3, "msgstr[0]'s string has no closing"),
    (b'#~ msgid "a\n#~ msgstr "b"\n', 1, "msgid's string has no closing double quote"),  # obsolete
    (b'#| msgid "a\nmsgid "b"\nmsgstr ""\n', 1, "msgid's string has no closing double quote"),  # previous
    (b'msgid \xe4\xbd\xa0\xe5\xa5\xbd"\nmsgstr ""\n', 1, "msgid's string does not begin with a double quote"),
]


@pytest.mark.parametrize(("data", "line", "wrong"), _UNQUOTED)
def test_a_string_missing_a_double_quote_is_refused_naming_its_line(data: bytes, line: int, wrong: str) -> None:
    # polib alone read these and dropped the character before the missing quote (msgid "你好 became "你")
    with pytest.raises(InvalidRequestError) as refused:
        read_po_file(data, name="zh.po")
    message = str(refused.value)
    assert message.startswith(f"not a gettext PO catalogue: zh.po has a syntax error at line {line}: {wrong}")
    shown = data.decode("utf-8").splitlines()[line - 1]
    assert f"the line reads: {shown} --" in message
    assert "send a gettext catalogue (.po) or template (.pot)" in message


def test_a_string_ending_in_an_escaped_backslash_is_closed() -> None:
    parsed = read_po_file(b'msgid "\xe4\xbd\xa0\xe5\xa5\xbd\\\\"\nmsgstr ""\n', name="zh.po")
    assert parsed.catalogue[0].msgid == "你好\\"


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="GNU gettext's msgfmt is not installed")
@pytest.mark.parametrize(("data", "line", "wrong"), _UNQUOTED)
def test_gnu_msgfmt_refuses_what_the_reader_refuses(tmp_path: Path, data: bytes, line: int, wrong: str) -> None:
    path = tmp_path / "zh.po"
    path.write_bytes(b'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\n' + data)
    checked = subprocess.run(["msgfmt", "-o", str(tmp_path / "zh.mo"), str(path)], capture_output=True, check=False)
    assert checked.returncode != 0
    assert b"end-of-line within string" in checked.stderr or b"syntax error" in checked.stderr, checked.stderr
    with pytest.raises(InvalidRequestError, match=f"has a syntax error at line {line + 3}: "):
        read_po_file(path.read_bytes(), name="zh.po")


def test_binary_data_is_refused() -> None:
    with pytest.raises(InvalidRequestError, match="looks binary"):
        read_po_file(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", name="x.po")


def test_content_naming_a_file_on_the_server_is_never_read() -> None:
    path = str(Path(__file__).resolve())  # polib.pofile would open an existing path handed as the content
    with pytest.raises(InvalidRequestError, match="holds no msgid and msgstr lines"):
        read_po_file(path.encode(), name="x.po")


# --- registration, the library users check with, and the shipped model ---------------------------------------------
def test_registered_under_po_and_pot_with_its_content_type() -> None:
    assert format_for("de.po") is GETTEXT and format_for("messages.POT") is GETTEXT
    assert content_type_for("de.po") == PO_CONTENT_TYPE == "text/x-gettext-translation; charset=utf-8"
    assert isinstance(GETTEXT.read(sample_file(), "de.po").parsed, PoFile)


@pytest.mark.skipif(shutil.which("msgfmt") is None, reason="GNU gettext's msgfmt is not installed")
def test_gnu_msgfmt_checks_the_translated_catalogue(tmp_path: Path) -> None:
    path = tmp_path / "en.po"
    path.write_bytes(translated(sample_file()))
    # --check: header, plural forms against nplurals, format strings against the msgid's, line breaks at the ends
    checked = subprocess.run(
        ["msgfmt", "--check", "--use-fuzzy", "-o", str(tmp_path / "en.mo"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr


@needs_shipped_bundle
def test_the_sample_through_the_shipped_model() -> None:
    source = sample_file()
    result = translate_file(source, "messages.po", shipped_service())
    assert result.content_type == PO_CONTENT_TYPE
    assert_translated(inspect, source, result.data)
    out = entries_by_key(read_catalogue(result.data))
    assert out[(None, GREETING, False)].msgstr.count("{count:>5}") == 1
    assert out[(None, DELETED, False)].msgstr_plural[1].count("%d") == 1
    assert out[(None, MULTI_LINE, False)].msgstr.count("\n") == 2
    assert all("fuzzy" in out[(None, msgid, False)].flags for msgid in (WELCOME, UPLOADED, PROGRESS))
