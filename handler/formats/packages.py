"""Zip packages and XML parts: what every zip-based format (``.docx``, ``.pptx``, ``.xlsx``, ``.odt``, ``.epub``)
and every XML format (``.xliff``) reads and writes through, with one set of limits.

* ``open_package`` opens a zip archive and refuses, before anything is parsed, one that is not a zip or is
  damaged (an entry failing its checksum), one with more than ``MAX_ENTRIES`` entries, one that unpacks to more
  than ``MAX_UNPACKED_BYTES`` (a zip bomb), and one whose entries' names climb out of it (``../``, absolute);
* ``Package.part`` (and ``xml``) unpacks one XML part counted against what one file's XML may cost
  (``XML_BUDGET``, below), refusing it before lxml builds a tree of it, then parses it with ``parse_xml``;
* ``parse_xml`` parses one XML document as data: no DTD loaded, no entity expanded, no network, and a document that
  declares entities (a "billion laughs" or an external entity) or references one is refused;
* ``content_types`` reads an Office (OPC) package's ``[Content_Types].xml``: each part's content type;
* ``write_package`` writes the package again with some entries replaced: every other entry byte for byte, in the
  same order, with the same compression, dates and attributes (an EPUB's or ODF file's ``mimetype`` stays first
  and stored).

Messages say what the file is not and why, and what to send instead: ``refusal(kind, name, reason, hint)``.

**What a file's XML may cost** (``XML_BUDGET``: bytes, and nodes, i.e. elements and attributes, of one part alone or
all the parts one file is read from together; ``XmlMeter`` counts them). The archive's limits are not enough: lxml's
tree costs about 120 bytes an element and 200 an attribute, and a read ``.docx`` about 360 bytes a node in all
(measured here), so a part of ``<w:p/>`` costs 20 to 60 times its size, and its archive is 500 times smaller again:
a 128 KB ``.docx`` of 10 million empty paragraphs took its reader to a 3 GB peak, far within ``MAX_UNPACKED_BYTES``.
Counting is cheap (``bytes.count`` on each unpacked chunk, no tree) and errs on one side only: every element starts
with a ``<`` that is not ``</``, ``<!`` or ``<?``, and every attribute (and namespace declaration) has one ``=``
outside its value; a ``<`` or ``=`` in a comment, CDATA or text counts one too many, never too few. Reading stops at
the chunk that takes the count over, so a refused part is never held whole.

The numbers follow the characters a file may hold: a file is at most ``TRANSLATE_MAX_FILE_BYTES`` (2,000,000 bytes
by default), so its text is at most about 2,000,000 characters (``FILE_CHARACTERS``). Its XML may have
``NODES_PER_CHARACTER`` node and ``BYTES_PER_CHARACTER`` bytes per such character: 2,000,000 nodes and 64,000,000
bytes. Chinese prose in markup as Word writes it (revision ids, fonts and sizes on every run) measured 0.35 nodes a
character, and a 2 MB ``.docx`` of it holds about 1.4 million characters: half a million nodes, a quarter of the
budget. Tables are denser (about 20 nodes a cell): a Word table of more than about 95,000 cells is refused. A
``.docx`` just within the budget (1.95 million nodes in its table) read in 3.6 s at a 741 MB peak. The budget does
not follow a deployment's own ``TRANSLATE_MAX_FILE_BYTES``: what it protects is the worker's memory, which a larger
file limit does not enlarge.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from lxml import etree

from handler.config import RuntimeConfig
from handler.errors import InvalidRequestError

MAX_UNPACKED_BYTES = 512 * 1024 * 1024  # all entries together, unpacked
MAX_ENTRIES = 10_000  # entries in one archive
_CONTENT_TYPES_NS = "http://schemas.openxmlformats.org/package/2006/content-types"

# what a file's XML may cost (the module's docstring)
FILE_CHARACTERS = RuntimeConfig.max_file_bytes  # the default file limit: a text file under it holds this many at most
NODES_PER_CHARACTER = 1
BYTES_PER_CHARACTER = 32
CHUNK_BYTES = 1 << 20  # what is unpacked at a time before it is counted
_BYTES, _NODES = "bytes", "elements and attributes"  # what is counted, as a refusal names it
_NOT_ELEMENTS = (b"</", b"<!", b"<?")  # a "<" that starts an end tag, a comment, CDATA, a DOCTYPE or an instruction


@dataclass(frozen=True)
class XmlBudget:
    """What one file's XML may cost: ``max_bytes`` unpacked and ``max_nodes`` (elements and attributes), its parts
    together."""

    max_bytes: int
    max_nodes: int

    @classmethod
    def for_characters(cls, characters: int) -> XmlBudget:
        return cls(BYTES_PER_CHARACTER * characters, NODES_PER_CHARACTER * characters)


XML_BUDGET = XmlBudget.for_characters(FILE_CHARACTERS)


class XmlTooLargeError(InvalidRequestError):
    """A file whose XML is over its ``XmlBudget`` (HTTP 400, as every file that cannot be read)."""

    code = "invalid_request"


def count_nodes(chunk: bytes, before: bytes = b"") -> int:
    """The elements and attributes ``chunk`` starts (an upper bound), ``before`` being the byte that precedes it (so
    that a ``</`` split between two chunks is counted once)."""
    joined = before[-1:] + chunk
    return chunk.count(b"<") + chunk.count(b"=") - sum(joined.count(pattern) for pattern in _NOT_ELEMENTS)


@dataclass
class XmlMeter:
    """What one file's XML has cost so far (``counted``), against its ``budget``, and its largest part by each
    measure (a refusal names it); ``name`` and ``kind`` (``Word .docx document``) say which file."""

    name: str
    kind: str
    budget: XmlBudget = XML_BUDGET
    bytes_read: int = 0
    nodes_read: int = 0
    largest_bytes: tuple[int, str] = (0, "")
    largest_nodes: tuple[int, str] = (0, "")

    def counted(self, entry: str | None, size: int, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """``chunks`` of the part ``entry`` (None: the file itself is the XML) of ``size`` bytes, each counted before
        it is handed on; ``XmlTooLargeError`` before the first when ``size`` is over what is left of the budget, and
        at the first that takes the elements and attributes over."""
        part = entry or self.name
        if self.bytes_read + size > self.budget.max_bytes:
            raise self._refusal(entry, _BYTES, size, max(self.largest_bytes, (size, part)))
        self.bytes_read += size
        self.largest_bytes = max(self.largest_bytes, (size, part))
        nodes = 0
        before = b""
        chunks = iter(chunks)
        for chunk in chunks:
            found = count_nodes(chunk, before)
            nodes += found
            self.nodes_read += found
            if self.nodes_read > self.budget.max_nodes:
                nodes = self._count_on(nodes, chunk, chunks)
                raise self._refusal(entry, _NODES, nodes, max(self.largest_nodes, (nodes, part)))
            yield chunk
            before = chunk
        self.largest_nodes = max(self.largest_nodes, (nodes, part))

    def _count_on(self, nodes: int, before: bytes, chunks: Iterator[bytes]) -> int:
        """A refused part's nodes counted on (its chunks not kept) until they alone are over the budget or it ends:
        whether the part alone is too large, or the parts together, is what the refusal tells."""
        while nodes <= self.budget.max_nodes:
            chunk = next(chunks, None)
            if chunk is None:
                break
            nodes += count_nodes(chunk, before)
            before = chunk
        return nodes

    def _refusal(self, entry: str | None, unit: str, alone: int, largest: tuple[int, str]) -> XmlTooLargeError:
        """``entry`` (None: the file) has ``alone`` of ``unit``; ``largest``: the parts' largest, this one included."""
        maximum = self.budget.max_bytes if unit == _BYTES else self.budget.max_nodes
        # nodes are counted up to the budget and no further: how many more there are is not known
        amount = f"{alone:,} {unit}" if unit == _BYTES else f"more than {maximum:,} {unit}"
        if entry is None:
            found = f"{self.name} has {amount}; a {self.kind} may have at most {maximum:,} {unit}"
        else:
            if alone > maximum:
                what = f"its XML part {entry} has {amount}"
            else:
                what = (
                    f"its XML parts have more than {maximum:,} {unit} together, {largest[1]} the most ({largest[0]:,})"
                )
            found = (
                f"{self.name}: {what}; a {self.kind} may have at most {maximum:,} {unit} in all its XML parts together"
            )
        return XmlTooLargeError(
            f"{found}, so that reading it stays within the worker's memory: split it into smaller files"
        )


def refusal(kind: str, name: str, reason: str, hint: str) -> InvalidRequestError:
    """``InvalidRequestError`` "not a {kind}: {name} {reason}; {hint}" (HTTP 400)."""
    return InvalidRequestError(f"not a {kind}: {name} {reason}; {hint}")


def xml_parser() -> etree.XMLParser:
    """The one parser for a file's XML: no entities resolved, no DTD loaded, no network, blank text kept."""
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)


def parse_xml(raw: bytes, what: str) -> etree._Element:
    """``raw`` parsed as data; ``ValueError`` naming ``what`` when it is not well-formed XML, declares entities or
    references one (the caller turns it into its format's refusal)."""
    try:
        root = etree.fromstring(raw, xml_parser())
    except etree.XMLSyntaxError as error:
        raise ValueError(f"{what} is not well-formed XML ({error})") from None
    tree = root.getroottree()
    dtd = tree.docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        raise ValueError(f"{what} declares XML entities, which are not read (entity expansion, external files)")
    if any(True for _ in root.iter(etree.Entity)):
        raise ValueError(f"{what} references an XML entity, which is not read")
    return root


def has_declaration(raw: bytes) -> bool:
    """Whether an XML document starts with an XML declaration (its translation then has one too)."""
    return raw.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<?xml")


def serialize(root: etree._Element, *, declaration: bool) -> bytes:
    """``root`` written as UTF-8, with an XML declaration (its ``standalone`` as the source's) when the source had
    one."""
    if not declaration:
        return bytes(etree.tostring(root, encoding="UTF-8", xml_declaration=False))
    standalone = root.getroottree().docinfo.standalone
    return bytes(etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=standalone))


@dataclass(frozen=True)
class Package:
    """An open zip archive's entries, read on demand (``read``, ``part``, ``xml``) from one open archive; its XML parts
    counted by one ``meter`` (``XmlMeter``) however many are read (a part read twice counts twice)."""

    name: str
    data: bytes
    entries: tuple[zipfile.ZipInfo, ...]
    archive: zipfile.ZipFile = field(repr=False, compare=False)
    meter: XmlMeter = field(repr=False, compare=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(info.filename for info in self.entries)

    def read(self, entry: str) -> bytes:
        return self.archive.read(entry)

    def part(self, entry: str) -> tuple[bytes, etree._Element]:
        """Entry ``entry``'s bytes and root: unpacked as counted against the file's XML budget
        (``XmlTooLargeError``, HTTP 400, naming the part and the limit, before a tree is built), then parsed
        (``parse_xml``; ``ValueError`` when it cannot be)."""
        raw = b"".join(self._counted(entry, self.meter))
        return raw, parse_xml(raw, entry)

    def xml(self, entry: str) -> etree._Element:
        """Entry ``entry`` parsed within the budget (``part``); ``ValueError`` when it cannot be."""
        return self.part(entry)[1]

    def measure(self, entries: Iterable[str]) -> None:
        """``entries`` counted against a budget of their own and not kept: for a library that parses them with its
        own parser (python-docx), whose trees are gone before ``part`` builds this module's."""
        meter = XmlMeter(self.name, self.meter.kind, self.meter.budget)
        for entry in entries:
            for _chunk in self._counted(entry, meter):
                pass

    def _counted(self, entry: str, meter: XmlMeter) -> Iterator[bytes]:
        info = self.archive.getinfo(entry)
        with self.archive.open(info) as stream:
            yield from meter.counted(entry, info.file_size, iter(lambda: stream.read(CHUNK_BYTES), b""))


def open_package(data: bytes, name: str, kind: str, hint: str) -> Package:
    """``data`` opened as a zip archive within the limits; ``refusal(kind, name, ..., hint)`` when it is not one,
    is damaged, or is over a limit (``InvalidRequestError``, HTTP 400). Its XML parts are counted as they are read
    (``Package.part``)."""
    if not isinstance(data, bytes | bytearray):
        raise InvalidRequestError(f"{name}: a {kind} is bytes; got {type(data).__name__}")
    data = bytes(data)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise refusal(kind, name, "is not a zip archive", hint) from None
    except Exception as error:  # truncated, or an archive zipfile cannot read
        raise refusal(kind, name, f"is a damaged zip archive ({error})", hint) from None
    with archive:
        entries = tuple(archive.infolist())
        if len(entries) > MAX_ENTRIES:
            raise InvalidRequestError(
                f"{name} has {len(entries):,} zip entries; at most {MAX_ENTRIES:,} are read from a {kind}"
            )
        unpacked = sum(info.file_size for info in entries)
        if unpacked > MAX_UNPACKED_BYTES:
            raise InvalidRequestError(
                f"{name} unpacks to {unpacked:,} bytes; at most {MAX_UNPACKED_BYTES:,} are read from a {kind}"
            )
        for info in entries:
            normal = posixpath.normpath(info.filename)
            if info.filename.startswith(("/", "\\")) or normal == ".." or normal.startswith("../"):
                raise refusal(kind, name, f"has an entry {info.filename!r} outside the archive", hint)
        try:
            bad = archive.testzip()
        except Exception as error:  # an entry zipfile cannot decompress
            raise refusal(kind, name, f"is a damaged zip archive ({error})", hint) from None
        if bad is not None:
            raise refusal(kind, name, f"is a damaged zip archive (entry {bad} fails its checksum)", hint)
    return Package(name, data, entries, zipfile.ZipFile(io.BytesIO(data)), XmlMeter(name, kind))


def content_types(package: Package) -> dict[str, str]:
    """Each entry's content type by an Office (OPC) package's ``[Content_Types].xml`` (an override for the part,
    else the default for its extension); entries with neither are left out. ``ValueError`` when the package has
    no readable ``[Content_Types].xml``."""
    if "[Content_Types].xml" not in package.names:
        raise ValueError("has no [Content_Types].xml (every Office file has one)")
    root = package.xml("[Content_Types].xml")
    defaults: dict[str, str] = {}
    overrides: dict[str, str] = {}
    for element in root:
        if element.tag == f"{{{_CONTENT_TYPES_NS}}}Default":
            defaults[(element.get("Extension") or "").lower()] = element.get("ContentType") or ""
        elif element.tag == f"{{{_CONTENT_TYPES_NS}}}Override":
            overrides[(element.get("PartName") or "").lstrip("/")] = element.get("ContentType") or ""
    found: dict[str, str] = {}
    for entry in package.names:
        kind = overrides.get(entry) or defaults.get(posixpath.splitext(entry)[1].lstrip(".").lower())
        if kind:
            found[entry] = kind
    return found


def write_package(data: bytes, entries: Sequence[zipfile.ZipInfo], changed: Mapping[str, bytes]) -> bytes:
    """The archive ``data`` written again with the entries in ``changed`` replaced, every other entry byte for byte,
    all in the same order with the same compression, dates and attributes."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in entries:
            content = changed.get(info.filename)
            if content is None:
                content = source.read(info)
            copy = zipfile.ZipInfo(info.filename, info.date_time)
            copy.compress_type = info.compress_type
            copy.external_attr = info.external_attr
            copy.create_system = info.create_system
            copy.comment = info.comment
            copy.extra = info.extra
            target.writestr(copy, content)
        target.comment = source.comment
    return out.getvalue()
