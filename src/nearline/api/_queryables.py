"""The queryables (OGC API - Features Part 3, STAC's Filter extension): what a filter may
name, as a JSON Schema, for every collection the caller sees (/queryables) and for one
(/collections/{id}/queryables), drawn from what the catalogue has seen its items carry."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import orjson
from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from nearline.api._adapter import ERRORS, service_of
from nearline.api._auth import (
    EVERY_COLLECTION,
    check_public,
    doors_of,
    require_reader,
    viewer,
)
from nearline.archive import queryables_schema

SCHEMA_JSON = "application/schema+json"
QUERYABLES_REL = "http://www.opengis.net/def/rel/ogc/1.0/queryables"
DOCUMENT = {
    200: {
        "description": "A JSON Schema (as application/json to a client that asks for only that)",
        "content": {SCHEMA_JSON: {"schema": {}}, "application/json": {"schema": {}}},
    }
}


def queryables_link(href: str, title: str) -> dict[str, Any]:
    """A link to queryables (the landing page's and each collection's).

    Parameters
    ----------
    href
        The queryables' URL.
    title
        What they describe.
    """
    return {"rel": QUERYABLES_REL, "type": SCHEMA_JSON, "title": title, "href": href}


def _respond(request: Request, types: dict[str, set[str]], path: str, title: str) -> Response:
    """The queryables document of ``types``, served at ``path``."""
    url = f"{str(request.base_url).rstrip('/')}{path}"
    document = queryables_schema(types, url=url, title=title)
    return Response(orjson.dumps(document), media_type=media_type(request))


def media_type(request: Request) -> str:
    """``application/schema+json``, or plain JSON to a client that accepts that and not the
    schema type (GDAL 3.6 asks for ``application/geo+json, application/json`` and refuses
    anything else)."""
    accept = request.headers.get("accept", "")
    if SCHEMA_JSON not in accept and "application/json" in accept:
        return "application/json"
    return SCHEMA_JSON


def build_router() -> APIRouter:
    router = APIRouter(responses=ERRORS, dependencies=[Depends(require_reader)])

    route: dict[str, Any] = {"tags": ["Data"], "response_class": Response, "responses": DOCUMENT}

    @router.get(
        "/queryables", summary="What a search's filter may name, over every collection", **route
    )
    def every_collection(request: Request) -> Response:
        catalogue = service_of(request).catalogue
        user = viewer(request)
        public = doors_of(request).public
        if user is None and public is not None and EVERY_COLLECTION not in public:
            types: dict[str, set[str]] = {}
            for collection in sorted(public):
                for name, kinds in catalogue.queryables(collection).items():
                    types.setdefault(name, set()).update(kinds)
        else:
            types = catalogue.queryables(viewer=user)
        return _respond(request, types, "/queryables", "Every collection's items")

    @router.get(
        "/collections/{collection_id}/queryables",
        summary="What a filter of a collection's items may name",
        **route,
    )
    def one_collection(collection_id: str, request: Request) -> Response:
        check_public(request, collection_id)
        catalogue = service_of(request).catalogue
        user = viewer(request)
        found = catalogue.get_collection(collection_id, viewer=user)  # 404 if none
        types = catalogue.queryables(collection_id, viewer=user)
        path = f"/collections/{quote(collection_id, safe='')}/queryables"
        return _respond(request, types, path, found.title or found.id)

    return router
