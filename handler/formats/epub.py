"""EPUB (``.epub``) on the ``FileFormat`` interface: the book read by ``handler.formats.epub_book`` (imported on the
first ``.epub``, so that a cold start that never sees one does not load it and lxml), each document translated as
HTML on its own, the fan-out cutting only between documents and joining by reading the source again. What is
translated and kept: ``handler.formats.epub_book``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from handler.formats.base import FileTranslator, SourceFile
from handler.text.parts import Part, plan_parts_at

EPUB_CONTENT_TYPE = "application/epub+zip"  # the package's own mimetype (``epub_book.MIMETYPE``)
EPUB_ENCODING = "EPUB .epub (binary)"  # the source-encoding description of an .epub


class Epub:
    """EPUB: read into an ``EpubBook``, documents translated as HTML one by one, cut only between documents, joined
    by reading the source again."""

    name = "epub"
    suffixes = (".epub",)
    content_type = EPUB_CONTENT_TYPE
    service_format = None
    binary = True
    joins_from_source = True

    def read(self, data: bytes, name: str, encoding: str | None = None) -> SourceFile:
        """An EPUB says its own encoding: ``encoding`` is not needed and not used."""
        from handler.formats.epub_book import read_epub

        book = read_epub(data, name)
        return SourceFile(name, data, book.text, EPUB_ENCODING, book.characters, book)

    def translate(self, file: SourceFile, translator: FileTranslator) -> bytes:
        from handler.formats.epub_book import SEPARATOR, EpubBook, read_epub

        book = file.parsed if isinstance(file.parsed, EpubBook) else read_epub(file.data, file.name)
        text = book.text
        return book.rebuild(self.translate_part(text, 0, translator).split(SEPARATOR) if text else [])

    def cut(self, text: str, max_chars: int, name: str) -> tuple[str, list[Part]] | None:
        from handler.formats.epub_book import SEPARATOR

        cuts = [(at, at + 1) for at, char in enumerate(text) if char == SEPARATOR]
        return plan_parts_at(text, max_chars, cuts)

    def translate_part(self, text: str, index: int, translator: FileTranslator) -> str:
        """Each document of the part translated as HTML on its own (a book's markup is over what one document's
        markup characters number), progress reported over the part in the characters it bills."""
        from handler.formats.epub_book import SEPARATOR, visible_characters

        documents = text.split(SEPARATOR)
        sizes = [visible_characters(document) for document in documents] if translator.progress else []
        out: list[str] = []
        for number, document in enumerate(documents):
            document_translator = translator
            if sizes:
                document_translator = _documents_translator(translator, sum(sizes[:number]), sizes[number], sum(sizes))
            out.append(document_translator.text(document, "html"))
        return SEPARATOR.join(out)

    def join(self, translation: str, source: Callable[[], bytes], name: str) -> bytes:
        from handler.formats.epub_book import SEPARATOR, read_epub

        book = read_epub(source(), name)
        return book.rebuild(translation.split(SEPARATOR) if book.text else [])


def _documents_translator(translator: FileTranslator, before: int, size: int, total: int) -> FileTranslator:
    """``translator`` for one document of ``size`` characters after ``before`` of ``total``: its progress reported
    as the part's."""
    progress = translator.progress
    assert progress is not None

    def report(done: int, of: int) -> None:
        progress(before + (size * done // of if of else size), total)

    return replace(translator, progress=report)


EPUB = Epub()
