"""Fuzzing the decoders of untrusted input: HTTP JSON bodies, storage event records and uploaded files.

Properties: no exception other than the typed errors of ``handler.errors`` (and, on HTTP, never a 500: every
answer is JSON, an error answer says what was wrong); nothing lost (a decoded file re-encodes to its bytes;
every created object of an event is returned); a deadline per case guards against a hang.
"""

from __future__ import annotations

import codecs
import json
import unicodedata
from typing import Any
from urllib.parse import unquote_plus

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from handler.api.router import HttpApi, HttpRequest
from handler.coldstart import Startup
from handler.errors import InvalidRequestError
from handler.formats.encodings import decode_text
from handler.storage.events import s3_created_objects, storage_object
from handler.storage.object_store import ObjectRef
from tests.fuzz.settings import examples
from tests.fuzz.shipped import needs_shipped_bundle, shipped_config, shipped_service

json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(st.characters(exclude_categories=()))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)

# --- uploaded files ---------------------------------------------------------------------------------------
CODEC_BY_DESCRIPTION = {
    "UTF-8": (b"", "utf-8"),
    "GB18030": (b"", "gb18030"),
    "Big5": (b"", "big5hkscs"),
    "Big5-HKSCS": (b"", "big5hkscs"),
    "UTF-8 with BOM": (codecs.BOM_UTF8, "utf-8"),
    "UTF-16LE with BOM": (codecs.BOM_UTF16_LE, "utf-16-le"),
    "UTF-16BE with BOM": (codecs.BOM_UTF16_BE, "utf-16-be"),
    "UTF-32LE with BOM": (codecs.BOM_UTF32_LE, "utf-32-le"),
    "UTF-32BE with BOM": (codecs.BOM_UTF32_BE, "utf-32-be"),
}
BOMS = [codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, b""]
file_bytes = st.tuples(st.sampled_from(BOMS), st.binary(max_size=300)).map(b"".join)


def control_share(text: str) -> float:
    controls = sum(1 for char in text if char not in "\t\n\r\f\v" and unicodedata.category(char) == "Cc")
    return controls / len(text) if text else 0.0


@given(data=file_bytes)
@examples(200)
def test_any_bytes_decode_to_text_that_gives_them_back_or_are_refused(data: bytes) -> None:
    try:
        text, description = decode_text(data, "f.txt")
    except InvalidRequestError as error:
        assert str(error).startswith("f.txt ")
        return
    bom, codec = CODEC_BY_DESCRIPTION[description]
    if codec == "big5hkscs":  # Big5 maps a few characters twice (兀 is A461 and C94A): the text, not the bytes, returns
        assert text.encode(codec).decode(codec) == text
    else:
        assert bom + text.encode(codec) == data  # nothing lost, nothing invented
    assert "\x00" not in text and control_share(text) <= 0.01


plain_text = st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=200).filter(
    lambda text: not text.startswith("\ufeff")
)


@given(text=plain_text, encoding=st.sampled_from(sorted(CODEC_BY_DESCRIPTION)))
@examples(200)
def test_text_saved_in_any_supported_encoding_reads_back_the_same(text: str, encoding: str) -> None:
    bom, codec = CODEC_BY_DESCRIPTION[encoding]
    if codec == "gb18030" and (not text or text.isascii()):
        encoding = "UTF-8"  # GB18030 bytes that are also UTF-8 read as UTF-8, which is the same text
    try:
        data = bom + text.encode(codec)
    except UnicodeEncodeError:
        return
    if codec in ("gb18030", "big5hkscs"):
        # random characters are no Chinese text: GB18030 and Big5 are told apart by how common the characters
        # are (real texts: tests/runtime_text/test_encoding_detection.py), so noise may be refused or read as
        # the other encoding; what a reading says must still be true of the bytes
        try:
            decoded, description = decode_text(data)
        except InvalidRequestError as error:
            assert "encoding" in str(error)
            return
        assert CODEC_BY_DESCRIPTION[description][0] + decoded.encode(CODEC_BY_DESCRIPTION[description][1]) == data
        return
    try:
        decoded, description = decode_text(data)
    except InvalidRequestError as error:  # a few letters of two UTF-8 bytes may also read as common Chinese
        foreign = [char for char in text if not char.isascii()]
        assert codec == "utf-8" and len(foreign) <= 4 and all(char <= "\u07ff" for char in foreign), error
        assert "too little text to tell" in str(error)
        return
    assert decoded == text
    if codec != "gb18030":
        assert description == encoding


# --- storage events ---------------------------------------------------------------------------------------
names = st.text(st.characters(exclude_categories=()), max_size=12)
records = st.lists(
    st.fixed_dictionaries(
        {"eventSource": st.just("aws:s3"), "eventName": st.sampled_from(["ObjectCreated:Put", "ObjectRemoved:Delete"])},
        optional={"s3": json_values | st.fixed_dictionaries({"bucket": json_values, "object": json_values})},
    )
    | st.fixed_dictionaries(
        {
            "eventSource": st.just("aws:s3"),
            "eventName": st.just("ObjectCreated:Copy"),
            "s3": st.fixed_dictionaries(
                {"bucket": st.fixed_dictionaries({"name": names}), "object": st.fixed_dictionaries({"key": names})}
            ),
        }
    )
    | json_values,
    max_size=4,
)


@given(event=st.fixed_dictionaries({"Records": records}) | st.dictionaries(st.text(max_size=8), json_values))
@examples(200)
def test_any_s3_event_gives_its_created_objects_or_a_clear_error(event: dict[str, Any]) -> None:
    try:
        objects = s3_created_objects(event)
    except InvalidRequestError as error:
        assert str(error).startswith("S3 event")
        return
    created = [record for record in event["Records"] if str(record.get("eventName")).startswith("ObjectCreated:")]
    expected = [(r["s3"]["bucket"]["name"], unquote_plus(r["s3"]["object"]["key"])) for r in created]
    assert [(ref.bucket, ref.key) for ref in objects] == expected
    assert all(isinstance(ref, ObjectRef) and ref.bucket and ref.key for ref in objects)


@given(data=json_values | st.fixed_dictionaries({"bucket": json_values | names, "name": json_values | names}))
@examples(150)
def test_any_cloud_storage_event_data_gives_its_object_or_a_clear_error(data: Any) -> None:
    try:
        ref = storage_object(data)
    except InvalidRequestError as error:
        assert str(error).startswith("Cloud Storage event data")
        return
    assert (ref.scheme, ref.bucket, ref.key) == ("gs", data["bucket"], data["name"])


# --- HTTP JSON bodies -------------------------------------------------------------------------------------
MAX_CHARS, MAX_TEXTS = 40, 3


@pytest.fixture(scope="module")
def api() -> HttpApi:
    config = shipped_config(max_chars=MAX_CHARS, max_texts=MAX_TEXTS, beam_size=1)
    return HttpApi(Startup(config, shipped_service(max_chars=MAX_CHARS, max_texts=MAX_TEXTS, beam_size=1), None, 0.0))


OPTION_VALUES = {
    "beam_size": st.integers(-2, 10) | json_values,
    "length_penalty": st.floats(-1, 3) | json_values,
    "max_length_ratio": st.floats(0, 5) | json_values,
    "repetition_guard": st.booleans() | json_values,
    "format": st.sampled_from(["text", "html", "markdown", "xml"]) | json_values,
    "protect_spans": st.booleans() | json_values,
    "source": st.sampled_from(["auto", "zh-Hans", "zh-Hant", "zh-TW", "zh-HK", "fr"]) | json_values,
    "glossary": st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2) | json_values,
    "spans": st.booleans() | json_values,
}
short_texts = st.text(st.characters(exclude_categories=()), max_size=MAX_CHARS + 2) | st.sampled_from(
    ["你好，世界。", "我明天去北京。", "<b>你好</b>", " ", "", "你\ud800好", "\udfff"]
)
payloads = st.fixed_dictionaries(
    {},
    optional={
        "text": short_texts | json_values,
        "texts": st.lists(short_texts, max_size=MAX_TEXTS + 1) | json_values,
        **OPTION_VALUES,
        "unknown": json_values,
    },
)
VALID_OPTIONS = {
    "beam_size": st.integers(1, 2),
    "repetition_guard": st.booleans(),
    "format": st.sampled_from(["text", "html", "markdown"]),
    "protect_spans": st.booleans(),
    "source": st.sampled_from(["auto", "zh-Hant"]),
    "spans": st.booleans(),
}
likely_valid = st.fixed_dictionaries({"text": short_texts}, optional=VALID_OPTIONS) | st.fixed_dictionaries(
    {"texts": st.lists(short_texts, max_size=MAX_TEXTS + 1)}, optional=VALID_OPTIONS
)
bodies = (
    st.builds(
        lambda payload, escaped: json.dumps(payload, ensure_ascii=escaped).encode("utf-8", "surrogatepass"),
        payloads | likely_valid | likely_valid,
        st.booleans(),  # escaped: lone surrogates travel as "\ud800", which JSON allows
    )
    | json_values.map(lambda value: json.dumps(value).encode("utf-8"))
    | st.binary(max_size=200)
)
content_types = st.one_of(
    st.just("application/json"),
    st.just("application/json"),
    st.sampled_from(
        [
            "application/json; charset=utf-8",
            "application/problem+json",
            "application/json; charset=latin-1",
            "text/plain",
            "",
            "application/json; charset=",
            "multipart/form-data; boundary=x",
        ]
    ),
    st.text(max_size=30),
)


@needs_shipped_bundle
@given(body=bodies, content_type=content_types)
@examples(120)
def test_any_body_posted_to_translate_is_answered_without_a_500(api: HttpApi, body: bytes, content_type: str) -> None:
    headers = {"content-type": content_type} if content_type else {}
    response = api.handle(HttpRequest.create("POST", "/translate", headers, body))
    answer = json.loads(response.body)
    event(f"status {response.status}")
    assert response.status in (200, 400, 413, 415), (response.status, answer)
    form = content_type.lower().startswith(("multipart/form-data", "application/x-www-form-urlencoded"))
    if response.status != 200:
        if form and isinstance(answer["error"], str):  # a form is LibreTranslate's request: its error shape
            assert answer["error"]
        else:
            assert set(answer["error"]) >= {"code", "message"} and answer["error"]["message"]
        return
    if form:  # LibreTranslate's answer to a form that named q
        assert isinstance(answer["translatedText"], str | list)
        return
    payload = json.loads(body)
    if "texts" in payload:
        assert len(answer["translations"]) == len(payload["texts"])
        assert all(isinstance(t, str) for t in answer["translations"])
    else:
        assert isinstance(answer["translation"], str)
