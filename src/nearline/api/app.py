"""The web service: one FastAPI app serving the STAC API (stac-fastapi over nearline's
catalogue), OGC API - Processes and jobs, and an HTML landing page for browsers.

Every route needs ``Authorization: Bearer TOKEN`` except the landing page, /conformance and the
OpenAPI document at /api.
"""

from __future__ import annotations

from typing import Any

import attr
from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from stac_fastapi.api.app import StacApi
from stac_fastapi.types.config import ApiSettings

from nearline import __version__
from nearline.api import openapi, problems, web
from nearline.api.auth import require_user
from nearline.api.landing import landing_html
from nearline.api.routes import build_router
from nearline.api.stac import (
    CatalogueClient,
    ItemsGet,
    SearchGet,
    SearchPost,
    base_url,
    respond,
)
from nearline.api.subscriptions import build_router as build_subscriptions_router
from nearline.archive import STAC_VERSION
from nearline.orders import Service

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


def create_app(service: Service) -> FastAPI:
    """The app over a started :class:`~nearline.orders.Service`."""
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
            ([{"path": path, "method": "*"} for path in STAC_PATHS], [Depends(require_user)])
        ],
    )
    app = stac.app
    app.state.service = service
    app.include_router(build_router())
    app.include_router(build_subscriptions_router())
    problems.install(app)
    openapi.install(app)
    web.install(app)
    return app
