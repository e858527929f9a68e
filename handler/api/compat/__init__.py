"""Drop-in HTTP APIs of other translation servers, on the same translation service.

* ``handler.api.compat.libretranslate``: LibreTranslate's ``POST /translate`` (told from ours by its ``q`` field or
  a form body), ``POST /detect``, ``GET /languages``, ``GET /frontend/settings``, ``GET /health``, ``GET /spec``,
  ``POST /suggest``, ``POST /translate_file`` and ``GET /download_file/<name>``;
* ``handler.api.compat.deepl``: DeepL's ``POST /v2/translate``, ``GET /v2/languages``, ``GET /v2/usage``, the
  document API ``POST /v2/document``, ``/v2/document/{id}``, ``/v2/document/{id}/result`` and the glossary routes
  (``/v2/glossaries``, ``/v2/glossary-language-pairs``, v3's ``/v3/glossaries``; stored by
  ``handler.storage.glossaries``).

The documents and the translated files live where the adapter says (``handler.storage.documents.documents_for``):
a local folder, or the deployment's buckets.

Each answers in its own API's shapes, with its own error body and status codes, while the limits (characters,
texts) and the errors underneath are the service's (``handler.errors``). ``handler.api.router`` asks
``CompatApis.handle`` first and serves its own routes when that returns None; a request its adapter refused before
reading its body (over every route's limit, or unreadable) is answered by ``CompatApis.refusal`` in the shape of
the API its path and headers name (DeepL's ``{"message"}``, LibreTranslate's ``{"error": "..."}``).
"""

from __future__ import annotations

from handler.api.compat import deepl, libretranslate
from handler.api.compat.deepl import DeepLApi
from handler.api.compat.libretranslate import LibreTranslateApi
from handler.api.messages import ErrorShape, HttpRequest, HttpResponse, json_response, status_for
from handler.api.quotas import Quotas
from handler.coldstart import Startup
from handler.errors import TranslatorError
from handler.storage.documents import Documents
from handler.storage.glossaries import GlossaryStore

MAX_BODY_BYTES = max(deepl.MAX_BODY_BYTES, libretranslate.MAX_BODY_BYTES)  # the largest body either reads


class CompatApis:
    """The drop-in APIs of one cold start."""

    def __init__(
        self,
        startup: Startup,
        documents: Documents,
        glossaries: GlossaryStore | None = None,
        quotas: Quotas | None = None,
    ) -> None:
        """``quotas``: the keys' usage and limits, shared with this server's own API (default: their own)."""
        quotas = quotas or Quotas(startup.config)
        self.libretranslate = LibreTranslateApi(startup, documents.state, quotas)
        self.deepl = DeepLApi(startup, documents, glossaries, quotas)

    def routes(self) -> tuple[str, ...]:
        """Every path the drop-in APIs answer."""
        return (*self.deepl.routes, *self.libretranslate.routes)

    def route_of(self, path: str) -> str | None:
        """The route (a template such as ``/v2/glossaries/{glossary_id}``) ``path`` belongs to; None: none of theirs."""
        for api in (self.deepl, self.libretranslate):
            route = api.route_of(path)
            if route is not None:
                return route
        return None

    def handle(self, path: str, request: HttpRequest) -> HttpResponse | None:
        """The response when ``path`` (normalised, no query) belongs to a drop-in API; None otherwise."""
        for api in (self.deepl, self.libretranslate):
            route = api.route_of(path)
            if request.method == "OPTIONS" and route is not None and route != "/translate":
                return HttpResponse(204, {"Allow": ", ".join((*api.routes[route], "OPTIONS"))}, b"")
            if api.claims(path, request):
                return api.handle(path, request)
        return None

    def refusal(self, path: str, request: HttpRequest, error: TranslatorError) -> HttpResponse | None:
        """``error``, the adapter's refusal of a request whose body it did not read (over every route's limit, or
        unreadable), in the shape of the drop-in API the request is for as far as its path and headers tell
        (``/v2/...``: DeepL's ``{"message"}`` with DeepL's status; LibreTranslate's paths, and a form or multipart
        ``POST /translate``: LibreTranslate's ``{"error": "..."}`` with its status); None: this server's own."""
        if self.deepl.claims(path, request):  # DeepL's paths, whatever the body
            return json_response(status_for(error, ErrorShape.DEEPL), {"message": str(error)})  # as DeepLApi.handle
        if self.libretranslate.claims_unread(path, request):
            return self.libretranslate.error_response(path, error)
        return None
