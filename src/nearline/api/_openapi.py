"""The OpenAPI document as the service really answers.

FastAPI documents a 422 with its own validation-error shape for every operation that takes
input, but _problems.py answers every refusal with an OGC exception document (400 for bad
input, 401 without a token). Clients and fuzzers (schemathesis) trust the document, so it is
rewritten here to say what a client will get.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.routing import request_response

from nearline.api._openapi30 import MEDIA_TYPE as OPENAPI30
from nearline.api._openapi30 import downgrade
from nearline.archive.search_schema import (
    BBOX,
    BBOX_TEXT,
    COMPONENTS,
    DATETIME_SCHEMA,
    ITEMS_DATETIME_SCHEMA,
    LIMIT,
    NAMES_TEXT,
    SEARCH_BODY,
)
from nearline.orders import REPROCESS, SUBSCRIPTION

OPENAPI31 = "application/vnd.oai.openapi+json;version=3.1"
EXCEPTION_REF = "#/components/schemas/Exception"
EXCEPTION_SCHEMA: dict[str, Any] = {
    "title": "Exception",
    "description": "An OGC exception document (RFC 7807 shape): what went wrong, safe to show.",
    "type": "object",
    "required": ["type"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
    },
}
DESCRIPTIONS = {
    "400": "Bad request: the OGC exception document names the parameter and what it wants",
    "401": "No token, or one that is unknown or revoked",
    "403": "Yours to see but not to change (another user's public process, or a built-in)",
    "404": "No such thing, or not yours to see",
    "500": "The service failed; its log says why",
}
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}
QUERY: dict[str, dict[str, Any]] = {  # GET search parameters: what parse_search accepts
    "collections": {
        "description": "Collection ids, comma-separated",
        "schema": {"type": "string", "pattern": NAMES_TEXT},
    },
    "ids": {
        "description": "Item ids, comma-separated",
        "schema": {"type": "string", "pattern": NAMES_TEXT},
    },
    "bbox": {
        "description": BBOX["description"] + " (decimals, comma-separated)",
        "schema": {"type": "string", "pattern": BBOX_TEXT},
    },
    "intersects": {
        "description": "A GeoJSON geometry as JSON text",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Geometry"}}},
    },
    "datetime": {"description": DATETIME_SCHEMA["description"], "schema": DATETIME_SCHEMA},
    "limit": {"description": LIMIT["description"], "schema": LIMIT},
    "filter": {
        "description": "A CQL2 filter (STAC's Filter extension, OGC API - Features Part 3): "
        "CQL2 text, or CQL2 JSON with filter-lang=cql2-json; it names only queryables "
        "(/queryables); a syntax error or an unknown name is a 400",
        "schema": {"type": "string"},
    },
    "filter-lang": {
        "description": "cql2-text (the default) or cql2-json",
        "schema": {"enum": ["cql2-text", "cql2-json"]},
    },
    "filter-crs": {
        "description": "Only CRS84 (longitude, latitude)",
        "schema": {"const": "http://www.opengis.net/def/crs/OGC/1.3/CRS84"},
    },
    "sortby": {
        "description": "The order (STAC's Sort extension): fields comma-separated, each with "
        "- for descending (-properties.datetime,id); ties fall by id; a field that cannot be "
        "sorted by is a 400",
        "schema": {"type": "string"},
    },
    "fields": {
        "description": "Which parts of each item to answer with (STAC's Fields extension): "
        "id,properties.datetime to include, -geometry to exclude",
        "schema": {"type": "string"},
    },
}
SHAPED_ITEM: dict[str, Any] = {
    "type": "object",
    "description": "The parts of an item that the fields parameter asked for (STAC's Fields "
    "extension): a whole Item when it asks for none",
}
ITEMS = "/collections/{collection_id}/items"
MAX_LIMIT = 10_000  # as the catalogue cuts a page (nearline.archive's search)
ITEMS_GET = (
    "The collection's items matching every parameter given, in start-time order, a page at a "
    "time, as a search naming the collection; an unknown parameter is a 400 (OGC API - "
    "Features), and a date alone in datetime stands for its day (GDAL sends them). An "
    "unfiltered first page of an archive collection says how many items it holds "
    "(numberMatched)."
)
SEARCH_GET = (
    "Items matching every parameter given, in start-time order, a page at a time; a page "
    "has a next link while more follow (its token is signed for this search and user: a "
    "made-up or changed one is a 400). bbox with intersects is a 400, as STAC asks."
)


def describe_errors(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with FastAPI's 422s replaced by the OGC exceptions the service sends:
    400 where an operation takes input, 401 where it needs a token, 404 where a path names
    something, each with the exception document's schema."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas["Exception"] = EXCEPTION_SCHEMA
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            if method in HTTP_METHODS:
                _describe_operation_errors(operation, names_a_thing="{" in path)
    return document


def _describe_operation_errors(operation: dict[str, Any], *, names_a_thing: bool) -> None:
    responses = operation.setdefault("responses", {})
    takes_input = responses.pop("422", None) is not None or "requestBody" in operation
    wanted = {
        "400": takes_input or bool(operation.get("parameters")),
        "401": bool(operation.get("security")),
        "404": names_a_thing,
    }
    for status, applies in wanted.items():
        if applies:
            responses.setdefault(status, {})
    for status, response in responses.items():
        if status.startswith(("4", "5")) and "content" not in response:
            response["description"] = DESCRIPTIONS.get(status, "An OGC exception document")
            response["content"] = {"application/json": {"schema": {"$ref": EXCEPTION_REF}}}


def describe_inputs(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the search parameters and the bodies of POST /search, POST
    /subscriptions and its reprocess described exactly as their parsers accept them (the
    parsers check against these very schemas)."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(COMPONENTS)
    schemas["SearchPost"] = SEARCH_BODY
    schemas["SubscriptionRequest"] = SUBSCRIPTION
    schemas["ReprocessRequest"] = REPROCESS
    answers = schemas.get("ItemCollection", {}).get("properties", {}).get("features")
    if answers is not None:  # a page of /search and of a collection's items, as fields shape it
        answers["items"] = {"anyOf": [answers["items"], SHAPED_ITEM]}
    for path in ("/search", ITEMS):
        operation = document["paths"][path]["get"]
        for parameter in operation.get("parameters", []):
            if parameter["name"] in QUERY:
                parameter.pop("schema", None)
                parameter.pop("examples", None)
                parameter.update(QUERY[parameter["name"]])
            if path == ITEMS and parameter["name"] == "datetime":
                parameter.update(schema=ITEMS_DATETIME_SCHEMA)
        operation["description"] = SEARCH_GET if path != ITEMS else ITEMS_GET
    return document


def features_limit(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the items' ``limit`` bounded as OGC API - Features defines it
    (/req/core/fc-limit-definition: a maximum, above which a limit is cut to it, not refused;
    and a default), for the 3.0 rendering its test suite reads. The 3.1 document leaves the
    maximum out: there a fuzzer would take it for a bound that a larger value breaks."""
    for parameter in document["paths"][ITEMS]["get"].get("parameters", []):
        if parameter["name"] == "limit":
            parameter["schema"] = {**parameter["schema"], "maximum": MAX_LIMIT, "default": 10}
    return document


def documented_methods(document: dict[str, Any], path: str) -> set[str]:
    """The methods ``document`` gives the resource at ``path`` (under any path template that
    matches it): what a 405's ``Allow`` must list, as RFC 9110 asks."""
    methods: set[str] = set()
    for template, operations in document.get("paths", {}).items():
        pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
        if re.fullmatch(pattern, path):
            methods |= {method.upper() for method in operations if method in HTTP_METHODS}
    return methods


def install(app: FastAPI) -> None:
    """Serve :func:`describe_errors`' rewrite of FastAPI's document (built once, on first
    request, as FastAPI does) at /api: its OpenAPI 3.0 rendering to a request that asks for
    ``application/vnd.oai.openapi+json;version=3.0``, the 3.1 document to any other."""
    build = app.openapi
    rendered: list[bytes] = []

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = describe_errors(describe_inputs(build()))
        return app.openapi_schema

    async def api(request: Request) -> Response:
        if wants_openapi30(request.headers.get("accept", "")):
            if not rendered:
                rendered.append(orjson.dumps(features_limit(downgrade(openapi()))))
            return Response(rendered[0], media_type=OPENAPI30)
        return Response(orjson.dumps(openapi()), media_type=OPENAPI31)

    app.openapi = openapi  # type: ignore[method-assign]
    (route,) = [r for r in app.router.routes if getattr(r, "path", None) == app.openapi_url]
    route.app = request_response(api)  # type: ignore[attr-defined]


def wants_openapi30(accept: str) -> bool:
    """Whether an Accept header asks for the OpenAPI 3.0 media type (spaces aside)."""
    return OPENAPI30 in accept.replace(" ", "")
