"""Route tables: each API's routes declared once (``Route``: method, path template, the method of the API that
answers it, whether a key is checked, the request's shape, the responses), in one ``RouteTable`` per API. The
router of each API finds a request's route there (``RouteTable.find``: the route, or the methods its path answers
for a 405, or nothing for a 404) and ``handler.api.describe.describe_table`` writes the OpenAPI ``paths`` from the
same table, so a route cannot be answered without being described, or described without being answered.

The tables' types are dataclasses never changed once declared, though neither frozen nor given a generated
``__eq__`` or ``__repr__``: each generated method costs every cold start a fraction of a millisecond.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from handler.config import RuntimeConfig


@dataclass(eq=False, repr=False)
class PathParameter:
    """A placeholder of a path template: ``pattern`` is what the document states; ``matches`` the segment the
    router takes there (default: the pattern), wider where a wrong value is answered by the route itself (an
    unknown document is the document store's 404)."""

    name: str
    pattern: str
    description: str
    matches: str | None = None

    def segment(self) -> str:
        if self.matches is not None:
            return self.matches
        return self.pattern.removeprefix("^").removesuffix("$")

    def schema(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "in": "path",
            "required": True,
            "schema": {"type": "string", "pattern": self.pattern},
            "description": self.description,
        }


@dataclass(eq=False, repr=False)
class Route:
    """One operation: ``handler`` names the API's method that answers it; ``shape`` its request's declaration
    (``handler.api.shapes``), read from ``body`` (its media types) or, without one, from the query string;
    ``auth``: a key is checked (with keys configured); ``reads``: the query and body are read (a route that
    answers whatever they are does not); ``responses``: each status's OpenAPI response object;
    ``described``: False where another table's route describes the same operation (LibreTranslate's and this
    server's ``POST /translate`` are one)."""

    method: str
    path: str
    handler: str
    operation_id: str
    summary: str
    responses: Mapping[str, Mapping[str, Any]]
    shape: type | None = None
    body: tuple[str, ...] = ()
    auth: bool = True
    reads: bool = True  # the route reads the request's fields (False: answered whatever they are)
    described: bool = True
    tag: str | None = None  # the document's tag of this operation (None: the table's)
    description: Callable[[RuntimeConfig], str] | None = None
    request_body: Callable[[RuntimeConfig], dict[str, Any]] | None = None  # instead of the shape's


@dataclass(eq=False, repr=False)
class Found:
    """What a table holds for a request: its ``route`` and path ``parameters``; or, for a path it has with another
    method, the ``allowed`` methods (a 405); ``template`` None: no route at all (a 404)."""

    template: str | None
    route: Route | None = None
    parameters: Mapping[str, str] = field(default_factory=dict)
    allowed: tuple[str, ...] = ()


@dataclass(eq=False, repr=False)
class RouteTable:
    """The routes of one API. ``head``: a GET route answers HEAD too (its headers, no body); ``preflight``: every
    path answers a CORS preflight (OPTIONS); ``schemes``: the security schemes a route with ``auth`` takes; ``tag``:
    the document's tag of the API's operations."""

    routes: tuple[Route, ...]
    parameters: tuple[PathParameter, ...] = ()
    head: bool = True
    preflight: bool = True
    schemes: tuple[str, ...] = ()
    tag: str = ""
    error_schema: str = "Error"  # the component of the API's error answer (a preflight's 404)

    def templates(self) -> tuple[str, ...]:
        """Every path template, in the table's order."""
        return tuple(dict.fromkeys(route.path for route in self.routes))

    def methods(self) -> dict[str, tuple[str, ...]]:
        """Each path template and the methods its routes answer (HEAD and OPTIONS as the table adds them aside)."""
        found: dict[str, tuple[str, ...]] = {}
        for route in self.routes:
            found[route.path] = (*found.get(route.path, ()), route.method)
        return found

    def allowed(self, template: str) -> tuple[str, ...]:
        """The methods ``template`` answers, HEAD beside GET, OPTIONS where preflights are answered."""
        methods = self.methods()[template]
        head = ("HEAD",) if self.head and "GET" in methods and "HEAD" not in methods else ()
        return (*methods, *head, *(("OPTIONS",) if self.preflight and "OPTIONS" not in methods else ()))

    def match(self, path: str) -> tuple[str | None, dict[str, str]]:
        """The template ``path`` (normalised, no query) belongs to and its parameters; (None, {}) for none. A
        template without a placeholder is compared as it is; one with is matched only where its literal start is the
        path's (its regular expression, compiled on first use: nothing is compiled at a cold start)."""
        for template in self.templates():
            if "{" not in template:
                if path == template:
                    return template, {}
                continue
            if path.startswith(template.split("{", 1)[0]):
                found = re.fullmatch(self._expression(template), path)
                if found is not None:
                    return template, found.groupdict()
        return None, {}

    def _expression(self, template: str) -> str:
        expression = re.escape(template)
        for name in re.findall(r"\{(\w+)\}", template):
            expression = expression.replace(re.escape(f"{{{name}}}"), f"(?P<{name}>{self.parameter(name).segment()})")
        return expression

    def find(self, method: str, path: str) -> Found:
        """The route answering ``method`` on ``path`` (HEAD: the GET route)."""
        template, parameters = self.match(path)
        if template is None:
            return Found(None)
        wanted = "GET" if method == "HEAD" and self.head else method
        for route in self.routes:
            if route.path == template and route.method == wanted:
                return Found(template, route, parameters)
        return Found(template, None, parameters, self.allowed(template))

    def parameter(self, name: str) -> PathParameter:
        return next(parameter for parameter in self.parameters if parameter.name == name)


def with_parameters(template: str, table: RouteTable) -> list[PathParameter]:
    """The path parameters ``template`` names, in order."""
    return [table.parameter(name) for name in re.findall(r"\{(\w+)\}", template)]
