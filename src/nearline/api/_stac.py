"""The STAC API: stac-fastapi's routes and request models, over nearline's catalogue.

stac-fastapi gives the routes, the request parsing and the landing page's shape; this module
gives it a client that answers from :class:`nearline.archive.Catalogue`, as the viewer sees
it, and builds the app those routes are served from (build_app). Answers are serialized
here with orjson and returned as responses, so the search path pays no generic JSON
encoding.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated, Any
from urllib.parse import urlencode

import attr
import orjson
from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import BaseModel, ConfigDict
from stac_fastapi.api.app import StacApi
from stac_fastapi.types.config import ApiSettings
from stac_fastapi.types.core import BaseCoreClient
from stac_fastapi.types.search import APIRequest

from nearline import __version__
from nearline.api._auth import (
    EVERY_COLLECTION,
    check_public,
    doors_of,
    public_collections,
    require_reader,
    viewer,
)
from nearline.api._features import (
    SEARCH_PARAMETERS,
    UnknownParameter,
    items_query,
    unfiltered,
)
from nearline.api._fields import Fields, parse_fields
from nearline.api._gridded import CONFORMANCE as GRIDDED
from nearline.api._gridded import collection_extras, merged
from nearline.api._landing import landing_html
from nearline.api._paging import PageTokens
from nearline.api._queryables import queryables_link
from nearline.api._tilesets import TILES_CONFORMANCE
from nearline.archive import (
    STAC_VERSION,
    Collection,
    Page,
    Search,
    collection_to_stac,
    item_to_stac,
    parse_search,
    query_values,
)
from nearline.errors import SearchError
from nearline.orders import Service

GEOJSON = "application/geo+json"
# searches one worker process answers at once; the others wait outside the GIL. Past two,
# threads only take the GIL from each other and from the event loop: 16 kept-alive clients
# on one process got 230-284 searches/s with the thread pool's 40 at once, 284-418/s with
# two (10^5 items; docs/benchmarks.md, "Concurrent searches")
SEARCHES_AT_ONCE = 2
# numberMatched is given when counting a search afresh reads no more candidates than this (a
# few hundred ms at 10^5: a site's series at 10^7 items, the issue 39 asks it of), once per
# search and catalogue state: the catalogue keeps it for the next pages (archive/_counts.py)
COUNT_TO = 200_000
TOKEN_KEY = "page-tokens"  # the service key paging tokens are signed with
JSON = "application/json"

# Part 2 (deploy-replace-undeploy) is not declared: its class requires OGC application packages
# (CWL, Docker), and nearline deploys only its own zip packages at the same routes. Its suite
# fails the CWL and Docker deploys, so declaring it would claim what is not passed
# (docs/algorithms.md, "OGC API - Processes Part 2").
OGC_PROCESSES = [
    "http://www.opengis.net/spec/ogcapi-processes-1/1.0/conf/core",
    "http://www.opengis.net/spec/ogcapi-processes-1/1.0/conf/ogc-process-description",
    "http://www.opengis.net/spec/ogcapi-processes-1/1.0/conf/json",
    "http://www.opengis.net/spec/ogcapi-processes-1/1.0/conf/oas30",
    "http://www.opengis.net/spec/ogcapi-processes-1/1.0/conf/job-list",
    "http://www.opengis.net/spec/ogcapi-processes-1/1.0/conf/dismiss",
]


STAC_API = "https://api.stacspec.org/v1.0.0"
CQL2 = "http://www.opengis.net/spec/cql2/1.0/conf/"
FEATURES_3 = "http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/"
# STAC's Filter, Sort and Fields extensions on /search and on a collection's items, and what
# of OGC's CQL2 the filter offers (_filter_sql.py): no temporal, array or arithmetic class,
# no property-property comparisons, no accent- or case-insensitive comparison
EXTENSIONS = [
    "https://api.stacspec.org/v1.0.0-rc.3/item-search#filter",
    "https://api.stacspec.org/v1.0.0-rc.3/ogcapi-features#filter",
    f"{STAC_API}/item-search#sort",
    f"{STAC_API}/item-search#fields",
    f"{STAC_API}/ogcapi-features#sort",
    f"{STAC_API}/ogcapi-features#fields",
    f"{FEATURES_3}filter",
    f"{FEATURES_3}features-filter",
    f"{FEATURES_3}queryables",
    f"{CQL2}cql2-text",
    f"{CQL2}cql2-json",
    f"{CQL2}basic-cql2",
    f"{CQL2}advanced-comparison-operators",
    f"{CQL2}basic-spatial-functions",
]

# Every search parameter arrives as the text sent and is checked by parse_search alone, against
# nearline.archive.search_schema, which the OpenAPI document publishes (_openapi.py): so what the
# document says and what the service accepts are one thing. The paging token is left out of
# the document: it is not chosen but found in a page's next link (STAC: "not necessarily part
# of the API specification").
Text = Annotated[str | None, Query()]
TokenText = Annotated[str | None, Query(include_in_schema=False)]
LangText = Annotated[str | None, Query(alias="filter-lang")]
CrsText = Annotated[str | None, Query(alias="filter-crs")]


@attr.s
class SearchGet(APIRequest):
    """GET /search: every parameter as sent."""

    collections: Text = attr.ib(default=None)
    ids: Text = attr.ib(default=None)
    bbox: Text = attr.ib(default=None)
    intersects: Text = attr.ib(default=None)
    datetime: Text = attr.ib(default=None)
    limit: Text = attr.ib(default=None)
    token: TokenText = attr.ib(default=None)
    filter: Text = attr.ib(default=None)
    filter_lang: LangText = attr.ib(default=None)
    filter_crs: CrsText = attr.ib(default=None)
    sortby: Text = attr.ib(default=None)
    fields: Text = attr.ib(default=None)


@attr.s
class ItemsGet(APIRequest):
    """GET /collections/{id}/items: every parameter as sent."""

    collection_id: Annotated[str, Path(description="Collection ID")] = attr.ib()
    bbox: Text = attr.ib(default=None)
    datetime: Text = attr.ib(default=None)
    limit: Text = attr.ib(default=None)
    token: TokenText = attr.ib(default=None)
    filter: Text = attr.ib(default=None)
    filter_lang: LangText = attr.ib(default=None)
    filter_crs: CrsText = attr.ib(default=None)
    sortby: Text = attr.ib(default=None)
    fields: Text = attr.ib(default=None)


class SearchPost(BaseModel):
    """POST /search: the body as sent (checked by parse_search; the token, merged in from
    the next link's body, beside the search)."""

    model_config = ConfigDict(extra="allow")


def refuse_repeated(request: Request) -> None:
    """STAC's GET parameters are single values (a list is comma-separated): one given twice
    is refused, rather than its last value silently taken (``limit=abc&limit=`` was a
    search with the default limit)."""
    for name in dict.fromkeys(request.query_params.keys()):
        given = len(request.query_params.getlist(name))
        if given > 1:
            raise SearchError(
                f"{name}: given {given} times; give it once (a list, comma-separated)"
            )


def respond(body: Any, *, status: int = 200, media_type: str = JSON) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type=media_type)


def base_url(request: Request) -> str:
    return str(request.base_url).rstrip("/")


@attr.s
class CatalogueClient(BaseCoreClient):
    """stac-fastapi's core client, answered by the service's catalogue."""

    service: Service = attr.ib(default=None)
    _signer: PageTokens | None = attr.ib(default=None, init=False)
    _searching: threading.BoundedSemaphore = attr.ib(
        factory=lambda: threading.BoundedSemaphore(SEARCHES_AT_ONCE), init=False
    )

    def conformance_classes(self) -> list[str]:
        declared = set(OGC_PROCESSES) | set(EXTENSIONS) | set(GRIDDED) | set(TILES_CONFORMANCE)
        return sorted(set(super().conformance_classes()) | declared)

    def all_collections(self, **kwargs: Any) -> Response:
        request: Request = kwargs["request"]
        base = base_url(request)
        collections = self.service.catalogue.list_collections(viewer=viewer(request))
        shown = set(public_collections(request, [c.id for c in collections]))
        return respond(
            {
                "collections": [self._document(c, request) for c in collections if c.id in shown],
                "links": [
                    {"rel": "self", "type": JSON, "href": f"{base}/collections"},
                    {"rel": "root", "type": JSON, "href": f"{base}/"},
                    {"rel": "parent", "type": JSON, "href": f"{base}/"},
                ],
            }
        )

    def get_collection(self, collection_id: str, **kwargs: Any) -> Response:
        request: Request = kwargs["request"]
        check_public(request, collection_id)
        found = self.service.catalogue.get_collection(collection_id, viewer=viewer(request))
        return respond(self._document(found, request))

    def _document(self, collection: Collection, request: Request) -> dict[str, Any]:
        """A collection's document; a gridded one's links to its coverage and EDR queries."""
        base = base_url(request)
        extras = collection_extras(self.service, collection, base, viewer(request))
        return merged(collection_to_stac(collection, base), extras)

    def get_item(self, item_id: str, collection_id: str, **kwargs: Any) -> Response:
        request: Request = kwargs["request"]
        check_public(request, collection_id)
        item = self.service.catalogue.get_item(collection_id, item_id, viewer=viewer(request))
        return respond(item_to_stac(item, base_url(request)), media_type=GEOJSON)

    def item_collection(
        self,
        collection_id: str,
        bbox: Any = None,
        datetime: str | None = None,
        limit: str | None = None,
        token: str | None = None,
        **kwargs: Any,
    ) -> Response:
        request: Request = kwargs["request"]
        query = items_query(collection_id, request.query_params)
        check_public(request, collection_id)
        found = self.service.catalogue.get_collection(collection_id, viewer=viewer(request))
        href = f"{base_url(request)}/collections/{collection_id}/items"
        return self._page(request, query, href, dates=True, whole=found)

    def get_search(
        self,
        collections: list[str] | None = None,
        ids: list[str] | None = None,
        bbox: Any = None,
        intersects: Any = None,
        datetime: str | None = None,
        limit: str | None = None,
        **kwargs: Any,
    ) -> Response:
        request: Request = kwargs["request"]
        query = search_query(request.query_params)
        return self._page(request, query, f"{base_url(request)}/search")

    def post_search(self, search_request: Any, **kwargs: Any) -> Response:
        request: Request = kwargs["request"]
        body = search_request.model_extra or {}
        return self._page(request, body, f"{base_url(request)}/search", post=True)

    # -- paging ------------------------------------------------------------------------------
    def _tokens(self) -> PageTokens:
        if self._signer is None:
            self._signer = PageTokens(self.service.keys.key(TOKEN_KEY))
        return self._signer

    def _page(
        self,
        request: Request,
        query: Mapping[str, Any],
        href: str,
        *,
        post: bool = False,
        dates: bool = False,
        whole: Collection | None = None,
    ) -> Response:
        """One page of a search (``dates``: a date alone is its day); ``whole``: the
        collection whose items these are, for the count of an unfiltered first page."""
        with self._searching:  # the others wait outside the GIL (SEARCHES_AT_ONCE)
            return self._answer(request, query, href, post=post, dates=dates, whole=whole)

    def _answer(
        self,
        request: Request,
        query: Mapping[str, Any],
        href: str,
        *,
        post: bool,
        dates: bool,
        whole: Collection | None,
    ) -> Response:
        if not post:
            refuse_repeated(request)
        values = query if post else query_values(query)  # GET's text as JSON values
        fields = wanted_fields(values, post=post)
        given = {k: v for k, v in values.items() if v is not None and k not in ("token", "fields")}
        search = scoped(request, parse_search(given, viewer=viewer(request), dates=dates))
        token = query.get("token")
        if token is not None and not isinstance(token, str):
            raise SearchError("token: expected the string a next link gave")
        if token:
            search = replace(search, token=self._tokens().open(token, search))
        page: Page = (
            Page(items=[], matched=0)
            if search.collections == ()
            else self.service.catalogue.search(replace(search, count_to=COUNT_TO))
        )
        matched = page.matched
        if matched is None and search.token is None and page.next_token is None:
            matched = len(page.items)  # the whole answer is on this page
        if matched is None and whole is not None and unfiltered(search, whole):
            matched = self.service.catalogue.count(whole.id)
        base = base_url(request)
        links = [
            {"rel": "self", "type": GEOJSON, "href": str(request.url)},
            {"rel": "root", "type": JSON, "href": f"{base}/"},
        ]
        if page.next_token is not None:
            next_token = self._tokens().seal(page.next_token, search)
            if post:
                links.append(
                    {
                        "rel": "next",
                        "type": GEOJSON,
                        "href": href,
                        "method": "POST",
                        "body": {"token": next_token},
                        "merge": True,
                    }
                )
            else:
                params = {k: v for k, v in request.query_params.items() if k != "token"}
                params["token"] = next_token
                links.append(
                    {"rel": "next", "type": GEOJSON, "href": f"{href}?{urlencode(params)}"}
                )
        body: dict[str, Any] = {
            "type": "FeatureCollection",
            "features": [fields.shape(item_to_stac(item, base)) for item in page.items],
            "links": links,
            "numberReturned": len(page.items),
            "timeStamp": f"{dt.datetime.now(dt.UTC):%Y-%m-%dT%H:%M:%SZ}",
        }
        if matched is not None:
            body["numberMatched"] = matched
        return respond(body, media_type=GEOJSON)


def search_query(parameters: Mapping[str, str]) -> dict[str, Any]:
    """GET /search's query string as the search it asks (the text of each parameter), or
    UnknownParameter for one nearline does not take (a 400: never silently ignored)."""
    if unknown := sorted(set(parameters) - SEARCH_PARAMETERS):
        raise UnknownParameter(
            f"unknown search parameter {unknown[0]!r}; use "
            f"{', '.join(sorted(SEARCH_PARAMETERS - {'token'}))} (and the token a next link gives)"
        )
    return dict(parameters)


def wanted_fields(values: Mapping[str, Any], *, post: bool) -> Fields:
    """The Fields extension's ``fields`` of a search: GET's empty text, or none, is the whole
    item; POST's null is a 400 (stac-api-validator asks; leave it out instead)."""
    if "fields" not in values or (not post and values["fields"] in (None, "")):
        return Fields()
    if values["fields"] is None:
        raise SearchError("fields: null is not a fields object; leave it out, or give {}")
    return parse_fields(values["fields"])


def scoped(request: Request, search: Search) -> Search:
    """``search`` within the public collections, for an anonymous reader (of those it names,
    or all public ones; none: ``collections == ()``, nothing to find)."""
    public = doors_of(request).public
    if viewer(request) is not None or public is None or EVERY_COLLECTION in public:
        return search
    asked = list(search.collections) if search.collections is not None else sorted(public)
    return replace(search, collections=tuple(public_collections(request, asked)))


TITLE = "nearline"
STAC_PATHS = (  # stac-fastapi's routes that need a user (the landing page and /conformance don't)
    "/collections",
    "/collections/{collection_id}",
    "/collections/{collection_id}/items",
    "/collections/{collection_id}/items/{item_id}",
    "/search",
)
DESCRIPTION = (
    "Near-archive processing: search the archive (STAC API), deploy your own algorithms and "
    "order them next to the data (OGC API - Processes)."
)


@attr.s
class NearlineStacApi(StacApi):
    """stac-fastapi's app with nearline's landing page (JSON or, for browsers, HTML) and
    without its unauthenticated health routes."""

    def register_landing_page(self) -> None:
        client: CatalogueClient = self.client

        async def landing(request: Request) -> Response:
            accept = request.headers.get("accept", "")
            if "text/html" in accept and "json" not in accept.split(",")[0]:
                return HTMLResponse(landing_html(client.service, base_url(request)))
            page = client.landing_page(request=request)
            body = page if isinstance(page, dict) else dict(page)
            body["stac_version"] = STAC_VERSION  # as the items and collections (not 1.0.0)
            body["links"] = [*body.get("links", []), *_ogc_links(base_url(request))]
            return respond(body)

        self.router.add_api_route(
            "/",
            landing,
            methods=["GET"],
            name="Landing Page",
            summary="Landing page (JSON; HTML for browsers)",
        )

    def add_health_check(self) -> None:
        """No unauthenticated routes beyond /, /conformance and /api."""


def _ogc_links(base: str) -> list[dict[str, Any]]:
    return [
        queryables_link(f"{base}/queryables", "What a search's filter may name"),
        {
            "rel": "http://www.opengis.net/def/rel/ogc/1.0/processes",
            "type": "application/json",
            "title": "Processes (algorithms you may order)",
            "href": f"{base}/processes",
        },
        {
            "rel": "http://www.opengis.net/def/rel/ogc/1.0/job-list",
            "type": "application/json",
            "title": "Your jobs",
            "href": f"{base}/jobs",
        },
    ]


def build_app(service: Service) -> FastAPI:
    """stac-fastapi's app over the service's catalogue: the STAC routes and the landing page,
    every one but the landing page and /conformance behind a user's token."""
    settings = ApiSettings(
        stac_fastapi_title=TITLE,
        stac_fastapi_description=DESCRIPTION,
        stac_fastapi_version=__version__,
        openapi_url="/api",
        docs_url="/api.html",
        stac_fastapi_landing_id="nearline",
    )
    stac = NearlineStacApi(
        settings=settings,
        client=CatalogueClient(service=service, landing_page_id="nearline"),
        title=TITLE,
        description=DESCRIPTION,
        api_version=__version__,
        search_get_request_model=SearchGet,
        search_post_request_model=SearchPost,
        items_get_request_model=ItemsGet,
        middlewares=[],
        route_dependencies=[
            ([{"path": path, "method": "*"} for path in STAC_PATHS], [Depends(require_reader)])
        ],
    )
    return stac.app
