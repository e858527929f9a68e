"""Hostile bodies on every HTTP adapter: none is answered 5xx; each is a 4xx in its API's error shape whose message
says what was wrong and what is allowed (issue 25: "no 5xx from any body").

One class per test: nesting depth, size, number forms, text encodings, content types and codings, and each drop-in
API's body types (JSON objects, form fields, multipart, query strings), through every adapter of ``conftest``
(functions-framework and the standard-library server on loopback, API Gateway v1 / v2 and Function URL events into
the real ``lambda_handler``, the awslambdaric process); what only a transport can carry (a Content-Length that is
not a number, a chunked body) goes over a raw socket to the servers that read bodies themselves. The error shapes:
this API's ``{"error": {"code", "message"}}``, DeepL's ``{"message"}``, LibreTranslate's ``{"error": "..."}``.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
import socket
from typing import Any

import pytest

from handler.api.messages import MAX_INTEGER_DIGITS, MAX_JSON_DEPTH
from handler.api.router import HttpApi
from handler.coldstart import Startup
from tests.adapters.conftest import MAX_CHARS, HttpClient, Reply

JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
OWN, DEEPL, LIBRE = "own", "deepl", "libretranslate"
# a valid request of each API, into which each case puts one hostile part
VALID = {
    OWN: ("/translate", '"text": "你好"'),
    DEEPL: ("/v2/translate", '"text": ["你好"], "target_lang": "EN-US"'),
    LIBRE: ("/translate", '"q": "你好", "source": "zh", "target": "en"'),
}
APIS = (OWN, DEEPL, LIBRE)


def refusal(reply: Reply, api: str) -> tuple[int, str]:
    """The status and message of a refusal in ``api``'s own error shape (which it must have)."""
    assert reply.status < 500, (reply.status, reply.body[:400])
    assert reply.headers["content-type"].startswith("application/json"), reply.headers
    answer = json.loads(reply.body)  # valid JSON even when the message quotes a lone surrogate
    if api == OWN:
        assert set(answer) == {"error"} and set(answer["error"]) == {"code", "message"}, answer
        return reply.status, answer["error"]["message"]
    if api == DEEPL:
        assert set(answer) == {"message"}, answer
        return reply.status, answer["message"]
    assert set(answer) == {"error"} and isinstance(answer["error"], str), answer
    return reply.status, answer["error"]


def assert_refused(reply: Reply, api: str, status: int, pattern: str) -> None:
    got, message = refusal(reply, api)
    assert got == status and re.search(pattern, message), (got, message)


def post(client: HttpClient, api: str, extra: str = "", *, raw: bytes | None = None, headers: Any = None) -> Reply:
    path, valid = VALID[api]
    body = raw if raw is not None else ("{" + valid + extra + "}").encode("utf-8", "surrogatepass")
    return client.call("POST", path, headers if headers is not None else JSON, body)


# --- depth ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 900, 50_000], ids=["over-limit", "near-recursion", "deep"])
def test_a_body_nested_too_deeply_is_a_400_naming_the_limit(client: HttpClient, api: str, levels: int) -> None:
    # GIVEN a field nested beyond the limit: under the parser's recursion limit, near it, and far beyond it
    nested = "[" * levels + "]" * levels
    reply = post(client, api, f', "context": {nested}')
    if api == OWN and len(nested) > 60_000:  # this API's body limit comes first
        assert_refused(reply, api, 413, r"the limit is")
        return
    status = 400
    # THEN a 400 that says how deep a body may nest
    assert_refused(reply, api, status, rf"nested too deeply.*at most {MAX_JSON_DEPTH} levels")


def test_nesting_up_to_the_limit_is_read(client: HttpClient) -> None:
    # a DeepL request with an ignored field nested exactly MAX_JSON_DEPTH levels (the body object is level 1)
    levels = MAX_JSON_DEPTH - 1
    reply = post(client, DEEPL, f', "context": {"[" * levels + "]" * levels}')
    assert reply.status == 200, reply.body


# --- size -------------------------------------------------------------------------------------------------
def test_an_own_api_body_over_its_limit_is_413(client: HttpClient) -> None:
    reply = post(client, OWN, raw=json.dumps({"text": "好" * 60_000}).encode())
    assert_refused(reply, OWN, 413, r"the request body is [\d,]+ bytes; the limit is [\d,]+ bytes")


def test_a_text_over_the_character_limit_is_refused_by_every_api(client: HttpClient) -> None:
    long_text = "好" * (MAX_CHARS + 1)
    assert_refused(post(client, OWN, raw=json.dumps({"text": long_text}).encode()), OWN, 413, rf"{MAX_CHARS}")
    deepl = post(client, DEEPL, raw=json.dumps({"text": [long_text], "target_lang": "EN"}).encode())
    assert_refused(deepl, DEEPL, 413, rf"{MAX_CHARS}")
    libre = post(client, LIBRE, raw=json.dumps({"q": long_text, "source": "zh", "target": "en"}).encode())
    assert_refused(libre, LIBRE, 400, rf"{MAX_CHARS}")


@pytest.mark.parametrize("api", [DEEPL, LIBRE])
def test_a_drop_in_body_over_ten_mebibytes_is_refused(client: HttpClient, api: str) -> None:
    if client.name == "awslambdaric":
        pytest.skip("a Lambda invocation payload is at most 6 MB: the platform refuses this body before the function")
    reply = post(client, api, raw=b'{"q": "' + b"a" * (10 * 1024 * 1024) + b'"}')
    assert_refused(reply, api, 413 if api == DEEPL else 400, r"the limit is 10,485,760")


# --- number forms -----------------------------------------------------------------------------------------
NUMBER_FORMS = [
    ("1e999", r"the number 1e999 is out of range; numbers must be finite"),
    ("-1e999", r"the number -1e999 is out of range"),
    ("NaN", r"NaN is not a JSON number \(JSON has no NaN or Infinity\)"),
    ("Infinity", r"Infinity is not a JSON number"),
    ("-Infinity", r"-Infinity is not a JSON number"),
    ("9" * (MAX_INTEGER_DIGITS + 1), rf"the integer 9+\.\.\. has {MAX_INTEGER_DIGITS + 1} digits; no number of these"),
    # beyond Python's own limit (4,300 digits), whose message names sys.set_int_max_str_digits
    ("9" * 5000, r"the integer 9+\.\.\. has 5,000 digits"),
]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(("literal", "pattern"), NUMBER_FORMS, ids=[form[0][:8] for form in NUMBER_FORMS])
def test_a_number_no_request_holds_is_a_400(client: HttpClient, api: str, literal: str, pattern: str) -> None:
    field = "beam_size" if api == OWN else "context"  # an option, or a field the drop-in API would ignore
    assert_refused(post(client, api, f', "{field}": {literal}'), api, 400, rf"not valid JSON: {pattern}")


@pytest.mark.parametrize(
    ("value", "shown"),
    [("2.5", r"2\.5"), ("true", "true"), ("-0", "0"), ("-0.0", "0"), ('"4"', '"4"'), ("1e2", "100"), ("1e300", "1e")],
)
def test_own_api_integers_take_no_fraction_boolean_or_string(client: HttpClient, value: str, shown: str) -> None:
    reply = post(client, OWN, f', "beam_size": {value}')
    assert_refused(reply, OWN, 400, rf"beam_size must be an integer from 1 to \d+; got {shown}")


@pytest.mark.parametrize("value", ["2", "2.0", "2e0", "0.2e1"])
def test_an_integral_number_is_an_integer_however_written(client: HttpClient, value: str) -> None:
    # JSON has one number type: 2.0 is the integer 2, as JSON Schema's "integer" (the description's) says
    assert post(client, OWN, f', "beam_size": {value}').status == 200


@pytest.mark.parametrize("value", ["2.5", "true", '"1e999"', '"many"', "6", "10000", "-1", "[1]"])
def test_libretranslate_alternatives_must_be_a_small_integer(client: HttpClient, value: str) -> None:
    reply = post(client, LIBRE, f', "alternatives": {value}')
    assert_refused(reply, LIBRE, 400, r"alternatives must be (an integer|between 0 and 5)")


# --- encodings --------------------------------------------------------------------------------------------
def _encoded(api: str, encoding: str) -> bytes:
    return ("{" + VALID[api][1] + "}").encode(encoding)


ENCODINGS = [
    ("invalid UTF-8", lambda api: _encoded(api, "utf-8").replace("你".encode(), b"\xff\xfe"), r"'utf-8' codec"),
    ("CESU surrogate bytes", lambda api: _encoded(api, "utf-8").replace("你".encode(), b"\xed\xa0\x80"), "utf-8"),
    ("UTF-16 with BOM", lambda api: _encoded(api, "utf-16"), r"begins with a UTF-16 byte-order mark; send it as UTF-8"),
    ("UTF-16LE", lambda api: _encoded(api, "utf-16-le"), r"NUL bytes among its first characters"),
    ("UTF-16BE", lambda api: _encoded(api, "utf-16-be"), r"NUL bytes among its first characters"),
    ("UTF-32 with BOM", lambda api: _encoded(api, "utf-32"), r"begins with a UTF-32 byte-order mark"),
    ("latin-1", lambda api: _encoded(api, "utf-8").replace("你好".encode(), "café".encode("latin-1")), r"0xe9"),
]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(("name", "encode", "pattern"), ENCODINGS, ids=[e[0] for e in ENCODINGS])
def test_a_body_not_in_utf8_is_a_400_asking_for_utf8(
    client: HttpClient, api: str, name: str, encode: Any, pattern: str
) -> None:
    # LibreTranslate's POST /translate is told apart from this API's by its "q" field: in UTF-16 or UTF-32 bytes
    # that name cannot be seen, and this API answers
    api_answering = OWN if api == LIBRE and ("UTF-16" in name or "UTF-32" in name) else api
    reply = post(client, api, raw=encode(api))
    assert_refused(reply, api_answering, 400, rf"the body is not UTF-8 encoded JSON: .*{pattern}")


@pytest.mark.parametrize("api", APIS)
def test_a_utf8_byte_order_mark_is_skipped(client: HttpClient, api: str) -> None:
    reply = post(client, api, raw=codecs.BOM_UTF8 + _encoded(api, "utf-8"))
    assert reply.status == 200, reply.body


@pytest.mark.parametrize("api", APIS)
def test_a_lone_surrogate_in_a_key_or_a_value_is_answered_in_valid_json(client: HttpClient, api: str) -> None:
    # GIVEN an unknown option (own API) or an unsupported language (drop-ins) spelled with a lone surrogate
    field = {OWN: '"\\ud800x": 1', DEEPL: '"source_lang": "\\ud800"', LIBRE: '"format": "\\udfff"'}[api]
    reply = post(client, api, ", " + field)
    # THEN a 400 whose JSON quotes it as an escape (it used to fail to encode: 500, or no answer at all)
    pattern = {OWN: r"unknown option \ud800x", DEEPL: r"source_lang' not supported: \ud800", LIBRE: r"format"}[api]
    assert_refused(reply, api, 400, pattern)


def test_own_api_refuses_another_charset_with_415(client: HttpClient) -> None:
    reply = post(client, OWN, headers={"Content-Type": "application/json; charset=latin-1"})
    assert_refused(reply, OWN, 415, r"JSON must be UTF-8; got charset=latin-1")


# --- content types and codings ----------------------------------------------------------------------------
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
def test_a_compressed_body_is_refused_saying_send_it_uncompressed(client: HttpClient, api: str, coding: str) -> None:
    reply = post(client, api, headers={**JSON, "Content-Encoding": coding})
    status = 415 if api == OWN else 400
    assert_refused(reply, api, status, rf"Content-Encoding '{coding}' is not accepted: send the body uncompressed")


@pytest.mark.parametrize("content_type", ["application/xml", "image/png", "multipart/mixed; boundary=x"])
def test_deepl_names_the_body_types_it_reads(client: HttpClient, content_type: str) -> None:
    reply = client.call("POST", "/v2/translate", {"Content-Type": content_type}, b"<text>x</text>")
    assert_refused(reply, DEEPL, 400, r"the body must be JSON \(application/json\) or form-encoded")


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", None])
def test_own_api_names_the_body_type_it_reads(client: HttpClient, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    reply = client.call("POST", "/translate", headers, b'{"text": "\xe4\xbd\xa0"}')
    assert_refused(reply, OWN, 415, r"takes a JSON body with Content-Type: application/json")


# --- the drop-in APIs' bodies -----------------------------------------------------------------------------
DEEPL_BODIES = [
    ("form, no text", FORM, b"target_lang=EN", r"Parameter 'text' not specified"),
    ("form, empty", FORM, b"", r"Parameter 'text' not specified"),
    ("form, no target", FORM, b"text=%E4%BD%A0", r"Parameter 'target_lang' not specified; this server translates"),
    (
        "form, repeated target",
        FORM,
        b"text=a&target_lang=EN&target_lang=DE",
        r"'target_lang' must be a string, given once",
    ),
    ("form, bad target", FORM, b"text=a&target_lang=DE", r"Value for 'target_lang' not supported: DE"),
    ("form, not UTF-8", FORM, b"text=\xff&target_lang=EN", r"the form body is not UTF-8"),
    ("form, names only", FORM, b"text&target_lang", r"'target_lang' not specified"),
    ("json, text number", JSON, b'{"text": 5, "target_lang": "EN"}', r"'text' must be a string or a non-empty list"),
    ("json, text empty list", JSON, b'{"text": [], "target_lang": "EN"}', r"non-empty list of strings"),
    ("json, text list of null", JSON, b'{"text": [null], "target_lang": "EN"}', r"non-empty list of strings"),
    (
        "json, target number",
        JSON,
        b'{"text": "a", "target_lang": 5}',
        r"'target_lang' must be a string; got a JSON number",
    ),
    ("json, source object", JSON, b'{"text": "a", "target_lang": "EN", "source_lang": {}}', r"got a JSON object"),
    ("json, array body", JSON, b'["a"]', r"the JSON body must be an object; got a JSON array"),
    ("json, string body", JSON, b'"a"', r"must be an object; got a JSON string"),
    ("json, truncated", JSON, b'{"text": "a', r"the body is not valid JSON: Unterminated string"),
]


@pytest.mark.parametrize(("name", "headers", "raw", "pattern"), DEEPL_BODIES, ids=[b[0] for b in DEEPL_BODIES])
def test_deepl_bodies_of_every_type_are_refused_in_its_shape(
    client: HttpClient, name: str, headers: dict[str, str], raw: bytes, pattern: str
) -> None:
    assert_refused(client.call("POST", "/v2/translate", headers, raw), DEEPL, 400, pattern)


LIBRE_BODIES = [
    ("/translate", "form, no target", b"q=a&source=zh", r"Invalid request: missing target parameter"),
    ("/translate", "form, no source", b"q=a&target=en", r"Invalid request: missing source parameter"),
    (
        "/translate",
        "form, repeated target",
        b"q=a&source=zh&target=en&target=fr",
        r"'target' must be a string, given once",
    ),
    ("/translate", "form, bad source", b"q=a&target=en&source=ja", r"^ja is not supported$"),
    ("/translate", "form, bad format", b"q=a&source=zh&target=en&format=pdf", r"pdf format is not supported; use text"),
    (
        "/translate",
        "form, bracket list",
        b"q[]=a&source=zh&target=en&alternatives=x",
        r"alternatives must be an integer",
    ),
    ("/translate", "form, not UTF-8", b"q=\xff&target=en", r"the form body is not UTF-8"),
    ("/detect", "form, no q", b"source=zh", r"Invalid request: missing q parameter"),
    ("/detect", "form, empty", b"", r"missing q parameter"),
    ("/detect", "json, q number", b'{"q": 5}', r"q must be a string or a list of strings"),
    ("/detect", "json, q list of numbers", b'{"q": [1, 2]}', r"q must be a string or a list of strings"),
    ("/detect", "json, array", b"[]", r"the JSON body must be an object; got a JSON array"),
]


@pytest.mark.parametrize(("path", "name", "raw", "pattern"), LIBRE_BODIES, ids=[f"{b[0]} {b[1]}" for b in LIBRE_BODIES])
def test_libretranslate_bodies_of_every_type_are_refused_in_its_shape(
    client: HttpClient, path: str, name: str, raw: bytes, pattern: str
) -> None:
    headers = JSON if name.startswith("json") else FORM
    assert_refused(client.call("POST", path, headers, raw), LIBRE, 400, pattern)


def multipart(*fields: tuple[str, bytes], boundary: str = "----formdata7MA4YWxk", extra: bytes = b"") -> bytes:
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + value + b"\r\n"
        for name, value in fields
    ]
    return b"".join(parts) + extra + f"--{boundary}--\r\n".encode()


MULTIPART = {"Content-Type": "multipart/form-data; boundary=----formdata7MA4YWxk"}


def test_multipart_fields_are_read_like_form_fields(client: HttpClient) -> None:
    # what a browser's FormData sends (LibreTranslate's own page does): each API reads it like its form body
    deepl = multipart(("text", "你好".encode()), ("text", "谢谢".encode()), ("target_lang", b"EN-GB"))
    reply = client.call("POST", "/v2/translate", MULTIPART, deepl)
    assert reply.status == 200 and len(json.loads(reply.body)["translations"]) == 2, reply.body
    libre = multipart(("q", "你好".encode()), ("source", b"zh"), ("target", b"en"))
    reply = client.call("POST", "/translate", MULTIPART, libre)
    assert reply.status == 200 and isinstance(json.loads(reply.body)["translatedText"], str), reply.body
    # an empty FormData (only the closing boundary) has no field; a field with an empty name is a field like any other
    empty = client.call("POST", "/v2/usage", MULTIPART, b"------formdata7MA4YWxk--\r\n")
    assert empty.status == 200 and "character_count" in json.loads(empty.body), empty.body
    unnamed = multipart(("", b"x"), ("text", "你好".encode()), ("target_lang", b"EN"))
    assert client.call("POST", "/v2/translate", MULTIPART, unnamed).status == 200


MULTIPART_BODIES = [
    ("no boundary", {"Content-Type": "multipart/form-data"}, multipart(("q", b"x")), r"has no boundary in its"),
    ("other boundary", MULTIPART, multipart(("q", b"x"), boundary="other"), r"does not follow its boundary"),
    ("not closed", MULTIPART, multipart(("q", b"x")).removesuffix(b"------formdata7MA4YWxk--\r\n"), r"its boundary"),
    ("garbage", MULTIPART, b"\x00\xff garbage", r"does not follow its boundary"),
    ("part without a name", MULTIPART, b"------formdata7MA4YWxk\r\n\r\nx\r\n------formdata7MA4YWxk--\r\n", r"no name"),
    (
        "a file",
        MULTIPART,
        b'------formdata7MA4YWxk\r\nContent-Disposition: form-data; name="q"; filename="a.txt"\r\n\r\nx\r\n'
        b"------formdata7MA4YWxk--\r\n",
        r"the field '(q|text)' is a file; this API translates text fields, not files",
    ),
    (
        "not UTF-8",
        MULTIPART,
        multipart(("q", b"\xff\xfe")),
        r"the field '(q|text)' of the multipart/form-data body is not UTF-8",
    ),
    (
        "repeated target",
        MULTIPART,
        multipart(("q", b"x"), ("source", b"zh"), ("target", b"en"), ("target", b"fr")),
        r"given once",
    ),
]


@pytest.mark.parametrize("api", [DEEPL, LIBRE])
@pytest.mark.parametrize(("name", "headers", "raw", "pattern"), MULTIPART_BODIES, ids=[b[0] for b in MULTIPART_BODIES])
def test_a_malformed_multipart_body_is_a_400_saying_how_to_send_fields(
    client: HttpClient, api: str, name: str, headers: dict[str, str], raw: bytes, pattern: str
) -> None:
    if api == DEEPL:
        raw = raw.replace(b'name="q"', b'name="text"').replace(b'name="target"', b'name="target_lang"')
        raw = raw.replace(b'name="source"', b'name="source_lang"')
    reply = client.call("POST", "/v2/translate" if api == DEEPL else "/translate", headers, raw)
    assert_refused(reply, api, 400, pattern)


@pytest.mark.parametrize(
    ("query", "pattern"),
    [
        ("type=a&type=b", r"'type' must be a string, given once; it is given 2 times"),
        ("type=%FF", r"Value for 'type' not supported"),
        ("type=glossary", r"Value for 'type' not supported: 'glossary'; use source or target"),
    ],
)
def test_deepl_query_strings_are_refused_in_its_shape(client: HttpClient, query: str, pattern: str) -> None:
    reply = client.call("GET", f"/v2/languages?{query}")
    assert_refused(reply, DEEPL, 400, pattern)


# --- what only a transport carries: the servers that read bodies themselves ---------------------------------
def raw_exchange(base_url: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    host, port = base_url.removeprefix("http://").split(":")
    with contextlib.closing(socket.create_connection((host, int(port)), timeout=30)) as connection:
        connection.sendall(request)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = connection.recv(65_536)
            assert chunk, f"the server closed the connection without an answer: {received!r}"
            received += chunk
        head, _, body = received.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        while len(body) < int(headers.get("content-length", "0")):
            chunk = connection.recv(65_536)
            if not chunk:
                break
            body += chunk
    return int(lines[0].split()[1]), headers, body


TRANSPORT_CASES = [
    ("superscript length", b"Content-Length: \xb2\r\n\r\n{}", 400, r"Content-Length '\xb2' is not a number"),
    ("huge length", b"Content-Length: 99999999999999\r\n\r\n{}", 413, r"99,999,999,999,999 bytes.*the limit is"),
    ("bad chunk size", b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400, r"no size in hexadecimal"),
    ("chunk too long", b"Transfer-Encoding: chunked\r\n\r\n1\r\n{}\r\n0\r\n\r\n", 400, r"longer than its size says"),
    ("huge chunk", b"Transfer-Encoding: chunked\r\n\r\nffffffffff\r\n{}", 413, r"chunked request body is over"),
]


@pytest.mark.parametrize(("name", "rest", "status", "pattern"), TRANSPORT_CASES, ids=[c[0] for c in TRANSPORT_CASES])
def test_the_local_server_answers_a_body_it_cannot_read(
    local_server_url: str, name: str, rest: bytes, status: int, pattern: str
) -> None:
    request = b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + rest
    got, headers, body = raw_exchange(local_server_url, request)
    answer = json.loads(body)
    assert got == status and re.search(pattern, answer["error"]["message"]), (got, answer)
    assert headers["x-request-id"]


def test_the_local_server_reads_a_chunked_body(local_server_url: str) -> None:
    payload = json.dumps({"text": "你好"}).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(payload), payload)
    request = b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    status, _, body = raw_exchange(local_server_url, request + b"Transfer-Encoding: chunked\r\n\r\n" + chunked)
    assert status == 200 and "translation" in json.loads(body), body


# a body over every route's limit (HttpApi.max_request_bytes) is refused unread by the adapter: still in the shape
# of the API its path and headers name (before: this API's own shape on every route)
OVERSIZE_CASES = [  # (path, content type, the API whose shape, its status for a request too large)
    ("/v2/translate", "application/json", DEEPL, 413),
    ("/v2/translate", FORM["Content-Type"], DEEPL, 413),
    ("/v2/document", MULTIPART["Content-Type"], DEEPL, 413),
    ("/v2/glossaries", "application/json", DEEPL, 413),
    ("/translate_file", MULTIPART["Content-Type"], LIBRE, 400),  # LibreTranslate answers a request too large with 400
    ("/detect", FORM["Content-Type"], LIBRE, 400),
    ("/detect", "application/json", LIBRE, 400),
    ("/translate", FORM["Content-Type"], LIBRE, 400),  # what libretranslatepy sends
    ("/translate", MULTIPART["Content-Type"], LIBRE, 400),  # what LibreTranslate's page sends
    ("/translate", "application/json", OWN, 413),  # unread, JSON cannot be told from this API's own: its shape
]
OVERSIZE_IDS = [f"{path}-{content_type.split(';')[0]}" for path, content_type, _, _ in OVERSIZE_CASES]


def oversize_head(path: str, content_type: str, length: int) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\n\r\n"
    return head.encode("ascii")


@pytest.fixture(scope="module")
def max_request_bytes(startup: Startup) -> int:
    return HttpApi(startup).max_request_bytes


@pytest.mark.parametrize(("path", "content_type", "api", "status"), OVERSIZE_CASES, ids=OVERSIZE_IDS)
def test_a_body_over_every_limit_is_refused_in_its_apis_shape_by_the_local_server(
    local_server_url: str, max_request_bytes: int, path: str, content_type: str, api: str, status: int
) -> None:
    # GIVEN a Content-Length over every route's limit (the local server refuses it before reading the body)
    length = max_request_bytes + 1
    got, headers, body = raw_exchange(local_server_url, oversize_head(path, content_type, length) + b"q=")
    # THEN the API the path names answers, in its own shape, naming the size and the limit
    assert_refused(Reply(got, headers, body), api, status, rf"{length:,} bytes.*the limit is {max_request_bytes:,}")
    assert headers["x-request-id"]


def test_a_chunked_body_over_every_limit_is_refused_in_deepls_shape(local_server_url: str) -> None:
    head = b"POST /v2/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    got, headers, body = raw_exchange(local_server_url, head + b"Transfer-Encoding: chunked\r\n\r\nffffffffff\r\n{}")
    assert_refused(Reply(got, headers, body), DEEPL, 413, r"chunked request body is over [\d,]+ bytes, the limit")


@pytest.mark.parametrize(("path", "content_type", "api", "status"), OVERSIZE_CASES, ids=OVERSIZE_IDS)
def test_a_body_over_every_limit_is_refused_in_its_apis_shape_by_functions_framework(
    functions_framework_url: str, max_request_bytes: int, path: str, content_type: str, api: str, status: int
) -> None:
    # GIVEN a whole body over every route's limit (gunicorn waits for it; the function refuses it unread)
    length = max_request_bytes + 1
    got, headers, body = raw_exchange(
        functions_framework_url, oversize_head(path, content_type, length) + b"q" * length
    )
    assert_refused(Reply(got, headers, body), api, status, rf"{length:,} bytes.*the limit is {max_request_bytes:,}")


def test_a_malformed_chunk_on_a_deepl_route_is_refused_in_deepls_shape(functions_framework_url: str) -> None:
    head = b"POST /v2/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    got, headers, body = raw_exchange(functions_framework_url, head + TRANSPORT_CASES[2][1])
    assert_refused(Reply(got, headers, body), DEEPL, 400, r"the request body could not be read")


@pytest.mark.parametrize(
    ("name", "rest", "status", "pattern"), TRANSPORT_CASES[2:4], ids=[c[0] for c in TRANSPORT_CASES[2:4]]
)
def test_functions_framework_answers_malformed_chunks_in_json(
    functions_framework_url: str, name: str, rest: bytes, status: int, pattern: str
) -> None:
    # gunicorn reads the chunks; a malformed one raised out of the function (a 500 HTML page) before
    request = b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + rest
    got, headers, body = raw_exchange(functions_framework_url, request)
    answer = json.loads(body)
    assert got == 400 and re.search(r"the request body could not be read", answer["error"]["message"]), answer
    assert headers["x-request-id"]
