"""DeepL's API (v2, and v3's multilingual glossaries) on the translation service, for its clients (the official
``deepl`` library, CAT tools, apps).

Routes (``handler.api.compat.deepl_routes``, each with its request's shape declared once in
``handler.api.compat.deepl_shapes``, from which both the reading and the OpenAPI schema come; JSON, form-encoded or
multipart/form-data bodies; GET parameters in the query string or, as the ``deepl`` client sends them, a form
body):

``POST /v2/translate``  ``text`` (repeated, or a JSON list), ``source_lang`` (optional: ZH, ZH-HANS, ZH-HANT),
                        ``target_lang`` (EN, EN-US, EN-GB), ``tag_handling`` (html or xml, with
                        ``ignore_tags``, ``non_splitting_tags``, ``splitting_tags``, ``outline_detection``: the
                        markup is cut here, DeepL's way, by ``handler.text.markup.translate_tagged``),
                        ``formality`` and ``model_type`` (below), ``glossary_id``; the other options accepted
                        without effect (``split_sentences``, ``context``, ...: docs/compatibility.md lists them);
                        at most TRANSLATE_MAX_TEXTS texts (more: 400)
                        → ``{"translations": [{"detected_source_language", "text", "billed_characters"}]}``
``GET /v2/languages``   ``type=source`` (default: ZH) or ``type=target`` (EN-GB, EN-US)
``GET /v2/usage``       with API keys, the calling key's characters this period and its ``chars`` limit, counted
                        across every instance (``handler.api.quotas``; a key without one: this month's, and a limit
                        that is never reached); without keys, the characters translated through this API by this
                        instance since its cold start
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
or another key's glossary), 405, 413 (request or file too large), 415, 429 (too many documents queued, the decoder
busy, or the key over its ``rate``, with ``Retry-After``), 456 (the key's character quota used up: DeepL's "Quota
exceeded", with ``Retry-After``), 500 and 503 (the model is unavailable or out of time, a document not ready;
DeepL's clients retry 5xx and 429). A document's characters count against its key's quota when it is downloaded.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from handler.api.compat.deepl_routes import DEEPL_ROUTES, ROUTES
from handler.api.compat.deepl_shapes import MODEL_TYPE_USED, SOURCE_LANGS
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
    route_or_refusal,
)
from handler.api.keys import ApiKeys, presented_key
from handler.api.messages import ErrorShape, error_headers, status_for
from handler.api.quotas import Quotas
from handler.api.shapes import read_shape, takes_files
from handler.coldstart import Startup
from handler.config import ENV_API_KEYS
from handler.errors import TranslatorError
from handler.formats import suffix_of
from handler.options import TranslateOptions
from handler.storage.documents import Documents, DocumentStatus, DocumentUpload, documents_for
from handler.storage.glossaries import SOURCE_LANG, TARGET_LANG, GlossaryStore
from handler.storage.owners import owner_of
from handler.storage.state import local_state
from handler.text.markup import TagRules, translate_tagged
from handler.text.script_conversion import AUTO
from handler.text.spans import has_chinese

if TYPE_CHECKING:  # the answers' types, for mypy: their module is imported when the document is built
    from handler.api.compat.deepl_openapi import (
        DeepLDocumentHandle,
        DeepLDocumentStatus,
        DeepLError,
        DeepLGlossaryLanguagePairs,
        DeepLGlossaryList,
        DeepLLanguage,
        DeepLMultilingualGlossaryEntries,
        DeepLMultilingualGlossaryList,
        DeepLTranslation,
        DeepLTranslations,
        DeepLUsage,
    )

__all__ = ["CHARACTER_LIMIT", "MAX_BODY_BYTES", "ROUTES", "DeepLApi", "detected_language"]

logger = logging.getLogger(__name__)

SOURCE_LANGUAGES: list[DeepLLanguage] = [{"language": "ZH", "name": "Chinese"}]
TARGET_LANGUAGES: list[DeepLLanguage] = [
    {"language": "EN-GB", "name": "English (British)", "supports_formality": False},
    {"language": "EN-US", "name": "English (American)", "supports_formality": False},
]
CHARACTER_LIMIT = 1_000_000_000_000  # what DeepL reports for accounts without a limit
MAX_BODY_BYTES = 10 * 1024 * 1024
ENGLISH = "EN"  # detected_source_language of a text already in English (it passes through untranslated)
_MARKUP = re.compile(r"<[^>]*>|&#?\w+;")  # tags and entities: not the text's language when tag_handling is set
TSV_TYPE = "text/tab-separated-values"


@dataclass(eq=False, repr=False)  # (no generated __eq__, __repr__ or frozen setters: a cold start's time)
class Call:
    """One request to one of DeepL's routes: its fields, their reading by the route's shape (None for a route
    without one), the key it presented and the path's parameters."""

    request: HttpRequest
    fields: RequestFields
    values: Any
    key: str | None
    parameters: dict[str, str]


def route_of(path: str) -> str | None:
    """The route (a key of ``ROUTES``) ``path`` belongs to, or None."""
    return DEEPL_ROUTES.match(path)[0]


def _not_found(path: str) -> str:
    """DeepL's 404 for a path no route of its table matches, naming what the caller may have meant."""
    if path.startswith("/v3/glossaries/") and path.endswith("/dictionaries"):
        return (
            f"{path}: a glossary's dictionaries cannot be replaced or deleted here; this server's glossaries are "
            f"immutable (one zh → en dictionary each): delete the glossary (DELETE /v3/glossaries/{{glossary_id}}) "
            f"and create it again"
        )
    if path.startswith(("/v2/glossaries/", "/v3/glossaries/")):
        version = path[1:3]
        return (
            f"Glossary not found: {path} names no glossary; a glossary is /{version}/glossaries/{{glossary_id}} (or "
            f"its /entries) with the ID POST /{version}/glossaries returned, a UUID such as "
            f"def3a26b-3e84-45b3-84ae-0c0aaf3525f7"
        )
    return f"{path} is not a DeepL route this server answers; it has {', '.join(ROUTES)}"


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
        self,
        startup: Startup,
        documents: Documents | None = None,
        glossaries: GlossaryStore | None = None,
        quotas: Quotas | None = None,
    ) -> None:
        """``documents``: where uploaded documents live and are translated (``handler.storage.documents``);
        ``glossaries``: the deployment's stored glossaries; default for both: the local folder (TRANSLATE_STATE_DIR).
        ``quotas``: the keys' usage and limits (``handler.api.quotas``; default: this configuration's)."""
        self.startup = startup
        self.documents = documents or documents_for(startup.config, startup.require_service)
        self.keys = ApiKeys.of(startup.config.api_keys)
        self.routes = ROUTES
        config = startup.config
        self.glossaries = glossaries or GlossaryStore(lambda: local_state(config), keys_required=self.keys.required)
        self.quotas = quotas or Quotas(config)
        self._characters = 0
        self._lock = threading.Lock()

    def claims(self, path: str, request: HttpRequest) -> bool:
        return path in ROUTES or path.startswith(("/v2/", "/v3/"))

    def route_of(self, path: str) -> str | None:
        return route_of(path)

    def handle(self, path: str, request: HttpRequest) -> HttpResponse:
        """The answer of the route ``DEEPL_ROUTES`` finds for ``request``: its fields read by the route's shape and
        the key checked first; 404 and 405 from the table; every error in DeepL's ``{"message"}``."""
        try:
            found = DEEPL_ROUTES.find(request.method, path)
            if found.template is None:
                raise ApiStatus(404, _not_found(path))
            allowed = ROUTES[found.template]
            route = route_or_refusal(request.method, found, allowed, _message)
            if isinstance(route, HttpResponse):  # a preflight, or a method the path does not take
                return route
            files: dict[str, UploadedFile] = {}
            fields = read_fields(request, MAX_BODY_BYTES, files if takes_files(route.shape) else None)
            self._check_key(request, fields)
            key = presented_key(request.headers, fields.text("auth_key"))
            if route.handler != "usage":  # reading its usage is not a request against the key's rate
                self.quotas.count_request(key)
            values = read_shape(route.shape, fields, self.startup.config, files) if route.shape else None
            answer: HttpResponse = getattr(self, "_" + route.handler)(
                Call(request, fields, values, key, dict(found.parameters))
            )
            return answer
        except ApiStatus as error:
            return json_response(error.status, _message(str(error)))
        except TranslatorError as error:
            status = status_for(error, ErrorShape.DEEPL)
            if status >= 500:
                logger.error("DeepL %s failed: %s: %s", path, type(error).__name__, error)
            return json_response(status, _message(str(error)), error_headers(error))
        except Exception:
            logger.exception("DeepL %s failed with an unexpected error", path)
            return json_response(500, _message("internal error while translating; the function's log has the details"))

    def _check_key(self, request: HttpRequest, fields: RequestFields) -> None:
        if not key_is_valid(request, fields.text("auth_key"), self.keys):
            raise UnauthorizedError(
                "Authorization failure: send 'Authorization: DeepL-Auth-Key KEY' with one of this server's keys "
                f"({ENV_API_KEYS})"
            )

    def _owner(self, key: str | None) -> str:
        """Whose documents the caller uploads and sees: its API key's (``handler.storage.owners``), as glossaries."""
        return owner_of(key, self.keys.required)

    # --- the text routes ----------------------------------------------------------------------------------------
    def _languages(self, call: Call) -> HttpResponse:
        return json_response(200, SOURCE_LANGUAGES if call.values.type == "source" else TARGET_LANGUAGES)

    def _usage(self, call: Call) -> HttpResponse:
        counted = self.quotas.usage(call.key)  # the key's, across instances; None without keys
        if counted is None:
            usage: DeepLUsage = {"character_count": self._characters, "character_limit": CHARACTER_LIMIT}
        else:
            characters = counted.characters
            usage = {"character_count": characters.used, "character_limit": characters.limit or CHARACTER_LIMIT}
        return json_response(200, usage)

    def _translate(self, call: Call) -> HttpResponse:
        request = call.values
        texts = [request.text] if isinstance(request.text, str) else list(request.text)
        source = request.source_lang or ""
        tag_handling = request.tag_handling or ""
        rules = TagRules(
            ignore_tags=request.ignore_tags,
            non_splitting_tags=request.non_splitting_tags,
            splitting_tags=request.splitting_tags,
            outline_detection=request.outline_detection,
        )
        glossary = self.glossaries.glossary_for(request.glossary_id, call.key) if request.glossary_id else None
        service = self.startup.require_service()
        options = TranslateOptions(
            # markup is cut here, DeepL's way (translate_tagged): the service translates its blocks as text
            format="text",
            source=SOURCE_LANGS.get(source, AUTO),
            glossary=glossary,
        )
        languages = [detected_language(text, markup=bool(tag_handling)) for text in texts]
        chinese = [text for text, language in zip(texts, languages, strict=True) if language != ENGLISH]
        charge = self.quotas.charge(call.key, sum(len(text) for text in texts))  # 456 past the key's quota
        try:
            if tag_handling:
                many = service.translate_many
                translated = iter(translate_tagged(chinese, tag_handling, rules, lambda some: many(some, options)))
            else:
                translated = iter(service.translate_many(chinese, options) if chinese else [])
        except TranslatorError:
            charge.refund()
            raise
        # a text already in English passes through untranslated, as DeepL answers a text in its target language
        outputs = [
            text if language == ENGLISH else next(translated) for text, language in zip(texts, languages, strict=True)
        ]
        billed = [len(text) for text in texts]
        with self._lock:
            self._characters += sum(billed)
        answers: list[DeepLTranslation] = []
        for output, language, characters in zip(outputs, languages, billed, strict=True):
            # with source_lang given, DeepL answers it as the detected language (its base, ZH)
            answer: DeepLTranslation = {
                "detected_source_language": "ZH" if source else language,
                "text": output,
                "billed_characters": characters,
            }
            if request.model_type:
                answer["model_type_used"] = MODEL_TYPE_USED
            answers.append(answer)
        translations: DeepLTranslations = {"translations": answers}
        return json_response(200, translations)

    # --- documents ----------------------------------------------------------------------------------------------
    def _upload(self, call: Call) -> HttpResponse:
        upload = call.values
        uploaded: UploadedFile = upload.file
        name = (upload.filename or uploaded.filename or "").strip()
        output_format = (upload.output_format or "").strip().lower().lstrip(".")
        suffix = suffix_of(name).lstrip(".")  # the format is the file name's (handler.formats), as for every file
        if output_format and output_format != suffix:
            raise ApiStatus(
                400,
                f"Value for 'output_format' not supported: {output_format!r}; a translation has its document's own "
                f"format ({suffix or 'none'}); leave output_format out",
            )
        options: dict[str, Any] = {"source": SOURCE_LANGS.get(upload.source_lang or "", AUTO)}
        if upload.glossary_id:  # it travels in the document's options, applied merged over the deployment's
            options["glossary"] = self.glossaries.glossary_for(upload.glossary_id, call.key).as_dict()
        self.startup.require_service()
        self.quotas.require_left(call.key)  # 456 when the key's characters are used up: counted at the download
        encoding = (upload.encoding or "").strip() or None  # this server's extension: DeepL has no such field
        formality = upload.formality or None
        handle = self.documents.create(
            DocumentUpload(
                name, uploaded.data, options, upload.target_lang, formality, encoding=encoding,
                owner=self._owner(call.key),
            )
        )  # fmt: skip
        created: DeepLDocumentHandle = {"document_id": handle.document_id, "document_key": handle.document_key}
        return json_response(200, created)

    def _document_status(self, call: Call) -> HttpResponse:
        status = self.documents.status(call.parameters["document_id"], call.values.document_key, self._owner(call.key))
        return json_response(200, _status_json(status))

    def _document_result(self, call: Call) -> HttpResponse:
        document_id = call.parameters["document_id"]
        billed = 0
        if self.quotas.active:  # its characters count against the key when it is taken, once
            status = self.documents.status(document_id, call.values.document_key, self._owner(call.key))
            billed = status.billed_characters or 0
        translated = self.documents.take_result(document_id, call.values.document_key, self._owner(call.key))
        self.quotas.record(call.key, billed)
        filename = quote(translated.name or "document", safe="")
        headers = {
            "Content-Type": translated.content_type,
            "Content-Disposition": f"attachment; filename*=UTF-8''{filename}",
            "Cache-Control": "no-store",
        }
        return HttpResponse(200, headers, translated.data)

    # --- glossaries (v2) ----------------------------------------------------------------------------------------
    def _glossary_language_pairs(self, call: Call) -> HttpResponse:
        pairs: DeepLGlossaryLanguagePairs = {
            "supported_languages": [{"source_lang": SOURCE_LANG, "target_lang": TARGET_LANG}]
        }
        return json_response(200, pairs)

    def _glossaries(self, call: Call) -> HttpResponse:
        listed = self.glossaries.list_glossaries(call.key)
        glossaries: DeepLGlossaryList = {"glossaries": [info.as_json() for info in listed]}
        return json_response(200, glossaries)

    def _create_glossary(self, call: Call) -> HttpResponse:
        created = call.values
        info = self.glossaries.create(
            name=created.name,
            source_lang=created.source_lang,
            target_lang=created.target_lang,
            entries=created.entries,
            entries_format=created.entries_format,
            key=call.key,
        )
        return json_response(201, info.as_json())

    def _glossary(self, call: Call) -> HttpResponse:
        return json_response(200, self.glossaries.get(call.parameters["glossary_id"], call.key).info.as_json())

    def _delete_glossary(self, call: Call) -> HttpResponse:
        self.glossaries.delete(call.parameters["glossary_id"], call.key)
        return HttpResponse(204, {"Cache-Control": "no-store"}, b"")

    def _glossary_entries(self, call: Call) -> HttpResponse:
        if not _accepts_tsv(call.request.headers.get("accept", "")):
            raise ApiStatus(415, f"No supported media type specified in Accept header: the entries are {TSV_TYPE}")
        stored = self.glossaries.get(call.parameters["glossary_id"], call.key)
        headers = {"Content-Type": f"{TSV_TYPE}; charset=utf-8", "Cache-Control": "no-store"}
        return HttpResponse(200, headers, stored.entries_tsv().encode("utf-8"))

    # --- glossaries (v3): the same stored glossaries as v2's, each one zh → en dictionary ---------------------------
    def _glossaries_v3(self, call: Call) -> HttpResponse:
        listed = self.glossaries.list_glossaries(call.key)
        glossaries: DeepLMultilingualGlossaryList = {"glossaries": [info.as_v3_json() for info in listed]}
        return json_response(200, glossaries)

    def _create_glossary_v3(self, call: Call) -> HttpResponse:
        created = call.values
        (dictionary,) = created.dictionaries  # the shape holds exactly one
        info = self.glossaries.create(
            name=created.name,
            source_lang=dictionary.source_lang,
            target_lang=dictionary.target_lang,
            entries=dictionary.entries,
            entries_format=dictionary.entries_format,
            key=call.key,
        )
        return json_response(201, info.as_v3_json())

    def _glossary_v3(self, call: Call) -> HttpResponse:
        return json_response(200, self.glossaries.get(call.parameters["glossary_id"], call.key).info.as_v3_json())

    def _glossary_entries_v3(self, call: Call) -> HttpResponse:
        stored = self.glossaries.get(call.parameters["glossary_id"], call.key)
        stored.require_dictionary(call.values.source_lang, call.values.target_lang)
        entries: DeepLMultilingualGlossaryEntries = {"dictionaries": [stored.dictionary_v3_json()]}
        return json_response(200, entries)


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


def _message(text: str) -> DeepLError:
    """DeepL's error answer."""
    return {"message": text}


def _status_json(status: DocumentStatus) -> DeepLDocumentStatus:
    """DeepL's status answer: ``seconds_remaining`` while translating, ``billed_characters`` when done,
    ``error_message`` on error."""
    answer: DeepLDocumentStatus = {"document_id": status.document_id, "status": status.status}
    if status.seconds_remaining is not None and status.status in ("queued", "translating"):
        answer["seconds_remaining"] = status.seconds_remaining
    if status.billed_characters is not None and status.status == "done":
        answer["billed_characters"] = status.billed_characters
    if status.error_message is not None:
        answer["error_message"] = status.error_message
    return answer
