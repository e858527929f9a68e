"""Zip packages and XML parts: what every zip-based format (``.docx``, ``.pptx``, ``.xlsx``, ``.odt``, ``.epub``)
and every XML format (``.xliff``) reads and writes through, with one set of limits.

* ``open_package`` opens a zip archive and refuses, before anything is parsed, one that is not a zip or is
  damaged (an entry failing its checksum), one with more than ``MAX_ENTRIES`` entries, one that unpacks to more
  than ``MAX_UNPACKED_BYTES`` (a zip bomb), and one whose entries' names climb out of it (``../``, absolute);
* ``parse_xml`` parses one XML document as data: no DTD loaded, no entity expanded, no network, and a document that
  declares entities (a "billion laughs" or an external entity) or references one is refused;
* ``content_types`` reads an Office (OPC) package's ``[Content_Types].xml``: each part's content type;
* ``write_package`` writes the package again with some entries replaced: every other entry byte for byte, in the
  same order, with the same compression, dates and attributes (an EPUB's or ODF file's ``mimetype`` stays first
  and stored).

Messages say what the file is not and why, and what to send instead: ``refusal(kind, name, reason, hint)``.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lxml import etree

from handler.errors import InvalidRequestError

MAX_UNPACKED_BYTES = 512 * 1024 * 1024  # all entries together, unpacked
MAX_ENTRIES = 10_000  # entries in one archive
_CONTENT_TYPES_NS = "http://schemas.openxmlformats.org/package/2006/content-types"


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
    """An open zip archive's entries, read on demand (``read``, ``xml``) from one open archive."""

    name: str
    data: bytes
    entries: tuple[zipfile.ZipInfo, ...]
    archive: zipfile.ZipFile = field(repr=False, compare=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(info.filename for info in self.entries)

    def read(self, entry: str) -> bytes:
        return self.archive.read(entry)

    def xml(self, entry: str) -> etree._Element:
        """Entry ``entry`` parsed (``parse_xml``); ``ValueError`` when it cannot be."""
        return parse_xml(self.read(entry), entry)


def open_package(data: bytes, name: str, kind: str, hint: str) -> Package:
    """``data`` opened as a zip archive within the limits; ``refusal(kind, name, ..., hint)`` when it is not one,
    is damaged, or is over a limit (``InvalidRequestError``, HTTP 400)."""
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
    return Package(name, data, entries, zipfile.ZipFile(io.BytesIO(data)))


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
