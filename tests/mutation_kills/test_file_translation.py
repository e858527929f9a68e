"""Uploaded files: the output plan, unsafe keys, size limits, decoding messages and what ends up in the store.

The store is a dictionary behind the ``ObjectStore`` protocol (what S3Store and GcsStore offer the core); the
translations come from the shipped bundle (``tests/fuzz/shipped.py``).
"""

from __future__ import annotations

import codecs
import logging
import re
import time
from collections.abc import Mapping

import pytest

from handler.config import RuntimeConfig
from handler.errors import DeadlineExceededError, InvalidRequestError, RequestTooLargeError
from handler.formats import format_for
from handler.formats.encodings import decode_text
from handler.formats.plain_text import translate_text
from handler.service import TranslateOptions
from handler.storage.dispatch import handle_upload
from handler.storage.files import SelfTriggerError, UnsafeKeyError, check_key, plan_output, translate_object
from handler.storage.object_store import ObjectRef
from tests.fuzz.shipped import needs_shipped_bundle, shipped_service


class DictStore:
    scheme = "s3"

    def __init__(self, objects: dict[ObjectRef, bytes] | None = None) -> None:
        self.objects = dict(objects or {})
        self.metadata: dict[ObjectRef, dict[str, str]] = {}
        self.replaced_after_size: bytes | None = None

    def size(self, ref: ObjectRef) -> int:
        size = len(self.objects[ref])
        if self.replaced_after_size is not None:
            self.objects[ref] = self.replaced_after_size
        return size

    def read(self, ref: ObjectRef) -> bytes:
        return self.objects[ref]

    def write(self, ref: ObjectRef, data: bytes, metadata: Mapping[str, str], content_type: str = "text/plain") -> None:
        self.objects[ref] = data
        self.metadata[ref] = dict(metadata)


class SlowStore(DictStore):
    def read(self, ref: ObjectRef) -> bytes:
        time.sleep(0.3)  # past a deadline 0.2 s away
        return super().read(ref)


def ref(key: str, bucket: str = "in") -> ObjectRef:
    return ObjectRef("s3", bucket, key)


# --- the output plan ---------------------------------------------------------------------------------------


def test_the_output_goes_under_the_prefix_of_the_input_bucket_or_the_output_bucket() -> None:
    assert plan_output(ref("a/b.txt"), RuntimeConfig()) == ref("translated/a/b.txt")
    assert plan_output(ref("a/b.txt"), RuntimeConfig(output_bucket="out")) == ref("translated/a/b.txt", "out")
    assert plan_output(ref("b.txt"), RuntimeConfig(output_bucket="out", output_prefix="")) == ref("b.txt", "out")
    # another bucket: a key under the prefix is fine (it is not a translation of ours)
    assert plan_output(ref("translated/x.txt"), RuntimeConfig(output_bucket="out")) == ref(
        "translated/translated/x.txt", "out"
    )


def test_an_empty_prefix_on_the_input_bucket_is_a_self_trigger() -> None:
    with pytest.raises(SelfTriggerError) as caught:
        plan_output(ref("b.txt"), RuntimeConfig(output_prefix=""))
    message = str(caught.value)
    assert message.startswith("refusing to translate s3://in/b.txt: TRANSLATE_OUTPUT_PREFIX is empty")
    assert "Set TRANSLATE_OUTPUT_PREFIX (e.g. 'translated/') or TRANSLATE_OUTPUT_BUCKET" in message
    with pytest.raises(SelfTriggerError):
        plan_output(ref("b.txt"), RuntimeConfig(output_bucket="in", output_prefix=""))


def test_a_translation_we_wrote_is_not_translated_again() -> None:
    with pytest.raises(SelfTriggerError) as caught:
        plan_output(ref("translated/b.txt"), RuntimeConfig())
    assert str(caught.value).startswith(
        "refusing to translate s3://in/translated/b.txt: it is under the output prefix 'translated/' of the same bucket"
    )
    assert plan_output(ref("translatedx/b.txt"), RuntimeConfig()) == ref("translated/translatedx/b.txt")


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("", "it is empty"),
        ("a\x07b.txt", "it holds a control character"),
        ("/etc/passwd", "it starts with a path separator or a drive"),
        ("\\share\\x.txt", "it starts with a path separator or a drive"),
        ("C:/x.txt", "it starts with a path separator or a drive"),
        ("c:\\x.txt", "it starts with a path separator or a drive"),
        ("%2Fetc%2Fpasswd", "it starts with a path separator or a drive once decoded"),
        ("a/../b.txt", "it has a '.' or '..' path segment"),
        ("a/./b.txt", "it has a '.' or '..' path segment"),
        ("a\\..\\b.txt", "it has a '.' or '..' path segment"),
        ("a/%2E%2E/b.txt", "it has a '.' or '..' path segment once percent-decoded"),
        ("a/%252E%252E/b.txt", "it has a '.' or '..' path segment once percent-decoded"),
        ("a/%25252E%25252E/b.txt", "it has a '.' or '..' path segment once percent-decoded"),
    ],
)
def test_unsafe_keys_are_refused_saying_why(key: str, problem: str) -> None:
    with pytest.raises(UnsafeKeyError) as caught:
        check_key(ref(key))
    assert str(caught.value) == (
        f"refusing to translate s3://in/{key}: {problem}, so its output key could lead outside the output prefix "
        "wherever keys are read as paths (sync tools, file systems); rename the object"
    )


@pytest.mark.parametrize("key", ["a/b.txt", "a..b/c.txt", "..a/b", "a/.hidden", "CD:/x", "a/%2E%2Ex/b", "1:/x"])
def test_ordinary_keys_pass(key: str) -> None:
    check_key(ref(key))


def test_a_key_decoded_four_times_is_the_limit() -> None:
    # five levels of percent-encoding of "..": forms are key + 3 decodings, the fifth is not looked at
    check_key(ref("a/%2525252E%2525252E/b"))


# --- formats and decoding ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.html", "html"),
        ("A.HTM", "html"),
        ("x.xhtml", "html"),
        ("r.md", "markdown"),
        ("r.Markdown", "markdown"),
        ("notes.txt", "text"),
        ("notes.v2.md", "markdown"),
        ("page.md.html", "html"),
        ("README", "text"),
        ("dir.md/file", "text"),
        (".md", "markdown"),
    ],
)
def test_the_format_follows_the_suffix(name: str, fmt: str) -> None:
    assert format_for(name).name == fmt


def test_decoding_messages_name_the_file_and_the_problem() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        decode_text(codecs.BOM_UTF8 + b"\xff\xfe ok", "s3://in/x.txt")
    assert str(caught.value) == (
        "s3://in/x.txt starts with a UTF-8 byte-order mark but is not valid UTF-8 (byte 0); save it again as UTF-8"
    )
    with pytest.raises(InvalidRequestError) as caught:
        decode_text(b"ab\x00cd")
    assert str(caught.value).startswith("the file looks binary (it holds NUL bytes) or is UTF-16 without a byte-order")
    with pytest.raises(InvalidRequestError) as caught:
        decode_text(b"ok \x80\xff\xff")
    assert str(caught.value).startswith(
        "the file is not text in a supported encoding: not UTF-8 (invalid byte 0x80 at offset 3) and not GB18030"
    )
    with pytest.raises(InvalidRequestError) as caught:
        decode_text(("x" * 50 + "\x07\x07").encode(), "f")
    assert str(caught.value).startswith("f looks binary (2 control characters in 52); send plain text in UTF-8")
    assert decode_text(b"") == ("", "UTF-8")


# --- translating an object ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def service():  # type: ignore[no-untyped-def]
    return shipped_service()


@needs_shipped_bundle
def test_crlf_files_keep_crlf_and_lf_files_keep_lf(service) -> None:  # type: ignore[no-untyped-def]
    crlf = translate_text(service, "你好。\r\n\r\n谢谢。")
    lf = translate_text(service, "你好。\n\n谢谢。")
    assert "\r" not in lf and lf.count("\n") == 2
    assert crlf == lf.replace("\n", "\r\n")


@needs_shipped_bundle
def test_an_object_is_translated_into_its_output_with_metadata(service) -> None:  # type: ignore[no-untyped-def]
    source = ref("docs/问候 1.txt", "in bucket")
    text = "你好。"
    store = DictStore({source: codecs.BOM_UTF8 + text.encode()})
    result = translate_object(store, source, service, RuntimeConfig(output_bucket="out"))
    output = ObjectRef("s3", "out", "translated/docs/问候 1.txt")
    assert result.output == output and result.source == source
    assert result.encoding == "UTF-8 with BOM" and result.characters == len(text)
    written = store.objects[output]
    assert written.decode("utf-8") == translate_text(service, text) and result.bytes_written == len(written)
    info = service.info()
    assert store.metadata[output] == {
        "source-bucket": "in%20bucket",
        "source-key": "docs/%E9%97%AE%E5%80%99%201.txt",
        "source-encoding": "UTF-8 with BOM",
        "model": str(info["model"]).replace("/", "%2F").replace(" ", "%20"),
        "bundle-hash": str(info["bundle_hash"]),
    }
    assert 0 <= result.seconds < 60
    summary = handle_upload(store, source, service, RuntimeConfig(output_bucket="out"))
    assert summary == {
        "source": str(source),
        "status": "translated",
        "output": str(output),
        "encoding": "UTF-8 with BOM",
        "characters": len(text),
    }


@needs_shipped_bundle
def test_html_and_markdown_uploads_keep_their_markup(service) -> None:  # type: ignore[no-untyped-def]
    store = DictStore(
        {ref("page.html"): '<p title="你好">世界</p>'.encode(), ref("r.md"): "# 你好\n\n**世界**".encode()}
    )
    translate_object(store, ref("page.html"), service, RuntimeConfig())
    html = store.objects[ref("translated/page.html")].decode()
    assert re.fullmatch(r'<p title="[^"<>你好]+">[^<>世界]+</p>', html), html  # the attribute translated, tags kept
    translate_object(store, ref("r.md"), service, RuntimeConfig())
    markdown = store.objects[ref("translated/r.md")].decode()
    assert re.fullmatch(r"# [^#*\n]+\n\n\*\*[^*\n]+\*\*", markdown), markdown


@needs_shipped_bundle
def test_translate_text_passes_the_format_the_deadline_and_progress_on(service) -> None:  # type: ignore[no-untyped-def]
    html = translate_text(service, '<p title="你好">世界</p>', TranslateOptions(format="html"))
    assert html.startswith('<p title="') and html.endswith("</p>") and "你好" not in html
    seen: list[tuple[int, int]] = []
    translate_text(service, "你好。", progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1][0] == seen[-1][1] == len("你好。")
    with pytest.raises(DeadlineExceededError):
        translate_text(service, "你好。", deadline=time.monotonic() - 1)


@needs_shipped_bundle
def test_the_size_limit_allows_its_edge_and_nothing_is_written_past_it(service) -> None:  # type: ignore[no-untyped-def]
    source = ref("a.txt")
    data = "你好。".encode()
    store = DictStore({source: data})
    translate_object(store, source, service, RuntimeConfig(max_file_bytes=len(data)))
    store = DictStore({source: data})
    with pytest.raises(RequestTooLargeError) as caught:
        translate_object(store, source, service, RuntimeConfig(max_file_bytes=len(data) - 1))
    assert str(caught.value) == (
        f"s3://in/a.txt is {len(data)} bytes; the limit is {len(data) - 1} (TRANSLATE_MAX_FILE_BYTES); "
        "nothing was written"
    )
    assert list(store.objects) == [source]
    store = DictStore({source: data})
    store.replaced_after_size = data * 1000  # replaced between the size check and the read
    with pytest.raises(RequestTooLargeError, match=r"^s3://in/a.txt is 9,000 bytes; the limit is 9 "):
        translate_object(store, source, service, RuntimeConfig(max_file_bytes=len(data)))
    assert list(store.objects) == [source]


@needs_shipped_bundle
def test_a_deadline_that_passes_while_reading_stops_the_translation(service) -> None:  # type: ignore[no-untyped-def]
    source = ref("a.txt")
    store = SlowStore({source: "你好。".encode()})
    with pytest.raises(DeadlineExceededError):
        translate_object(store, source, service, RuntimeConfig(), deadline=time.monotonic() + 0.2)
    assert list(store.objects) == [source]
    with pytest.raises(DeadlineExceededError):
        handle_upload(store, source, service, RuntimeConfig(), deadline=time.monotonic() + 0.2)
    assert list(store.objects) == [source]


@needs_shipped_bundle
def test_a_passed_deadline_writes_nothing(service) -> None:  # type: ignore[no-untyped-def]
    source = ref("a.txt")
    store = DictStore({source: "你好。".encode()})
    with pytest.raises(DeadlineExceededError) as caught:
        translate_object(store, source, service, RuntimeConfig(), deadline=time.monotonic())
    assert str(caught.value) == "no time left to translate s3://in/a.txt (before reading it); nothing was written"
    assert list(store.objects) == [source]
    translate_object(store, source, service, RuntimeConfig(), deadline=time.monotonic() + 60)
    assert ref("translated/a.txt") in store.objects


@needs_shipped_bundle
def test_refused_uploads_are_reported_and_other_failures_raised(service) -> None:  # type: ignore[no-untyped-def]
    store = DictStore({ref("translated/a.txt"): b"x", ref("bin.txt"): b"\x00\x01"})
    summary = handle_upload(store, ref("translated/a.txt"), service, RuntimeConfig())
    assert summary["status"] == "refused" and summary["source"] == "s3://in/translated/a.txt"
    assert summary["reason"].startswith("refusing to translate s3://in/translated/a.txt: it is under the output")
    with pytest.raises(InvalidRequestError, match=r"^s3://in/bin.txt looks binary"):
        handle_upload(store, ref("bin.txt"), service, RuntimeConfig())
    assert len(store.objects) == 2


@needs_shipped_bundle
def test_each_outcome_is_logged_with_the_object(service, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    store = DictStore({ref("a.txt"): "你好。".encode(), ref("translated/b.txt"): b"x", ref("bin.txt"): b"\x00"})
    with caplog.at_level(logging.INFO, logger="handler.storage"):
        handle_upload(store, ref("a.txt"), service, RuntimeConfig())
        handle_upload(store, ref("translated/b.txt"), service, RuntimeConfig())
        with pytest.raises(InvalidRequestError):
            handle_upload(store, ref("bin.txt"), service, RuntimeConfig())
    pipeline = ("handler.storage.files", "handler.storage.dispatch")  # the translation, the event's outcome
    translated, refused, failed = (r for r in caplog.records if r.name in pipeline)
    size = len(store.objects[ref("translated/a.txt")])
    assert translated.levelno == logging.INFO
    assert re.fullmatch(
        rf"translated s3://in/a.txt \(UTF-8, 3 characters\) to s3://in/translated/a.txt \({size} bytes\) in \d+\.\d s",
        translated.getMessage(),
    ), translated.getMessage()
    assert refused.levelno == logging.ERROR
    assert refused.getMessage().startswith("refusing to translate s3://in/translated/b.txt: it is under the output")
    assert failed.levelno == logging.ERROR
    assert failed.getMessage().startswith(
        "could not translate s3://in/bin.txt, nothing was written: InvalidRequestError: s3://in/bin.txt looks binary"
    )


def test_marked_and_gb18030_files_name_the_file_when_they_look_binary() -> None:
    with pytest.raises(InvalidRequestError, match=r"^up.txt looks binary \(9 control characters in 10\)"):
        decode_text(codecs.BOM_UTF8 + b"a" + b"\x07" * 9, "up.txt")
    with pytest.raises(InvalidRequestError, match=r"^up.txt looks binary \(9 control characters in 10\)"):
        decode_text(b"\xb9\xfe" + b"\x07" * 9, "up.txt")  # not UTF-8, GB18030 "\u4e0d"-like + controls
