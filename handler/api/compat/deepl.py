"""DeepL's API (v2, and v3's multilingual glossaries) on the translation service, for its clients (the official
``deepl`` library, CAT tools, apps).

Routes (JSON, form-encoded or multipart/form-data bodies; GET parameters in the query string or, as the ``deepl``
client sends them, a form body):

``POST /v2/translate``  ``text`` (repeated, or a JSON list), ``source_lang`` (optional: ZH, ZH-HANS, ZH-HANT),
                        ``target_lang`` (EN, EN-US, EN-GB), ``tag_handling`` (html or xml, with
                        ``ignore_tags``, ``non_splitting_tags``, ``splitting_tags``, ``outline_detection``: the
                        markup is cut here, DeepL's way, by ``handler.text.markup.translate_tagged``),
                        ``formality`` and ``model_type`` (below), ``glossary_id``; the other options accepted
                        without effect (``split_sentences``, ``context``, ...: docs/compatibility.md lists them)
                        → ``{"translations": [{"detected_source_language", "text", "billed_characters"}]}``
``GET /v2/languages``   ``type=source`` (default: ZH) or ``type=target`` (EN-GB, EN-US)
``GET /v2/usage``       characters translated through this API by this instance since its cold start, and a limit
                        that is never reached (the function has no quota)
``POST /v2/document``   multipart ``file`` (``filename`` optional), ``target_lang``, ``source_lang``, ``formality``,
                        ``output_format`` (only the input's own), ``glossary_id`` (with ``source_lang``, as on
                        ``/v2/translate``)
                        → ``{"document_id", "document_key"}``; the translation runs in the background
                        (``handler.storage.documents``: a local worker, or the deployment's upload events)
``POST /v2/document/{document_id}``  ``document_key`` → ``{"document_id", "status"}`` with ``seconds_remaining``
                        (translating), ``billed_characters`` (done) or ``error_message`` (error)
``POST /v2/document/{document_id}/result``  ``document_key`` → the translated file (Content-Type of its format),
                        once: it is deleted when downloaded, and a second download is 404; 503 before it is done
With API keys configured a document belongs to the key that uploaded it, as a glossary does: another key gets 404
for its status and its download, exactly as for an unknown document, whatever ``document_key`` it sends.

``detected_source_language`` is told from each text (``detected_language``): ``EN`` for a text already in English,
which passes through untranslated as DeepL answers a text already in its target language, else ``ZH``; with
``source_lang`` given the answer names it (ZH). ``formality``, the same on ``/v2/translate`` and ``/v2/document``:
English has no formal register this model distinguishes, so ``default``, ``prefer_more`` and ``prefer_less`` are
accepted and change nothing, while ``more`` and ``less`` are refused (400) as DeepL refuses them for a target language
without formality (``supports_formality`` is false in ``/v2/languages``). ``model_type``: any of DeepL's three values;
each translation then answers ``model_type_used`` (``latency_optimized``: the one model is a classic one).

``POST /v2/glossaries`` ``name``, ``source_lang`` (zh), ``target_lang`` (en), ``entries``, ``entries_format`` (tsv,
                        the default, or csv) → 201 and the glossary's description (``glossary_id``, ``name``,
                        ``ready``, ``source_lang``, ``target_lang``, ``creation_time``, ``entry_count``)
``GET /v2/glossaries``  ``{"glossaries": [...]}``: the caller's glossaries
``GET /v2/glossaries/{glossary_id}``          one description; ``DELETE`` deletes it (204)
``GET /v2/glossaries/{glossary_id}/entries``  the entries as ``text/tab-separated-values`` (415 when ``Accept``
                        allows no such type)
``GET /v2/glossary-language-pairs``           ``{"supported_languages": [{"source_lang": "zh", "target_lang": "en"}]}``
``POST /v3/glossaries`` (JSON) ``name``, ``dictionaries`` (exactly one: ``source_lang`` zh, ``target_lang`` en,
                        ``entries``, ``entries_format``) → 201 and v3's description (``glossary_id``, ``name``,
                        ``dictionaries`` with ``entry_count``, ``creation_time``); ``GET`` lists them
``GET /v3/glossaries/{glossary_id}``          v3's description; ``DELETE`` deletes it (204); edits (PATCH, the
                        ``/dictionaries`` routes) are not answered: the glossaries are immutable
``GET /v3/glossaries/{glossary_id}/entries``  ``source_lang``, ``target_lang`` → ``{"dictionaries": [{..., "entries"
                        (TSV), "entries_format": "tsv"}]}``
v2 and v3 are two views of the same stored glossaries: either version reads, lists and deletes the other's.

Glossaries are stored in the deployment's state and belong to the API key that created them
(``handler.storage.glossaries``: entry rules, limits, storage). ``glossary_id`` on ``/v2/translate`` (with
``source_lang``, as DeepL requires) applies the stored glossary merged over the deployment's
(``TRANSLATE_GLOSSARY_FILE``): for a term in both, the stored glossary wins. An unknown ID is 404.

Authentication is DeepL's ``Authorization: DeepL-Auth-Key KEY`` header (or the legacy ``auth_key`` parameter, or
this server's ``X-API-Key`` / ``Authorization: Bearer``; precedence in ``handler.api.keys``); with keys configured
(``TRANSLATE_API_KEYS``, ``TRANSLATE_API_KEYS_FILE``) the key must be one of them, otherwise any key passes.
Errors are DeepL's ``{"message": "..."}`` with 400 (bad request, unsupported language or file type), 403
(authorization, a wrong ``document_key``), 404 (no such route, unknown, downloaded or another key's document, unknown
or another key's glossary), 405, 413 (request or file too large), 415, 429 (too many documents queued), 500 and 503
(the model is unavailable or out of time, a document not ready; DeepL's clients retry 5xx and 429).
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from typing import Any
from urllib.parse import quote

from handler.api.compat.fields import (
    ApiStatus,
    HttpRequest,
    HttpResponse,
    RequestFields,
    UnauthorizedError,
    UploadedFile,
    json_response,
    key_is_valid,
    read_fields,
)
from handler.api.keys import ApiKeys, presented_key
from handler.api.messages import ErrorShape, status_for
from handler.coldstart import Startup
from handler.config import ENV_API_KEYS
from handler.errors import TranslatorError
from handler.formats import suffix_of
from handler.options import TranslateOptions
from handler.storage.documents import Documents, DocumentStatus, DocumentUpload, documents_for
from handler.storage.glossaries import SOURCE_LANG, TARGET_LANG, GlossaryStore
from handler.storage.owners import owner_of
from handler.storage.state import local_state
from handler.text.glossary import Glossary
from handler.text.markup import TAGGED_FORMATS, TagRules, translate_tagged
from handler.text.script_conversion import AUTO, SIMPLIFIED, TRADITIONAL
from handler.text.spans import has_chinese

logger = logging.getLogger(__name__)

SOURCE_LANGUAGES = [{"language": "ZH", "name": "Chinese"}]
TARGET_LANGUAGES = [
    {"language": "EN-GB", "name": "English (British)", "supports_formality": False},
    {"language": "EN-US", "name": "English (American)", "supports_formality": False},
]
SOURCE_LANGS = {"ZH": AUTO, "ZH-HANS": SIMPLIFIED, "ZH-HANT": TRADITIONAL}
TARGET_LANGS = ("EN", "EN-US", "EN-GB")
CHARACTER_LIMIT = 1_000_000_000_000  # what DeepL reports for accounts without a limit
MAX_BODY_BYTES = 10 * 1024 * 1024

GLOSSARY = "/v2/glossaries/{glossary_id}"
GLOSSARY_ENTRIES = "/v2/glossaries/{glossary_id}/entries"
GLOSSARIES_V3 = "/v3/glossaries"
GLOSSARY_V3 = "/v3/glossaries/{glossary_id}"
GLOSSARY_ENTRIES_V3 = "/v3/glossaries/{glossary_id}/entries"
ROUTES: dict[str, tuple[str, ...]] = {
    "/v2/translate": ("POST",),
    "/v2/languages": ("GET", "POST"),
    "/v2/usage": ("GET", "POST"),
    "/v2/document": ("POST",),
    # {document_id}: any id (DOCUMENT_ROUTE); listed so that the route table names every route
    "/v2/document/{document_id}": ("POST",),
    "/v2/document/{document_id}/result": ("POST",),
    "/v2/glossaries": ("GET", "POST"),
    GLOSSARY: ("GET", "DELETE"),
    GLOSSARY_ENTRIES: ("GET",),
    "/v2/glossary-language-pairs": ("GET",),
    GLOSSARIES_V3: ("GET", "POST"),
    GLOSSARY_V3: ("GET", "DELETE"),
    GLOSSARY_ENTRIES_V3: ("GET",),
}
DOCUMENT_ROUTE = re.compile(r"/v2/document/(?P<id>[^/]+)(?P<result>/result)?")
FORMALITIES_IGNORED = ("", "default", "prefer_more", "prefer_less")  # English: nothing to change
FORMALITIES = ("default", "more", "less", "prefer_more", "prefer_less")  # DeepL's values (FORMALITIES_IGNORED's too)
MODEL_TYPES = ("latency_optimized", "quality_optimized", "prefer_quality_optimized")
# this server has one model, a classic encoder-decoder: DeepL's latency-optimized kind, whatever model_type asks
MODEL_TYPE_USED = "latency_optimized"
ENGLISH = "EN"  # detected_source_language of a text already in English (it passes through untranslated)
_MARKUP = re.compile(r"<[^>]*>|&#?\w+;")  # tags and entities: not the text's language when tag_handling is set
# a glossary ID is a UUID (handler.storage.glossaries): any other segment there is no route; the one definition,
# which the OpenAPI document's pattern is too (handler.api.compat.deepl_openapi)
GLOSSARY_ID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
GLOSSARY_ID_PATTERN = f"^{GLOSSARY_ID}$"
_GLOSSARY_PATH = re.compile(f"^/(v2|v3)/glossaries/({GLOSSARY_ID})(/entries)?$")
TSV_TYPE = "text/tab-separated-values"


def route_of(path: str) -> tuple[str | None, str | None]:
    """The route ``path`` belongs to (a key of ``ROUTES``, or None) and the glossary ID it names, if any."""
    if path in ROUTES:
        return path, None
    found = _GLOSSARY_PATH.match(path)
    if found is None:
        return None, None
    if found.group(1) == "v3":
        return (GLOSSARY_ENTRIES_V3 if found.group(3) else GLOSSARY_V3), found.group(2)
    return (GLOSSARY_ENTRIES if found.group(3) else GLOSSARY), found.group(2)


def _accepts_tsv(accept: str) -> bool:
    """Whether an ``Accept`` header (absent: anything) allows ``text/tab-separated-values``."""
    if not accept.strip():
        return True
    for item in accept.split(","):
        media, _, parameters = item.strip().partition(";")
        quality = re.search(r"(?:^|;)\s*q\s*=\s*([0-9.]*)", parameters)
        if quality is not None and re.fullmatch(r"0(\.0*)?", quality.group(1)):  # q=0: "not acceptable"
            continue
        if media.strip().lower() in (TSV_TYPE, "text/*", "*/*"):
            return True
    return False


class DeepLApi:
    def __init__(
        self, startup: Startup, documents: Documents | None = None, glossaries: GlossaryStore | None = None
    ) -> None:
        """``documents``: where uploaded documents live and are translated (``handler.storage.documents``);
        ``glossaries``: the deployment's stored glossaries; default for both: the local folder (TRANSLATE_STATE_DIR)."""
        self.startup = startup
        self.documents = documents or documents_for(startup.config, startup.require_service)
        self.keys = ApiKeys.of(startup.config.api_keys)
        self.routes = ROUTES
        config = startup.config
        self.glossaries = glossaries or GlossaryStore(lambda: local_state(config), keys_required=self.keys.required)
        self._characters = 0
        self._lock = threading.Lock()

    def claims(self, path: str, request: HttpRequest) -> bool:
        return path in ROUTES or path.startswith(("/v2/", "/v3/"))

    def route_of(self, path: str) -> str | None:
        return route_of(path)[0]

    def handle(self, path: str, request: HttpRequest) -> HttpResponse:
        try:
            document = DOCUMENT_ROUTE.fullmatch(path)
            route, glossary_id = ("/v2/document/{document_id}", None) if document else route_of(path)
            allowed = ROUTES.get(route) if route is not None else None
            if document is not None and request.method == "OPTIONS":  # a CORS preflight, for any document id
                return HttpResponse(204, {"Allow": "POST, OPTIONS"}, b"")
            if route is None or allowed is None:
                if path.startswith("/v3/glossaries/") and path.endswith("/dictionaries"):
                    raise ApiStatus(
                        404,
                        f"{path}: a glossary's dictionaries cannot be replaced or deleted here; this server's "
                        f"glossaries are immutable (one zh → en dictionary each): delete the glossary "
                        f"(DELETE /v3/glossaries/{{glossary_id}}) and create it again",
                    )
                if path.startswith(("/v2/glossaries/", "/v3/glossaries/")):
                    version = path[1:3]
                    raise ApiStatus(
                        404,
                        f"Glossary not found: {path} names no glossary; a glossary is /{version}/glossaries/"
                        f"{{glossary_id}} (or its /entries) with the ID POST /{version}/glossaries returned, a UUID "
                        f"such as def3a26b-3e84-45b3-84ae-0c0aaf3525f7",
                    )
                raise ApiStatus(404, f"{path} is not a DeepL route this server answers; it has {', '.join(ROUTES)}")
            if request.method not in allowed and not (request.method == "HEAD" and "GET" in allowed):
                return json_response(
                    405, {"message": f"{route} answers {' and '.join(allowed)}"}, {"Allow": ", ".join(allowed)}
                )
            files: dict[str, UploadedFile] = {}
            fields = read_fields(request, MAX_BODY_BYTES, files if path == "/v2/document" else None)
            self._check_key(request, fields)
            key = presented_key(request.headers, fields.text("auth_key"))
            if path == "/v2/document":
                return json_response(200, self._upload(fields, files, key))
            if document is not None:
                return self._document(document["id"], fields, bool(document["result"]), key)
            if route.startswith("/v3/glossaries"):
                return self._glossary_v3_route(route, glossary_id, request, fields, key)
            if route.startswith("/v2/glossar"):
                return self._glossary_route(route, glossary_id, request, fields, key)
            if path == "/v2/languages":
                kind = (fields.text("type") or "source").lower()
                if kind not in ("source", "target"):
                    raise ApiStatus(400, f"Value for 'type' not supported: {kind!r}; use source or target")
                return json_response(200, SOURCE_LANGUAGES if kind == "source" else TARGET_LANGUAGES)
            if path == "/v2/usage":
                return json_response(200, {"character_count": self._characters, "character_limit": CHARACTER_LIMIT})
            return json_response(200, self._translate(fields, key))
        except ApiStatus as error:
            return json_response(error.status, {"message": str(error)})
        except TranslatorError as error:
            status = status_for(error, ErrorShape.DEEPL)
            if status >= 500:
                logger.error("DeepL %s failed: %s: %s", path, type(error).__name__, error)
            return json_response(status, {"message": str(error)})
        except Exception:
            logger.exception("DeepL %s failed with an unexpected error", path)
            return json_response(
                500, {"message": "internal error while translating; the function's log has the details"}
            )

    def _check_key(self, request: HttpRequest, fields: RequestFields) -> None:
        if not key_is_valid(request, fields.text("auth_key"), self.keys):
            raise UnauthorizedError(
                "Authorization failure: send 'Authorization: DeepL-Auth-Key KEY' with one of this server's keys "
                f"({ENV_API_KEYS})"
            )

    # --- documents ----------------------------------------------------------------------------------------------
    def _upload(self, fields: RequestFields, files: dict[str, UploadedFile], key: str | None) -> dict[str, Any]:
        uploaded = files.get("file")
        if uploaded is None:
            raise ApiStatus(
                400, "Parameter 'file' not specified: send the document as the multipart/form-data file field 'file'"
            )
        name = (fields.text("filename") or uploaded.filename or "").strip()
        target = _target(fields)
        source = _source(fields)
        formality = _formality(fields, target)
        output_format = (fields.text("output_format") or "").strip().lower().lstrip(".")
        suffix = suffix_of(name).lstrip(".")  # the format is the file name's (handler.formats), as for every file
        if output_format and output_format != suffix:
            raise ApiStatus(
                400,
                f"Value for 'output_format' not supported: {output_format!r}; a translation has its document's own "
                f"format ({suffix or 'none'}); leave output_format out",
            )
        options: dict[str, Any] = {"source": SOURCE_LANGS.get(source, AUTO)}
        glossary = self._document_glossary(fields, source, key)
        if glossary:
            options["glossary"] = glossary.as_dict()
        self.startup.require_service()
        encoding = (fields.text("encoding") or "").strip() or None  # this server's extension: DeepL has no such field
        handle = self.documents.create(
            DocumentUpload(
                name, uploaded.data, options, target, formality or None, encoding=encoding, owner=self._owner(key)
            )
        )
        return {"document_id": handle.document_id, "document_key": handle.document_key}

    def _owner(self, key: str | None) -> str:
        """Whose documents the caller uploads and sees: its API key's (``handler.storage.owners``), as glossaries."""
        return owner_of(key, self.keys.required)

    def _document(self, document_id: str, fields: RequestFields, result: bool, key: str | None) -> HttpResponse:
        document_key = fields.text("document_key")
        if not document_key:
            raise ApiStatus(400, "Parameter 'document_key' not specified: send the key /v2/document answered")
        if not result:
            return json_response(200, _status_json(self.documents.status(document_id, document_key, self._owner(key))))
        translated = self.documents.take_result(document_id, document_key, self._owner(key))
        filename = quote(translated.name or "document", safe="")
        headers = {
            "Content-Type": translated.content_type,
            "Content-Disposition": f"attachment; filename*=UTF-8''{filename}",
            "Cache-Control": "no-store",
        }
        return HttpResponse(200, headers, translated.data)

    def _document_glossary(self, fields: RequestFields, source: str, key: str | None) -> Glossary | None:
        """The stored glossary a document upload names with ``glossary_id`` (None without one); it travels in the
        document's options, so the worker or the upload event applies it merged over the deployment's glossary."""
        if fields.get("glossary_ids"):
            raise ApiStatus(
                400,
                "glossary_ids (v3 multilingual glossaries) is not supported: give one glossary_id of a glossary "
                "created with POST /v2/glossaries",
            )
        glossary_id = fields.text("glossary_id")
        if not glossary_id:
            return None
        if not source:
            raise ApiStatus(400, "Use of a glossary requires the source_lang parameter to be specified (ZH)")
        return self.glossaries.glossary_for(glossary_id.strip(), key)

    def _glossary_route(
        self, route: str, glossary_id: str | None, request: HttpRequest, fields: RequestFields, key: str | None
    ) -> HttpResponse:
        if route == "/v2/glossary-language-pairs":
            pairs = [{"source_lang": SOURCE_LANG, "target_lang": TARGET_LANG}]
            return json_response(200, {"supported_languages": pairs})
        if route == "/v2/glossaries":
            if request.method == "POST":
                info = self.glossaries.create(
                    name=fields.get("name"),
                    source_lang=fields.text("source_lang"),
                    target_lang=fields.text("target_lang"),
                    entries=fields.get("entries"),
                    entries_format=fields.text("entries_format") or "tsv",
                    key=key,
                )
                return json_response(201, info.as_json())
            return json_response(200, {"glossaries": [info.as_json() for info in self.glossaries.list_glossaries(key)]})
        assert glossary_id is not None  # the two routes with an ID
        if route == GLOSSARY_ENTRIES:
            if not _accepts_tsv(request.headers.get("accept", "")):
                raise ApiStatus(415, f"No supported media type specified in Accept header: the entries are {TSV_TYPE}")
            stored = self.glossaries.get(glossary_id, key)
            headers = {"Content-Type": f"{TSV_TYPE}; charset=utf-8", "Cache-Control": "no-store"}
            return HttpResponse(200, headers, stored.entries_tsv().encode("utf-8"))
        if request.method == "DELETE":
            self.glossaries.delete(glossary_id, key)
            return HttpResponse(204, {"Cache-Control": "no-store"}, b"")
        return json_response(200, self.glossaries.get(glossary_id, key).info.as_json())

    def _glossary_v3_route(
        self, route: str, glossary_id: str | None, request: HttpRequest, fields: RequestFields, key: str | None
    ) -> HttpResponse:
        """DeepL's multilingual glossaries (v3): the same stored glossaries as v2's, each one zh → en dictionary, so
        a glossary created on either version is read, listed, deleted and applied (``glossary_id``) through both."""
        if route == GLOSSARIES_V3:
            if request.method == "POST":
                info = self.glossaries.create_multilingual(
                    name=fields.get("name"), dictionaries=fields.get("dictionaries"), key=key
                )
                return json_response(201, info.as_v3_json())
            listed = self.glossaries.list_glossaries(key)
            return json_response(200, {"glossaries": [info.as_v3_json() for info in listed]})
        assert glossary_id is not None  # the two routes with an ID
        if route == GLOSSARY_ENTRIES_V3:
            stored = self.glossaries.get(glossary_id, key)
            stored.require_dictionary(fields.text("source_lang"), fields.text("target_lang"))
            return json_response(200, {"dictionaries": [stored.dictionary_v3_json()]})
        if request.method == "DELETE":
            self.glossaries.delete(glossary_id, key)
            return HttpResponse(204, {"Cache-Control": "no-store"}, b"")
        return json_response(200, self.glossaries.get(glossary_id, key).info.as_v3_json())

    def _translate(self, fields: RequestFields, key: str | None) -> dict[str, Any]:
        texts = _texts(fields)
        _formality(fields, _target(fields))
        model_type = _model_type(fields)
        source = _source(fields)
        tag_handling = (fields.text("tag_handling") or "").strip().lower()
        if tag_handling not in ("", *TAGGED_FORMATS):
            raise ApiStatus(400, f"Value for 'tag_handling' not supported: {tag_handling}; use html or xml")
        rules = _tag_rules(fields)
        if fields.get("glossary_ids"):
            raise ApiStatus(
                400,
                "glossary_ids (v3 multilingual glossaries) is not supported: give one glossary_id of a glossary "
                "created with POST /v2/glossaries",
            )
        glossary = None
        glossary_id = fields.text("glossary_id")
        if glossary_id:
            if not source:
                raise ApiStatus(400, "Use of a glossary requires the source_lang parameter to be specified (ZH)")
            glossary = self.glossaries.glossary_for(glossary_id.strip(), key)
        service = self.startup.require_service()
        options = TranslateOptions(
            # markup is cut here, DeepL's way (translate_tagged): the service translates its blocks as text
            format="text",
            source=SOURCE_LANGS.get(source, AUTO),
            glossary=glossary,
        )
        languages = [detected_language(text, markup=bool(tag_handling)) for text in texts]
        chinese = [text for text, language in zip(texts, languages, strict=True) if language != ENGLISH]
        if tag_handling:
            blocks = translate_tagged(chinese, tag_handling, rules, lambda some: service.translate_many(some, options))
            translated = iter(blocks)
        else:
            translated = iter(service.translate_many(chinese, options) if chinese else [])
        # a text already in English passes through untranslated, as DeepL answers a text in its target language
        outputs = [
            text if language == ENGLISH else next(translated) for text, language in zip(texts, languages, strict=True)
        ]
        billed = [len(text) for text in texts]
        with self._lock:
            self._characters += sum(billed)
        answers = []
        for output, language, characters in zip(outputs, languages, billed, strict=True):
            # with source_lang given, DeepL answers it as the detected language (its base, ZH)
            answer: dict[str, Any] = {"detected_source_language": "ZH" if source else language, "text": output}
            answer["billed_characters"] = characters
            if model_type:
                answer["model_type_used"] = MODEL_TYPE_USED
            answers.append(answer)
        return {"translations": answers}


def _target(fields: RequestFields) -> str:
    target = (fields.text("target_lang") or "").strip().upper()
    if not target:
        raise ApiStatus(400, "Parameter 'target_lang' not specified; this server translates to EN, EN-US or EN-GB")
    if target not in TARGET_LANGS:
        raise ApiStatus(
            400,
            f"Value for 'target_lang' not supported: {target}; this server translates Chinese to English "
            f"(target_lang EN, EN-US or EN-GB)",
        )
    return target


def detected_language(text: str, *, markup: bool = False) -> str:
    """``EN`` for a text already in English, else ``ZH`` (the text is the model's to translate).

    English is told by two rules: no Han character at all (a single one makes the text Chinese: mixed text is
    translated), and at least one letter, at least half of them Latin (ASCII or accented: ``LATIN`` in the Unicode
    name). Digits, punctuation and white space count for neither, so ``2024`` or ``!!!`` stay ``ZH`` (translated as
    before: the service passes what it cannot translate through). With ``markup`` (``tag_handling``) the tags and
    entities are left out first, so ``<p>你好</p>`` is Chinese though its tag is Latin letters."""
    if has_chinese(text):
        return "ZH"
    content = _MARKUP.sub(" ", text) if markup else text
    letters = [character for character in content if character.isalpha()]
    latin = sum(1 for character in letters if unicodedata.name(character, "").startswith("LATIN"))
    return ENGLISH if letters and 2 * latin >= len(letters) else "ZH"


def _formality(fields: RequestFields, target: str) -> str:
    """The request's ``formality`` (lower case; empty when absent), checked the same on every route as DeepL checks
    it for a target language without formality (``supports_formality`` false): ``default``, ``prefer_more`` and
    ``prefer_less`` pass (and change nothing), ``more`` and ``less`` are refused, any other value too."""
    formality = (fields.text("formality") or "").strip().lower()
    if formality in FORMALITIES_IGNORED:
        return formality
    if formality in FORMALITIES:
        raise ApiStatus(
            400,
            f"Target language {target} does not support formality: English has no formal register here "
            f"(supports_formality is false in /v2/languages); send default, prefer_more or prefer_less, which DeepL "
            f"accepts for such a target and which change nothing",
        )
    raise ApiStatus(
        400,
        f"Value for 'formality' not supported: {formality!r}; use one of {', '.join(FORMALITIES)} "
        f"(for English only default, prefer_more and prefer_less)",
    )


def _model_type(fields: RequestFields) -> str:
    """The request's ``model_type`` (empty when absent); a value DeepL does not know is refused."""
    model_type = (fields.text("model_type") or "").strip().lower()
    if model_type and model_type not in MODEL_TYPES:
        raise ApiStatus(
            400, f"Value for 'model_type' not supported: {model_type!r}; use one of {', '.join(MODEL_TYPES)}"
        )
    return model_type


def _source(fields: RequestFields) -> str:
    source = (fields.text("source_lang") or "").strip().upper()
    if source and source not in SOURCE_LANGS:
        raise ApiStatus(
            400,
            f"Value for 'source_lang' not supported: {source}; this server translates Chinese (source_lang ZH, "
            f"ZH-HANS or ZH-HANT) to English",
        )
    return source


def _status_json(status: DocumentStatus) -> dict[str, Any]:
    """DeepL's status answer: ``seconds_remaining`` while translating, ``billed_characters`` when done,
    ``error_message`` on error."""
    answer: dict[str, Any] = {"document_id": status.document_id, "status": status.status}
    if status.seconds_remaining is not None and status.status in ("queued", "translating"):
        answer["seconds_remaining"] = status.seconds_remaining
    if status.billed_characters is not None and status.status == "done":
        answer["billed_characters"] = status.billed_characters
    if status.error_message is not None:
        answer["error_message"] = status.error_message
    return answer


def _texts(fields: RequestFields) -> list[str]:
    value = fields.get("text")
    if value is None:
        raise ApiStatus(400, "Parameter 'text' not specified")
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
        raise ApiStatus(400, "Parameter 'text' must be a string or a non-empty list of strings")
    return texts


def _tag_list(fields: RequestFields, name: str) -> frozenset[str]:
    """A DeepL tag parameter: comma-separated tag names, repeated or a JSON list (as the deepl client may send)."""
    value = fields.get(name)
    if value is None:
        return frozenset()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ApiStatus(400, f"Value for '{name}' not supported: give tag names separated by commas, e.g. x,ph")
    return frozenset(tag.strip() for item in items for tag in item.split(",") if tag.strip())


def _tag_rules(fields: RequestFields) -> TagRules:
    """DeepL's ``ignore_tags``, ``non_splitting_tags``, ``splitting_tags`` and ``outline_detection`` (0 or 1,
    default 1; it only changes XML: HTML's structure is its own)."""
    outline = fields.get("outline_detection")
    if outline is None:
        detect = True
    elif isinstance(outline, bool | int | float) and outline in (0, 1):  # JSON: true, false, 0, 1
        detect = bool(outline)
    elif isinstance(outline, str) and outline.strip().lower() in ("0", "1", "false", "true"):
        detect = outline.strip().lower() in ("1", "true")
    else:
        raise ApiStatus(400, f"Value for 'outline_detection' not supported: {outline!r}; use 0 or 1")
    return TagRules(
        ignore_tags=_tag_list(fields, "ignore_tags"),
        non_splitting_tags=_tag_list(fields, "non_splitting_tags"),
        splitting_tags=_tag_list(fields, "splitting_tags"),
        outline_detection=detect,
    )
