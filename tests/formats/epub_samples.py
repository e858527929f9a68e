"""EPUB samples made with EbookLib (the library a user writes and reads e-books with in Python), and what a
translation must keep, read back with EbookLib and lxml (never ``handler.formats.epub``).

``sample_file()`` is an EPUB 3 book with an EPUB 2 ``toc.ncx`` as EbookLib writes it: a Chinese title, description
and author, CSS, a cover-like PNG and a font kept byte for byte, a nav document, and three chapters with the awkward
cases: a heading, a sentence with ``<b>`` and ``<em>`` inside it, a link to another chapter, a line break, an image
with a Chinese ``alt``, ``&amp;``, an ``epub:type`` attribute, an English paragraph, and a chapter without Chinese.
"""

from __future__ import annotations

import html
import io
import re
import struct
import zlib
from collections.abc import Sequence

from ebooklib import ITEM_DOCUMENT, ITEM_IMAGE, ITEM_NAVIGATION, epub
from lxml import etree

from tests.formats.inspection import Inspection

FORMAT = "epub"
SUFFIX = ".epub"

XHTML = "http://www.w3.org/1999/xhtml"
NCX = "http://www.daisy.org/z3986/2005/ncx/"
TEXT_ELEMENTS = ("title", "h1", "h2", "h3", "p", "li", "figcaption", "td", "th")
_SPACE = re.compile(r"\s+")

CHAPTER_ONE = (
    '<h1 epub:type="title">第一章 春天</h1>'
    "<p>我们在<b>北京</b>的<em>公园</em>里散步。</p>"
    '<p>请看<a href="chap_02.xhtml">下一章</a>。<br/>天气很好。</p>'
    '<p><img src="images/cover.png" alt="一张公园的照片"/></p>'
    "<p>Hello, world.</p>"
)
CHAPTER_TWO = '<h1>第二章 夏天</h1><p>他喜欢猫 &amp; 狗。</p><p><a href="chap_01.xhtml#top">返回第一章</a></p>'
CHAPTER_THREE = "<h1>Appendix</h1><p>No Chinese here: this chapter stays as it is.</p>"
CSS = b"body { font-family: 'Sample Serif', serif; }\nb { color: #a00; }\n"
FONT = bytes(range(256)) * 4  # stands for a font file: any bytes, kept as they are


def tiny_png() -> bytes:
    """A valid 2x2 PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * 2 for _ in range(2))
    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _book(title: str, chapters: Sequence[tuple[str, str, str]]) -> epub.EpubBook:
    """A book of ``(file name, title, body)`` chapters with a nav document, a toc.ncx and the spine in order."""
    book = epub.EpubBook()
    book.set_identifier("urn:uuid:0a1b2c3d-epub-sample")
    book.set_title(title)
    book.set_language("zh")
    book.add_author("鲁迅")
    style = epub.EpubItem(uid="style", file_name="style/main.css", media_type="text/css", content=CSS)
    book.add_item(style)
    items = []
    for file_name, chapter_title, body in chapters:
        item = epub.EpubHtml(title=chapter_title, file_name=file_name, lang="zh")
        item.content = body
        item.add_item(style)
        book.add_item(item)
        items.append(item)
    book.toc = [epub.Link(item.file_name, item.title, item.file_name.split(".")[0]) for item in items]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    return book


def _written(book: epub.EpubBook) -> bytes:
    out = io.BytesIO()
    epub.write_epub(out, book, {})
    return out.getvalue()


def sample_file() -> bytes:
    """The awkward cases (see the module's docstring)."""
    book = _book(
        "春天的故事",
        [
            ("chap_01.xhtml", "第一章 春天", CHAPTER_ONE),
            ("chap_02.xhtml", "第二章 夏天", CHAPTER_TWO),
            ("chap_03.xhtml", "Appendix", CHAPTER_THREE),
        ],
    )
    book.add_metadata("DC", "description", "一本关于春天和夏天的小书。")
    book.add_item(epub.EpubItem(uid="cover", file_name="images/cover.png", media_type="image/png", content=tiny_png()))
    book.add_item(epub.EpubItem(uid="font", file_name="fonts/sample.woff", media_type="font/woff", content=FONT))
    return _written(book)


def file_of(sentences: Sequence[str]) -> bytes:
    """A book holding ``sentences``: chapters of up to 20 paragraphs, each under a heading."""
    chapters = []
    for number, start in enumerate(range(0, len(sentences), 20), start=1):
        paragraphs = "".join(
            f"<p>{html.escape(sentence, quote=False)}</p>" for sentence in sentences[start : start + 20]
        )
        chapters.append((f"chap_{number:03d}.xhtml", f"第{number}章", f"<h1>第{number}章</h1>{paragraphs}"))
    return _written(_book("一本书", chapters))


def read_book(data: bytes) -> epub.EpubBook:
    return epub.read_epub(io.BytesIO(data), {"ignore_ncx": False})


def chapter_roots(book: epub.EpubBook) -> list[etree._Element]:
    """Each spine XHTML document parsed as XML (lxml, as a reading system does)."""
    roots = []
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is not None and item.get_type() in (ITEM_DOCUMENT, ITEM_NAVIGATION):
            roots.append(etree.fromstring(item.get_content()))
    return roots


def _visible(element: etree._Element) -> str:
    return _SPACE.sub(" ", "".join(element.itertext())).strip()


def _toc_titles(toc: Sequence[object]) -> list[str]:
    titles: list[str] = []
    for entry in toc:
        if isinstance(entry, tuple):
            section, children = entry
            titles.append(str(section.title))
            titles.extend(_toc_titles(children))
        else:
            titles.append(str(getattr(entry, "title", "")))
    return titles


def ncx_labels(book: epub.EpubBook) -> list[str]:
    """The EPUB 2 table of contents' title and labels (``docTitle`` and ``navLabel`` texts), read with lxml."""
    labels: list[str] = []
    for item in book.get_items():
        if item.media_type == "application/x-dtbncx+xml":
            ncx = etree.fromstring(item.get_content())
            for element in [*ncx.iter(f"{{{NCX}}}docTitle"), *ncx.iter(f"{{{NCX}}}navLabel")]:
                labels.extend(_visible(text) for text in element.iter(f"{{{NCX}}}text"))
    return labels


def inspect(data: bytes) -> Inspection:
    """The book's structure (chapters, spine, manifest, images, links, headings, paragraphs) and its visible texts:
    each chapter's text elements and image ``alt`` texts, the table of contents' labels (as EbookLib reads them,
    and the NCX's own), the title and the description."""
    book = read_book(data)
    roots = chapter_roots(book)

    def count(tag: str) -> int:
        return sum(1 for root in roots for _ in root.iter(f"{{{XHTML}}}{tag}"))

    structure = {
        "chapters": len(roots),
        "spine": len(book.spine),
        "manifest": len(list(book.get_items())),
        "images": len(list(book.get_items_of_type(ITEM_IMAGE))),
        "links": count("a"),
        "headings": sum(count(f"h{level}") for level in range(1, 7)),
        "paragraphs": count("p"),
        "line breaks": count("br"),
        "toc entries": len(_toc_titles(book.toc)),
    }
    texts = []
    for root in roots:
        for element in root.iter(*(f"{{{XHTML}}}{tag}" for tag in TEXT_ELEMENTS)):
            if _visible(element):
                texts.append(_visible(element))
        texts.extend(str(image.get("alt")) for image in root.iter(f"{{{XHTML}}}img") if image.get("alt"))
    texts.extend(_toc_titles(book.toc))
    texts.extend(ncx_labels(book))
    texts.extend(str(value) for value, _ in book.get_metadata("DC", "title"))
    texts.extend(str(value) for value, _ in book.get_metadata("DC", "description"))
    return Inspection(structure, texts)
