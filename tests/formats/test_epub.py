"""EPUB (``handler.formats.epub``): what is translated (chapters and the nav document through the HTML format, the
NCX labels, the title and description), what is kept byte for byte, the package still valid for EbookLib and lxml,
the fan-out cut only between documents, refusals; and the sample book through the shipped default model."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Mapping
from typing import Any, cast

import pytest
from lxml import etree

from handler.errors import InvalidRequestError, TranslatorError
from handler.formats import FileTranslator, content_type_for, format_for, packages, translate_file
from handler.formats.epub import EPUB
from handler.formats.epub_book import SEPARATOR, EpubBook, escape_translation
from handler.options import TranslateOptions
from handler.text.markup import parse_markup
from tests.formats import epub_samples
from tests.formats.epub_samples import XHTML, chapter_roots, inspect, read_book, sample_file
from tests.formats.inspection import assert_translated
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service

_HAN_RUN = re.compile(r"[\u3400-\u9fff，。：；！？（）、《》]+")
GLOSSARY = {
    "北京": "Beijing",
    "公园": "park",
    "下一章": "the next chapter",
    "第一章 春天": "Chapter One: Spring",
    "春天的故事": "A Story of Spring",
}


def fake_english(block: str) -> str:
    """A stand-in model: the glossary's words become their English, every other run of Chinese "en" words; markup
    characters stay where they were."""
    for chinese in sorted(GLOSSARY, key=len, reverse=True):
        block = block.replace(chinese, GLOSSARY[chinese])
    return _HAN_RUN.sub(lambda run: " ".join(["en"] * max(1, len(run.group()) // 2)), block)


class FakeService:
    """``translate_document`` as the service does it for a format (``handler.text.markup`` cuts the blocks and puts
    the markup back), with ``english`` for the model."""

    def __init__(self, english: Callable[[str], str] = fake_english) -> None:
        self.english = english
        self.calls: list[str] = []

    def translate_document(
        self,
        text: str,
        options: TranslateOptions | None = None,
        *,
        deadline: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> str:
        self.calls.append(text)
        document = parse_markup(text, (options or TranslateOptions()).format)
        if progress is not None:
            progress(len(text), len(text))
        return document.rebuild([self.english(block) for block in document.blocks])


def translated(data: bytes, service: FakeService | None = None) -> bytes:
    return translate_file(data, "book.epub", cast(Any, service or FakeService())).data


def entries(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def rewritten(data: bytes, changes: Mapping[str, bytes | None]) -> bytes:
    """``data`` with entries replaced (None: removed), added at the end when new."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            if info.filename in changes:
                content = changes[info.filename]
                if content is not None:
                    target.writestr(info, content)
            else:
                target.writestr(info, source.read(info))
        for name, content in changes.items():
            if name not in source.namelist() and content is not None:
                target.writestr(name, content)
    return out.getvalue()


def chapter(data: bytes, entry: str) -> etree._Element:
    return etree.fromstring(entries(data)[entry])


def _xpath(root: etree._Element, path: str) -> list[Any]:
    return cast(list[Any], root.xpath(path, namespaces={"h": XHTML}))


# --- reading ------------------------------------------------------------------------------------------------------


def test_the_format_is_registered_by_suffix() -> None:
    assert format_for("Book.EPUB") is EPUB
    assert content_type_for("book.epub") == "application/epub+zip"
    assert EPUB.binary and EPUB.service_format is None and EPUB.joins_from_source


def test_text_is_the_documents_to_translate_then_the_labels_joined_by_a_separator() -> None:
    book = EPUB.read(sample_file(), "book.epub")
    documents = book.text.split(SEPARATOR)
    # the spine's order (nav, chapter 1, chapter 2); chapter 3 has no Chinese; then the labels document
    assert [re.search(r"<title>(.*?)</title>", doc).group(1) for doc in documents[:3]] == [  # type: ignore[union-attr]
        "春天的故事",
        "第一章 春天",
        "第二章 夏天",
    ]
    assert documents[1] == entries(sample_file())["EPUB/chap_01.xhtml"].decode("utf-8")
    assert documents[3] == (
        "<labels><p>春天的故事</p><p>一本关于春天和夏天的小书。</p><p>春天的故事</p><p>第一章 春天</p>"
        "<p>第二章 夏天</p></labels>"
    )
    assert isinstance(book.parsed, EpubBook)


def test_characters_billed_are_the_visible_text_translated_not_the_markup() -> None:
    book = EPUB.read(sample_file(), "book.epub")
    chapter_one = "第一章 春天" * 2 + "我们在北京的公园里散步。" + "请看下一章。天气很好。" + "一张公园的照片"
    assert book.characters < len(book.text) / 4
    # title and heading, the sentence (b and em inside), the link's sentence (br inside), the image's alt
    parsed = cast(EpubBook, book.parsed)
    assert parsed.chapters[1].characters == len(chapter_one)
    labels = "春天的故事" + "一本关于春天和夏天的小书。" + "春天的故事" + "第一章 春天" + "第二章 夏天"
    assert book.characters == sum(chapter.characters for chapter in parsed.chapters) + len(labels)


# --- translating --------------------------------------------------------------------------------------------------


def test_a_translated_book_opens_in_ebooklib_with_its_structure_and_no_chinese_left() -> None:
    source = sample_file()
    result = translated(source)
    assert_translated(inspect, source, result)
    book = read_book(result)  # opens again
    assert [idref for idref, _ in book.spine] == [idref for idref, _ in read_book(source).spine]
    for root in chapter_roots(book):
        assert root.tag == f"{{{XHTML}}}html"


def test_formatting_links_and_images_stay_on_their_words() -> None:
    result = translated(sample_file())
    one = chapter(result, "EPUB/chap_01.xhtml")
    assert _xpath(one, "//h:b/text()") == ["Beijing"]
    assert _xpath(one, "//h:em/text()") == ["park"]
    assert [(a.get("href"), a.text) for a in _xpath(one, "//h:a")] == [("chap_02.xhtml", "the next chapter")]
    assert len(_xpath(one, "//h:p[h:a]/h:br")) == 1
    assert one.find(f".//{{{XHTML}}}h1").get("{http://www.idpf.org/2007/ops}type") == "title"  # type: ignore[union-attr]
    (image,) = _xpath(one, "//h:img")
    assert image.get("src") == "images/cover.png" and not re.search("[\u4e00-\u9fff]", image.get("alt"))
    assert _xpath(one, "//h:title/text()") == ["Chapter One: Spring"]
    assert _xpath(one, "//h:p[last()]/text()") == ["Hello, world."]  # no Chinese: as it was
    two = chapter(result, "EPUB/chap_02.xhtml")
    assert [a.get("href") for a in _xpath(two, "//h:a")] == ["chap_01.xhtml#top"]
    assert "&amp;" in entries(result)["EPUB/chap_02.xhtml"].decode()


def test_everything_else_is_kept_byte_for_byte_mimetype_first_and_stored() -> None:
    source = sample_file()
    result = translated(source)
    before, after = entries(source), entries(result)
    assert list(after) == list(before)
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"EPUB/content.opf", "EPUB/toc.ncx", "EPUB/nav.xhtml", "EPUB/chap_01.xhtml", "EPUB/chap_02.xhtml"}
    assert after["EPUB/images/cover.png"] == epub_samples.tiny_png()
    assert after["EPUB/style/main.css"] == epub_samples.CSS and after["EPUB/fonts/sample.woff"] == epub_samples.FONT
    with zipfile.ZipFile(io.BytesIO(result)) as archive:
        first = archive.infolist()[0]
        assert (first.filename, first.compress_type) == ("mimetype", zipfile.ZIP_STORED)
        assert archive.read(first) == b"application/epub+zip"


def test_the_package_says_english_and_keeps_its_ids_hrefs_and_names() -> None:
    source = sample_file()
    result = translated(source)
    book = read_book(result)
    assert [value for value, _ in book.get_metadata("DC", "language")] == ["en"]
    assert [value for value, _ in book.get_metadata("DC", "title")] == ["A Story of Spring"]
    assert [value for value, _ in book.get_metadata("DC", "creator")] == ["鲁迅"]  # a name: kept
    assert [value for value, _ in book.get_metadata("DC", "identifier")] == ["urn:uuid:0a1b2c3d-epub-sample"]
    original = read_book(source)
    assert [(item.id, item.file_name, item.media_type) for item in book.get_items()] == [
        (item.id, item.file_name, item.media_type) for item in original.get_items()
    ]
    one = chapter(result, "EPUB/chap_01.xhtml")
    assert one.get("lang") == "en" and one.get("{http://www.w3.org/XML/1998/namespace}lang") == "en"
    assert entries(result)["EPUB/chap_03.xhtml"] == entries(source)["EPUB/chap_03.xhtml"]


def test_the_navigation_is_translated_and_still_points_at_the_chapters() -> None:
    result = translated(sample_file())
    book = read_book(result)
    assert [link.title for link in book.toc][0] == "Chapter One: Spring"
    assert [link.href for link in book.toc] == ["chap_01.xhtml", "chap_02.xhtml", "chap_03.xhtml"]
    assert epub_samples.ncx_labels(book)[:2] == ["A Story of Spring", "Chapter One: Spring"]
    nav = chapter(result, "EPUB/nav.xhtml")
    assert [a.get("href") for a in _xpath(nav, "//h:a")] == ["chap_01.xhtml", "chap_02.xhtml", "chap_03.xhtml"]
    assert [a.text for a in _xpath(nav, "//h:a")][0] == "Chapter One: Spring"


def test_the_nav_document_is_translated_also_where_the_spine_leaves_it_out() -> None:
    source = sample_file()
    data = rewritten(source, {"EPUB/content.opf": _opf(source, '<itemref idref="nav"/>', "")})
    nav = chapter(translated(data), "EPUB/nav.xhtml")
    assert [a.text for a in _xpath(nav, "//h:a")][0] == "Chapter One: Spring"
    assert not re.search("[\u4e00-\u9fff]", "".join(nav.itertext()))


def test_an_epub_2_book_without_a_nav_document_has_its_ncx_and_chapters_translated() -> None:
    source = sample_file()
    opf = _opf(source, '<itemref idref="nav"/>', "").decode()
    opf = re.sub(r'<item href="nav.xhtml"[^>]*/>', "", opf).replace('version="3.0"', 'version="2.0"')
    data = rewritten(source, {"EPUB/content.opf": opf.encode(), "EPUB/nav.xhtml": None})
    result = translated(data)
    assert_translated(inspect, data, result)
    assert epub_samples.ncx_labels(read_book(result)) == [
        "A Story of Spring",
        "Chapter One: Spring",
        "en en",  # 第二章 夏天
        "Appendix",
    ]


def test_a_book_without_chinese_comes_back_as_it_was() -> None:
    english = epub_samples._written(epub_samples._book("A book", [("a.xhtml", "One", "<h1>One</h1><p>Text.</p>")]))
    service = FakeService()
    data = english
    source = EPUB.read(data, "a.epub")
    assert source.text == "" and source.characters == 0
    assert EPUB.translate(source, FileTranslator(cast(Any, service))) == data and not service.calls


def test_ampersands_and_angle_brackets_the_model_writes_are_escaped() -> None:
    model = "R&D <3 & 1 < 2 <Title> a<b"
    result = translated(sample_file(), FakeService(lambda block: _HAN_RUN.sub(model, block)))
    for root in chapter_roots(read_book(result))[:3]:
        assert model in "".join(root.itertext())
    one = chapter(result, "EPUB/chap_01.xhtml")
    assert [image.get("alt") for image in _xpath(one, "//h:img")] == [model]
    assert _xpath(one, "//h:b/text()") == [model]  # the source's own tags stay tags
    assert epub_samples.ncx_labels(read_book(result))[0] == model
    names = frozenset({"p", "img"})
    assert escape_translation('<!-- a & b --><p>x & y < z &amp; <q> <img alt="a<b & c"/></p>', names) == (
        '<!-- a & b --><p>x &amp; y &lt; z &amp; &lt;q> <img alt="a&lt;b &amp; c"/></p>'
    )


def test_a_translation_that_breaks_a_chapter_is_refused_not_written() -> None:
    def lose_closing_tags(block: str) -> str:
        return re.sub("[\U000f8000-\U000fffff]", "", fake_english(block))  # the model dropped every closing tag

    with pytest.raises(TranslatorError, match="the translation of EPUB/nav.xhtml is not well-formed XML"):
        translated(sample_file(), FakeService(lose_closing_tags))


def test_a_translation_that_adds_an_element_is_refused() -> None:
    with pytest.raises(TranslatorError, match="does not have its source's elements in the same order"):
        translated(sample_file(), FakeService(lambda block: _HAN_RUN.sub("<b>bold</b>", block)))


def test_a_utf16_chapter_with_crlf_line_endings_is_written_back_the_same_way() -> None:
    source = sample_file()
    xhtml = entries(source)["EPUB/chap_02.xhtml"].decode("utf-8")
    xhtml = xhtml.replace("encoding='utf-8'", "encoding='utf-16'").replace("\n", "\r\n")
    data = rewritten(source, {"EPUB/chap_02.xhtml": xhtml.encode("utf-16")})
    written = entries(translated(data))["EPUB/chap_02.xhtml"]
    assert written.startswith(b"\xff\xfe")
    text = written.decode("utf-16")
    assert "\r\n" in text and "\n" not in text.replace("\r\n", "")
    assert not re.search("[\u4e00-\u9fff]", "".join(etree.fromstring(written).itertext()))


# --- the fan-out --------------------------------------------------------------------------------------------------


def test_the_fan_out_cuts_only_between_documents_and_joins_to_the_whole_translation() -> None:
    sentences = [f"第{number}句：我们在公园里散步，天气很好。" for number in range(130)]
    data = epub_samples.file_of(sentences)
    source = EPUB.read(data, "big.epub")
    plan = EPUB.cut(source.text, 3000, "big.epub")
    assert plan is not None
    lead, parts = plan
    assert lead == "" and len(parts) > 2
    assert all(part.separator == SEPARATOR for part in parts[:-1]) and parts[-1].separator == ""
    documents = [document for part in parts for document in part.text.split(SEPARATOR)]
    assert len(documents) == len(source.text.split(SEPARATOR))
    assert all(document.startswith(("<?xml", "<labels>")) for document in documents)
    translator = FileTranslator(cast(Any, FakeService()))
    joined = lead + "".join(
        EPUB.translate_part(part.text, index, translator) + part.separator for index, part in enumerate(parts)
    )
    assembled = EPUB.join(joined, lambda: data, "big.epub")
    assert assembled == EPUB.translate(source, translator)
    assert_translated(inspect, data, assembled)


def test_progress_counts_over_the_documents() -> None:
    seen: list[tuple[int, int]] = []
    source = EPUB.read(sample_file(), "book.epub")
    EPUB.translate(source, FileTranslator(cast(Any, FakeService()), progress=lambda done, of: seen.append((done, of))))
    assert seen[-1] == (source.characters, source.characters) and len(seen) == 4  # one report a document
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


# --- refusals -----------------------------------------------------------------------------------------------------

XXE = b"""<?xml version="1.0"?>
<!DOCTYPE html [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head><body><p>&secret;</p></body></html>"""
LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE package [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata>&b;</metadata></package>"""
CONTAINER_WITHOUT_ROOTFILE = (
    b'<?xml version="1.0"?><container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0">'
    b"<rootfiles/></container>"
)


def _opf(source: bytes, old: str, new: str) -> bytes:
    opf = entries(source)["EPUB/content.opf"].decode()
    assert old in opf
    return opf.replace(old, new).encode()


def _damaged(data: bytes, entry: str) -> bytes:
    """``data`` with a byte of ``entry``'s compressed data changed (its checksum then fails)."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo(entry)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra) + 5
    return data[:start] + bytes([data[start] ^ 0xFF]) + data[start + 1 :]


def _refusals() -> dict[str, tuple[bytes, str]]:
    source = sample_file()
    return {
        "not a zip": (b"%PDF-1.7 not an e-book", "is not a zip archive"),
        "truncated": (source[: len(source) // 2], "is not a zip archive"),
        "damaged": (_damaged(source, "EPUB/chap_01.xhtml"), "damaged zip archive"),
        "another zip": (rewritten(source, {"mimetype": b"application/vnd.oasis.opendocument.text"}), "mimetype"),
        "no container": (rewritten(source, {"META-INF/container.xml": None}), "has no META-INF/container.xml"),
        "no rootfile": (rewritten(source, {"META-INF/container.xml": CONTAINER_WITHOUT_ROOTFILE}), "names no package"),
        "rootfile missing": (rewritten(source, {"EPUB/content.opf": None}), "lacks its package document"),
        "opf not XML": (rewritten(source, {"EPUB/content.opf": b"<package><manifest>"}), "not well-formed XML"),
        "opf without spine": (
            rewritten(
                source,
                {"EPUB/content.opf": _opf(source, '<spine toc="ncx">', "<spinx>").replace(b"</spine>", b"</spinx>")},
            ),
            "without a manifest and a spine",
        ),
        "spine item unlisted": (
            rewritten(source, {"EPUB/content.opf": _opf(source, 'idref="chapter_1"', 'idref="missing"')}),
            "spine item 'missing' that its manifest does not list",
        ),
        "spine item missing": (rewritten(source, {"EPUB/chap_02.xhtml": None}), "lacks 'EPUB/chap_02.xhtml'"),
        "external entity": (rewritten(source, {"EPUB/chap_01.xhtml": XXE}), "declares XML entities"),
        "entity expansion": (rewritten(source, {"EPUB/content.opf": LAUGHS}), "declares XML entities"),
        "undefined entity": (
            rewritten(
                source, {"EPUB/chap_01.xhtml": entries(source)["EPUB/chap_01.xhtml"].replace(b"</h1>", b"&nbsp;</h1>")}
            ),
            "not well-formed XML",
        ),
        "not utf-8": (
            rewritten(
                source,
                {
                    "EPUB/chap_02.xhtml": entries(source)["EPUB/chap_02.xhtml"]
                    .decode()
                    .replace("utf-8", "gb18030")
                    .encode("gb18030")
                },
            ),
            "in gb18030",
        ),
        "encrypted": (
            rewritten(
                source,
                {
                    "META-INF/encryption.xml": b'<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
                    b'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:CipherData>'
                    b'<enc:CipherReference URI="EPUB/chap_01.xhtml"/></enc:CipherData></enc:EncryptedData>'
                    b"</encryption>"
                },
            ),
            "encrypted part 'EPUB/chap_01.xhtml' \\(DRM\\)",
        ),
    }


@pytest.mark.parametrize("case", list(_refusals()))
def test_what_is_not_a_readable_epub_is_refused_saying_why(case: str) -> None:
    data, reason = _refusals()[case]
    with pytest.raises(InvalidRequestError, match=reason) as refused:
        translated(data)
    message = str(refused.value)
    assert message.startswith("not a valid EPUB e-book: book.epub ")
    assert "; send " in message or "must be" in message or "EPUB content documents are" in message


def test_an_archive_over_the_zip_limits_is_refused_before_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packages, "MAX_ENTRIES", 5)
    with pytest.raises(InvalidRequestError, match="has 11 zip entries; at most 5 are read from a valid EPUB e-book"):
        translated(sample_file())
    monkeypatch.setattr(packages, "MAX_ENTRIES", 10_000)
    monkeypatch.setattr(packages, "MAX_UNPACKED_BYTES", 1_000)
    with pytest.raises(InvalidRequestError, match="unpacks to .* bytes; at most 1,000"):
        translated(sample_file())


# --- the shipped model --------------------------------------------------------------------------------------------


@needs_shipped_bundle
def test_the_sample_book_through_the_shipped_model() -> None:
    source = sample_file()
    result = translate_file(source, "x.epub", shipped_service())
    assert result.content_type == "application/epub+zip"
    assert_translated(inspect, source, result.data)
    one = chapter(result.data, "EPUB/chap_01.xhtml")
    assert len(_xpath(one, "//h:b")) == 1 and len(_xpath(one, "//h:em")) == 1
    assert _xpath(one, "//h:a/@href") == ["chap_02.xhtml"]
    assert entries(result.data)["EPUB/images/cover.png"] == epub_samples.tiny_png()
