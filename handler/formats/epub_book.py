"""EPUB e-books (``.epub``, EPUB 2 and 3), read and rebuilt: the chapters translated through the HTML format, the
navigation and the title with them, the package kept valid; binary, never decoded. The format itself is
``handler.formats.epub``, which imports this module on the first ``.epub``.

An EPUB is a zip (``handler.formats.packages``: its limits, and every XML part read without entities). Its
``META-INF/container.xml`` names the package document (``.opf``), whose manifest lists the book's files and whose
spine orders its content documents. **Translated**:

* every XHTML content document of the spine (``application/xhtml+xml``), and the EPUB 3 navigation document
  (``properties="nav"``: its headings and link texts) where the spine leaves it out: each is translated whole as
  HTML (``FileTranslator.text(xhtml, "html")``, ``handler.text.markup``: text nodes, ``alt`` and ``title``
  translated, every tag, attribute (``epub:type``, ``xml:lang``, ids, hrefs), the XML declaration, the DOCTYPE,
  ``<head>`` (its ``<title>`` text translated), comments, ``script``/``style``/``pre``/``code`` kept as written);
* the EPUB 2 ``toc.ncx``: the book title (``docTitle/text``) and every ``navLabel/text`` (plain text);
* the package's ``dc:title`` and ``dc:description``: chosen translated, since a reading system's library shows them
  and the book is English now (``dc:creator``, ``dc:publisher``, ``dc:subject`` and the NCX's ``docAuthor`` are
  names, kept).

A translated book says it is English: each ``dc:language`` naming Chinese (``zh``, ``zh-CN``, ``zh-Hant``...) and the
``lang``/``xml:lang`` naming Chinese on a translated chapter's ``<html>`` tag, the package root and a translated
metadata element become ``en`` (reading systems pick hyphenation, fonts and the text-to-speech voice from them).

**Kept**: every other entry byte for byte, in the same order and compression (``mimetype`` first and stored; images,
CSS, fonts, SVG, ``META-INF``); the manifest, spine, ids and hrefs; a document without Chinese is not touched. A
translated chapter is checked before anything is written: it must parse as XML (no entities) with the source's
elements in the same order, or ``TranslatorError`` says which and nothing is written. The HTML format writes the
model's text as it comes: a bare ``&`` and a ``<`` that starts none of the source's tags are escaped first.

**Billed** (``characters``): the visible text translated, i.e. the HTML blocks with Chinese (markup characters left
out) and the labels with Chinese; not the markup, which for XHTML is most of a chapter's characters.

**Fan-out**: ``text`` is the documents to translate, then one labels document (``<labels><p>`` a label ``</p>...``),
joined by U+001E, which XML 1.0 forbids, so it occurs in no document: the fan-out cuts only between documents, each
part's documents are translated one by one as the whole book's are, and ``join`` rebuilds the book from the source.
"""

from __future__ import annotations

import html
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from lxml import etree

from handler.errors import TranslatorError
from handler.formats.packages import Package, has_declaration, open_package, parse_xml, refusal, write_package
from handler.text.markup import parse_markup
from handler.text.spans import MARKUP_LIMIT, MARKUP_OPEN, has_chinese

MIMETYPE = "application/epub+zip"  # what an EPUB's first entry, mimetype, says (and its content type)
SEPARATOR = "\x1e"  # between the documents of a book's ``text``: XML 1.0 forbids it, so no document holds it
KIND = "valid EPUB e-book"
HINT = "send an EPUB 2 or 3 book: a zip archive whose META-INF/container.xml names its package document (.opf)"
XML_HINT = (
    "an EPUB's XML parts must be well-formed UTF-8 or UTF-16 XML without DTD entities (only &amp; &lt; &gt; &quot; "
    "&apos; and character references such as &#160;)"
)
CONTAINER = "META-INF/container.xml"
_CONTAINER_NS = "urn:oasis:names:tc:opendocument:xmlns:container"
OPF_NS = "http://www.idpf.org/2007/opf"
DC_NS = "http://purl.org/dc/elements/1.1/"
NCX_NS = "http://www.daisy.org/z3986/2005/ncx/"
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
XHTML_TYPE = "application/xhtml+xml"
NCX_TYPE = "application/x-dtbncx+xml"
TRANSLATED_METADATA = ("title", "description")  # dc: elements translated

_MARKUP_CHAR = re.compile(f"[{chr(MARKUP_OPEN)}-{chr(MARKUP_LIMIT - 1)}]")
# what the escaping of a translation leaves alone: comments, CDATA, processing instructions, the DOCTYPE
_VERBATIM = re.compile(r"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>|<!DOCTYPE[^>\[]*(?:\[.*?\])?\s*>", re.S)
_BARE_AMPERSAND = re.compile(r"&(?!#[0-9]+;|#[xX][0-9A-Fa-f]+;|[A-Za-z_][\w.-]*;)")
# a start, end or empty tag (a quoted value may hold what a translation put there); its name is group 1
_TAG = re.compile(r"""</?([A-Za-z_][\w.:-]*)(?:\s+[^\s<>"'=/]+\s*=\s*(?:"[^"]*"|'[^']*'))*\s*/?>""")
_TAG_NAME = re.compile(r"</?([A-Za-z_][\w.:-]*)")
_QUOTED = re.compile(r""""[^"]*"|'[^']*'""")
LABEL_NAMES = frozenset({"labels", "p"})
_STANDALONE = re.compile(rb"""^[^>]*?standalone\s*=\s*["'](yes|no)["']""")
_HTML_START = re.compile(r"<html\b[^>]*>")
_CHINESE_LANG = re.compile(r"""(\s(?:xml:)?lang\s*=\s*(["']))zh[^"']*(\2)""", re.I)


@dataclass(frozen=True)
class Chapter:
    """An XHTML document to translate: its entry, its text (line feeds only) and how to write it back."""

    entry: str
    text: str
    crlf: bool  # written with CRLF line endings
    codec: str  # utf-8, utf-8-sig (a byte-order mark) or utf-16
    tags: tuple[str, ...]  # its elements' tags in document order (the translation must have the same)
    names: frozenset[str]  # the tag names its source writes (a "<" in a translation starts one of them, or text)
    characters: int  # the visible text it bills


@dataclass
class EpubBook:
    """An EPUB read for translation: what ``text`` holds (the chapters, then the labels) and how to rebuild it."""

    package: Package
    opf_entry: str
    opf: etree._Element
    ncx_entry: str | None
    ncx: etree._Element | None  # only when a label of it is translated
    chapters: tuple[Chapter, ...]
    labels: tuple[etree._Element, ...]  # dc:title, dc:description, NCX docTitle and navLabel texts with Chinese

    @property
    def items(self) -> list[str]:
        """The documents ``text`` joins: each chapter, then the labels as one small document."""
        items = [chapter.text for chapter in self.chapters]
        if self.labels:
            items.append(labels_document([label.text or "" for label in self.labels]))
        return items

    @property
    def text(self) -> str:
        return SEPARATOR.join(self.items)

    @property
    def characters(self) -> int:
        labels = visible_characters(self.items[-1]) if self.labels else 0
        return sum(chapter.characters for chapter in self.chapters) + labels

    def rebuild(self, translations: Sequence[str]) -> bytes:
        """The book with each item of ``items`` replaced by its translation; ``TranslatorError`` when a translation
        is missing or a chapter's is not the source's XML."""
        expected = len(self.chapters) + (1 if self.labels else 0)
        if len(translations) != expected:
            raise TranslatorError(f"{expected} documents to translate, {len(translations)} translations")
        changed = {
            chapter.entry: _chapter_bytes(chapter, translation)
            for chapter, translation in zip(self.chapters, translations[: len(self.chapters)], strict=True)
        }
        if self.labels:
            for label, english in zip(self.labels, _labels_of(translations[-1], len(self.labels)), strict=True):
                _set_text(label, english)
        if changed or self.labels:
            _english_metadata(self.opf)
            changed[self.opf_entry] = _xml_bytes(self.opf, self.package.read(self.opf_entry))
        if self.ncx is not None and self.ncx_entry is not None:
            changed[self.ncx_entry] = _xml_bytes(self.ncx, self.package.read(self.ncx_entry))
        if not changed:
            return self.package.data
        return write_package(self.package.data, self.package.entries, changed)


# --- reading ------------------------------------------------------------------------------------------------------


def read_epub(data: bytes, name: str) -> EpubBook:
    """``data`` read as an EPUB; ``InvalidRequestError`` saying what is wrong and what an EPUB must be."""
    package = open_package(data, name, KIND, HINT)
    if "mimetype" in package.names:
        declared = package.read("mimetype").strip()
        if declared != MIMETYPE.encode():
            shown = declared[:80].decode("utf-8", "replace")
            raise refusal(KIND, name, f"says it is {shown!r} (its mimetype entry), not {MIMETYPE}", HINT)
    opf_entry = _rootfile(package, name)
    opf = _xml(package, opf_entry, name)
    manifest = _manifest(opf, opf_entry, package, name)
    documents = _documents(opf, manifest, package, name)
    ncx_entry = _ncx_entry(opf, manifest)
    _refuse_encrypted(package, name, [opf_entry, *documents, *([ncx_entry] if ncx_entry else [])])
    chapters = tuple(
        chapter for chapter in (_read_chapter(package, entry, name) for entry in documents) if chapter.characters
    )
    labels = [element for element in _metadata_labels(opf) if has_chinese(element.text or "")]
    ncx = None
    if ncx_entry is not None:
        _check_present(package, ncx_entry, name, "names as its table of contents")
        ncx = _xml(package, ncx_entry, name)
        ncx_labels = [element for element in _ncx_labels(ncx) if has_chinese(element.text or "")]
        labels.extend(ncx_labels)
        ncx = ncx if ncx_labels else None
    return EpubBook(package, opf_entry, opf, ncx_entry, ncx, chapters, tuple(labels))


def _xml(package: Package, entry: str, name: str) -> etree._Element:
    return _part(package, entry, name)[1]


def _part(package: Package, entry: str, name: str) -> tuple[bytes, etree._Element]:
    try:
        return package.part(entry)
    except ValueError as error:
        raise refusal(KIND, name, f"has a part that cannot be read: {error}", XML_HINT) from None


def _rootfile(package: Package, name: str) -> str:
    """The package document's entry, as ``META-INF/container.xml`` names it (the first OPF rootfile)."""
    if CONTAINER not in package.names:
        raise refusal(KIND, name, f"has no {CONTAINER} (every EPUB names its package document there)", HINT)
    container = _xml(package, CONTAINER, name)
    rootfiles = [
        element
        for element in container.iter(f"{{{_CONTAINER_NS}}}rootfile")
        if element.get("full-path") and element.get("media-type", "") in ("", "application/oebps-package+xml")
    ]
    if not rootfiles:
        raise refusal(KIND, name, f"names no package document (a rootfile with a full-path) in {CONTAINER}", HINT)
    entry = str(rootfiles[0].get("full-path"))
    if entry not in package.names:
        raise refusal(KIND, name, f"lacks its package document {entry!r}, which {CONTAINER} names", HINT)
    return entry


@dataclass(frozen=True)
class _Item:
    entry: str  # the zip entry its href names
    media_type: str
    properties: tuple[str, ...]


def _manifest(opf: etree._Element, opf_entry: str, package: Package, name: str) -> dict[str, _Item]:
    """The manifest's items by id (hrefs resolved against the package document's folder)."""
    manifest = opf.find(f"{{{OPF_NS}}}manifest")
    if opf.tag != f"{{{OPF_NS}}}package" or manifest is None or opf.find(f"{{{OPF_NS}}}spine") is None:
        raise refusal(KIND, name, f"has a package document {opf_entry!r} without a manifest and a spine", HINT)
    folder = posixpath.dirname(opf_entry)
    items: dict[str, _Item] = {}
    for element in manifest.iter(f"{{{OPF_NS}}}item"):
        href = element.get("href") or ""
        entry = posixpath.normpath(posixpath.join(folder, unquote(href.split("#")[0])))
        items[element.get("id") or ""] = _Item(
            entry, (element.get("media-type") or "").strip().lower(), tuple((element.get("properties") or "").split())
        )
    return items


def _documents(opf: etree._Element, manifest: dict[str, _Item], package: Package, name: str) -> list[str]:
    """The XHTML documents to translate: the spine's, in its order, then the navigation document if it is not in
    the spine; a spine item the manifest or the archive lacks is refused."""
    documents: list[str] = []
    for itemref in opf.iter(f"{{{OPF_NS}}}itemref"):
        idref = itemref.get("idref") or ""
        item = manifest.get(idref)
        if item is None:
            raise refusal(KIND, name, f"has a spine item {idref!r} that its manifest does not list", HINT)
        _check_present(package, item.entry, name, "reads in its spine")
        if item.media_type == XHTML_TYPE and item.entry not in documents:
            documents.append(item.entry)
    for item in manifest.values():
        if "nav" in item.properties and item.media_type == XHTML_TYPE and item.entry not in documents:
            _check_present(package, item.entry, name, "names as its navigation document")
            documents.append(item.entry)
    return documents


def _ncx_entry(opf: etree._Element, manifest: dict[str, _Item]) -> str | None:
    """The EPUB 2 table of contents (``toc.ncx``): the spine's ``toc``, else the manifest's NCX item, if any."""
    spine = opf.find(f"{{{OPF_NS}}}spine")
    named = manifest.get(spine.get("toc") or "") if spine is not None else None
    if named is None:
        named = next((item for item in manifest.values() if item.media_type == NCX_TYPE), None)
    return named.entry if named is not None else None


def _refuse_encrypted(package: Package, name: str, entries: Sequence[str]) -> None:
    """A book whose documents ``META-INF/encryption.xml`` lists (DRM) cannot be read."""
    if "META-INF/encryption.xml" not in package.names:
        return
    encryption = _xml(package, "META-INF/encryption.xml", name)
    encrypted = {
        posixpath.normpath(unquote(element.get("URI") or ""))
        for element in encryption.iter()
        if isinstance(element.tag, str) and etree.QName(element).localname == "CipherReference"
    }
    for entry in entries:
        if entry in encrypted:
            raise refusal(KIND, name, f"has an encrypted part {entry!r} (DRM)", "send a book without DRM")


def _check_present(package: Package, entry: str, name: str, named: str) -> None:
    if entry not in package.names:
        raise refusal(KIND, name, f"lacks {entry!r}, which its package document {named}", HINT)


def _read_chapter(package: Package, entry: str, name: str) -> Chapter:
    """An XHTML document read: parsed as XML (no entities), decoded, its visible text to translate counted."""
    raw, root = _part(package, entry, name)
    declared = (root.getroottree().docinfo.encoding or "UTF-8").lower().replace("_", "-")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec = "utf-16"
    elif declared not in ("utf-8", "utf8"):
        raise refusal(
            KIND, name, f"has a document {entry!r} in {declared}", "EPUB content documents are UTF-8 or UTF-16"
        )
    else:
        codec = "utf-8-sig" if raw.startswith(b"\xef\xbb\xbf") else "utf-8"
    try:
        decoded = raw.decode(codec)
    except UnicodeDecodeError as error:
        raise refusal(KIND, name, f"has a document {entry!r} that is not {codec} ({error})", XML_HINT) from None
    text = decoded.replace("\r\n", "\n")
    names = frozenset(_TAG_NAME.findall(text))
    return Chapter(entry, text, "\r\n" in decoded, codec, _tags(root), names, visible_characters(text))


def visible_characters(document: str) -> int:
    """The characters a document of ``text`` bills: its HTML blocks (text with Chinese), markup characters left
    out."""
    return sum(len(_MARKUP_CHAR.sub("", block)) for block in parse_markup(document, "html").blocks)


def _tags(root: etree._Element) -> tuple[str, ...]:
    return tuple(str(element.tag) for element in root.iter(etree.Element))


def _metadata_labels(opf: etree._Element) -> list[etree._Element]:
    metadata = opf.find(f"{{{OPF_NS}}}metadata")
    if metadata is None:
        return []
    wanted = {f"{{{DC_NS}}}{name}" for name in TRANSLATED_METADATA}
    return [element for element in metadata.iter() if element.tag in wanted and not len(element)]


def _ncx_labels(ncx: etree._Element) -> list[etree._Element]:
    text = f"{{{NCX_NS}}}text"
    title = [element for child in ncx.iterchildren(f"{{{NCX_NS}}}docTitle") for element in child.iter(text)]
    labels = [element for label in ncx.iter(f"{{{NCX_NS}}}navLabel") for element in label.iter(text)]
    return [element for element in title + labels if not len(element)]


def labels_document(labels: Sequence[str]) -> str:
    """Plain-text labels as one small document for the HTML format: one ``<p>`` each, escaped."""
    return "<labels>" + "".join(f"<p>{html.escape(label, quote=False)}</p>" for label in labels) + "</labels>"


# --- rebuilding ---------------------------------------------------------------------------------------------------


def escape_translation(text: str, names: frozenset[str]) -> str:
    """The model's text in a translated document made XML: a bare ``&`` escaped, and a ``<`` that starts no tag
    named ``names`` (the source's tag names), so the model's own ``<`` (``1 < 2``, ``<Title>``); in a tag, a
    quoted value's ``<`` and bare ``&`` (a translated ``alt``). Comments, CDATA, processing instructions and the
    DOCTYPE stay as they are."""
    out: list[str] = []
    position = 0
    for found in _VERBATIM.finditer(text):
        out.append(_escape_text(text[position : found.start()], names))
        out.append(found.group())
        position = found.end()
    out.append(_escape_text(text[position:], names))
    return "".join(out)


def _escape_text(text: str, names: frozenset[str]) -> str:
    out: list[str] = []
    position = 0
    while (start := text.find("<", position)) >= 0:
        out.append(_BARE_AMPERSAND.sub("&amp;", text[position:start]))
        tag = _TAG.match(text, start)
        if tag is not None and tag.group(1) in names:
            out.append(_QUOTED.sub(lambda value: _escape_value(value.group()), tag.group()))
            position = tag.end()
        else:
            out.append("&lt;")
            position = start + 1
    out.append(_BARE_AMPERSAND.sub("&amp;", text[position:]))
    return "".join(out)


def _escape_value(quoted: str) -> str:
    return quoted[0] + _BARE_AMPERSAND.sub("&amp;", quoted[1:-1]).replace("<", "&lt;") + quoted[-1]


def _chapter_bytes(chapter: Chapter, translation: str) -> bytes:
    """A chapter's translation as the bytes of its entry: escaped, said to be English, checked."""
    text = escape_translation(translation, chapter.names)
    text = _HTML_START.sub(lambda tag: _CHINESE_LANG.sub(r"\1en\3", tag.group()), text, count=1)
    if chapter.crlf:
        text = text.replace("\n", "\r\n")
    data = text.encode(chapter.codec)
    try:
        root = parse_xml(data, chapter.entry)
    except ValueError as error:
        raise TranslatorError(f"the translation of {error}; nothing was written") from None
    if _tags(root) != chapter.tags:
        raise TranslatorError(
            f"the translation of {chapter.entry} does not have its source's elements in the same order; "
            "nothing was written"
        )
    return data


def _labels_of(translation: str, count: int) -> list[str]:
    """The labels of a translated labels document."""
    try:
        root = parse_xml(escape_translation(translation, LABEL_NAMES).encode("utf-8"), "the translated labels")
    except ValueError as error:
        raise TranslatorError(f"{error}; nothing was written") from None
    labels = ["".join(paragraph.itertext()) for paragraph in root]
    if len(labels) != count:
        raise TranslatorError(f"{count} navigation and title labels, {len(labels)} translations")
    return labels


def _set_text(element: etree._Element, english: str) -> None:
    source = element.text or ""
    lead = source[: len(source) - len(source.lstrip())]
    trail = source[len(source.rstrip()) :]
    element.text = lead + english.strip() + trail
    _english_lang(element)


def _english_lang(element: etree._Element) -> None:
    if (element.get(_XML_LANG) or "").lower().startswith("zh"):
        element.set(_XML_LANG, "en")


def _english_metadata(opf: etree._Element) -> None:
    """The package says the book is English: ``dc:language`` and the package's ``xml:lang`` naming Chinese."""
    _english_lang(opf)
    for language in opf.iter(f"{{{DC_NS}}}language"):
        if (language.text or "").strip().lower().startswith("zh"):
            language.text = "en"


def _xml_bytes(root: etree._Element, source: bytes) -> bytes:
    """A changed XML part written as UTF-8, its DOCTYPE kept, with an XML declaration when the source had one."""
    tree = root.getroottree()
    if not has_declaration(source):
        return bytes(etree.tostring(tree, encoding="UTF-8", xml_declaration=False))
    declared = _STANDALONE.search(source[:200])  # lxml reports an absent standalone as "no"
    standalone = None if declared is None else declared.group(1) == b"yes"
    return bytes(etree.tostring(tree, encoding="UTF-8", xml_declaration=True, standalone=standalone))


__all__ = ["MIMETYPE", "SEPARATOR", "EpubBook", "escape_translation", "read_epub", "visible_characters"]
