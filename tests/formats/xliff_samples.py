"""XLIFF files for the tests, written with lxml (what users read and write XLIFF with in Python), and an independent
reading of what a translation must keep (``inspect``: lxml, never ``handler.formats.xliff``).

``sample_file()`` is an XLIFF 1.2 file, ``sample_file_v2()`` an XLIFF 2.1 one, each with the awkward cases: a unit
whose source has paired and standalone inline codes around and inside its sentence, units without a target and with
an empty one, a final (approved) unit, a translate="no" unit and a group, a unit without Chinese, notes, a source
with a line break under xml:space="preserve", and (1.2) a segmented ``<seg-source>``, (2.x) a unit of several
segments with a final one and an ``<ignorable>`` between them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from xml.sax.saxutils import escape

from lxml import etree

from tests.formats.inspection import Inspection

FORMAT = "xliff"
SUFFIX = ".xlf"
XLIFF_1 = "urn:oasis:names:tc:xliff:document:1.2"
XLIFF_2 = "urn:oasis:names:tc:xliff:document:2.0"
# inline codes by version; the ones whose content is native code, not text
CODES = {
    XLIFF_1: ("g", "x", "bx", "ex", "ph", "bpt", "ept", "it", "mrk"),
    XLIFF_2: ("ph", "pc", "sc", "ec", "mrk", "cp", "sm", "em"),
}
NATIVE = {XLIFF_1: ("ph", "bpt", "ept", "it"), XLIFF_2: ()}

# the 1.2 unit with inline codes around and inside its sentence (bx/ex around it, g with a ph inside, bpt/ept, it)
CODES_1 = (
    '<bx id="1" rid="1"/>请<g id="2" ctype="bold">点击</g>下面的<x id="3" ctype="image"/>按钮'
    '<g id="4">保存<ph id="5">&lt;br/&gt;</ph>文件</g>，然后<bpt id="6">&lt;b&gt;</bpt>关闭<ept id="6">&lt;/b&gt;</ept>'
    '窗口。<ex id="7" rid="1"/><it id="8" pos="open">&lt;i&gt;</it>'
)

SAMPLE_1 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:1.2" version="1.2">
  <file original="app/messages.properties" source-language="zh-CN" datatype="plaintext">
    <header>
      <note>由构建流水线导出，请勿手工修改。</note>
    </header>
    <body>
      <trans-unit id="welcome">
        <source>欢迎使用我们的翻译服务。</source>
        <note from="developer">首页的标题</note>
      </trans-unit>
      <trans-unit id="codes">
        <source>{CODES_1}</source>
      </trans-unit>
      <trans-unit id="empty-target">
        <source>文件已保存。</source>
        <target state="needs-translation"/>
      </trans-unit>
      <trans-unit id="approved" approved="yes">
        <source>取消操作</source>
        <target state="final">Cancel</target>
      </trans-unit>
      <trans-unit id="translated">
        <source>确定</source>
        <target state="translated">OK</target>
      </trans-unit>
      <trans-unit id="brand" translate="no">
        <source>星云翻译</source>
      </trans-unit>
      <trans-unit id="version">
        <source>Version 2.1 (build 1024)</source>
      </trans-unit>
      <trans-unit id="two-lines">
        <source xml:space="preserve">第一行文字
第二行文字</source>
      </trans-unit>
      <group id="menu" translate="no">
        <trans-unit id="menu.file">
          <source>文件菜单</source>
        </trans-unit>
      </group>
      <group id="dialogs">
        <trans-unit id="dialog.delete">
          <source>确定要<mrk mtype="term">删除</mrk>这个项目吗？</source>
          <note>删除确认对话框</note>
        </trans-unit>
        <trans-unit id="dialog.segmented">
          <source>第一句话。第二句话。</source>
          <seg-source><mrk mtype="seg" mid="1">第一句话。</mrk><mrk mtype="seg" mid="2">第二句话。</mrk></seg-source>
        </trans-unit>
      </group>
    </body>
  </file>
</xliff>
""".replace("{CODES_1}", CODES_1)

SAMPLE_2 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.1" srcLang="zh-CN">
  <file id="f1" original="docs/guide.md">
    <notes>
      <note id="n1">用户指南的导出文件</note>
    </notes>
    <unit id="title">
      <notes>
        <note category="context">页面标题</note>
      </notes>
      <segment>
        <source>用户指南</source>
      </segment>
    </unit>
    <unit id="codes">
      <originalData>
        <data id="d1">&lt;br/&gt;</data>
        <data id="d2">&lt;a href="/start"&gt;</data>
        <data id="d3">&lt;/a&gt;</data>
      </originalData>
      <segment id="s1">
        <source>请<pc id="1" dataRefStart="d2" dataRefEnd="d3">点击<ph id="2" dataRef="d1"/>这里</pc>继续阅读。</source>
      </segment>
      <ignorable>
        <source> </source>
      </ignorable>
      <segment id="s2">
        <source>按<sc id="3" type="fmt" subType="xlf:b"/>保存<ec startRef="3"/>键<cp hex="0001"/>完成。</source>
      </segment>
      <segment id="s3" state="final">
        <source>谢谢。</source>
        <target>Thank you.</target>
      </segment>
    </unit>
    <unit id="empty-target">
      <segment state="initial">
        <source>在<mrk id="m1" translate="no">config.yaml</mrk>里修改<mrk id="m2" type="term">设置</mrk>。</source>
        <target></target>
      </segment>
    </unit>
    <unit id="brand" translate="no">
      <segment>
        <source>星云翻译</source>
      </segment>
    </unit>
    <unit id="version">
      <segment>
        <source>Version 2.1</source>
      </segment>
    </unit>
    <unit id="two-lines">
      <segment>
        <source xml:space="preserve">第一行文字
第二行文字</source>
      </segment>
    </unit>
    <group id="menu" translate="no">
      <unit id="menu.file">
        <segment>
          <source>文件菜单</source>
        </segment>
      </unit>
    </group>
  </file>
</xliff>
"""


def _written(xml: str) -> bytes:
    """``xml`` as lxml writes it (what a Python build step exporting XLIFF with lxml produces)."""
    root = etree.fromstring(xml.encode("utf-8"))
    return bytes(etree.tostring(root.getroottree(), xml_declaration=True, encoding="UTF-8"))


def sample_file() -> bytes:
    """The XLIFF 1.2 sample."""
    return _written(SAMPLE_1)


def sample_file_v2() -> bytes:
    """The XLIFF 2.1 sample."""
    return _written(SAMPLE_2)


def file_of(sentences: Sequence[str]) -> bytes:
    """An XLIFF 1.2 file of one trans-unit per sentence: every third wrapped in a ``<g>``, every fourth followed by
    an ``<x/>``, every fifth with a note."""
    units = []
    for number, sentence in enumerate(sentences, 1):
        text = escape(sentence)
        if number % 3 == 0:
            text = f'<g id="g{number}">{text}</g>'
        if number % 4 == 0:
            text += f'<x id="x{number}"/>'
        note = f"\n        <note>第{number}条</note>" if number % 5 == 0 else ""
        units.append(f'      <trans-unit id="s{number}">\n        <source>{text}</source>{note}\n      </trans-unit>')
    body = "\n".join(units)
    return _written(
        f'<xliff xmlns="{XLIFF_1}" version="1.2">\n  <file original="sentences.txt" source-language="zh" '
        f'datatype="plaintext">\n    <body>\n{body}\n    </body>\n  </file>\n</xliff>\n'
    )


# --- reading with lxml ------------------------------------------------------------------------------------------


def _local(element: etree._Element, namespace: str) -> str | None:
    tag = element.tag
    prefix = f"{{{namespace}}}"
    return tag[len(prefix) :] if isinstance(tag, str) and tag.startswith(prefix) else None


def shown_text(element: etree._Element, namespace: str) -> str:
    """The text a translator sees in a source or target: text inside paired codes, not native code."""
    parts = [element.text or ""]
    for child in element:
        if _local(child, namespace) not in NATIVE[namespace]:
            parts.append(shown_text(child, namespace))
        parts.append(child.tail or "")
    return "".join(parts)


def codes_of(element: etree._Element, namespace: str) -> Counter[tuple[str, str]]:
    """Each inline code in ``element``: (kind, its id, rid, startRef or mid)."""
    found: Counter[tuple[str, str]] = Counter()
    for child in element.iterdescendants():
        local = _local(child, namespace)
        if local in CODES[namespace]:
            key = child.get("id") or child.get("rid") or child.get("startRef") or child.get("mid") or ""
            found[(local, key)] += 1
    return found


def _translate_off(element: etree._Element) -> bool:
    for node in (element, *element.iterancestors()):
        if node.get("translate") is not None:
            return node.get("translate") == "no"
    return False


def inspect(data: bytes) -> Inspection:
    """``structure``: files, groups, units, segments, notes, the sources' inline codes by kind, and how many of a
    source's codes its (non-empty) target lacks (0 in a faithful file); ``texts``: per translatable unit (1.2) or
    segment (2.x), the target's text where there is one, else the source's."""
    root = etree.fromstring(data)
    namespace = etree.QName(root).namespace or ""
    ns = f"{{{namespace}}}"
    structure: Counter[str] = Counter()
    texts: list[str] = []
    for name in ("file", "group", "trans-unit", "unit", "segment", "ignorable", "note", "seg-source"):
        structure[name] = sum(1 for _ in root.iter(ns + name))
    structure["codes missing from targets"] = 0
    holders = root.iter(ns + ("trans-unit" if namespace == XLIFF_1 else "segment"))
    for holder in holders:
        source, target = holder.find(ns + "source"), holder.find(ns + "target")
        if source is None:
            continue
        content = holder.find(ns + "seg-source")
        codes = codes_of(content if content is not None else source, namespace)
        for kind, _ in codes.elements():
            structure[f"source <{kind}>"] += 1
        if target is not None and (len(target) or (target.text or "").strip()):
            structure["codes missing from targets"] += sum((codes - codes_of(target, namespace)).values())
        if not _translate_off(holder):
            shown = shown_text(target, namespace) if target is not None else ""
            texts.append(shown if shown.strip() else shown_text(source, namespace))
    return Inspection(dict(sorted(structure.items())), texts)
