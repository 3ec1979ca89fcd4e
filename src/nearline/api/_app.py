"""The web service: one FastAPI app serving the STAC API (stac-fastapi over nearline's
catalogue), OGC API - Processes and jobs, subscriptions, asset downloads, map tiles of
gridded collections (OGC API - Tiles), the openEO API 1.2 face (/openeo/1.2) and an HTML
landing page for browsers. Each part's routes sit beside its handlers; this module puts them
together.

Every route needs ``Authorization: Bearer TOKEN`` except the landing page, /conformance, the
OpenAPI document at /api and openEO's discovery (_openeo.py). Pages from the origins the
operator names may call it from a browser (_cors.py; none by default). Every request gets a
request id, a line in the log and its latency in the service's metrics (_requests.py), and a
JSON body that escapes a lone UTF-16 surrogate is refused before any route reads it
(_surrogates.py); the metrics themselves are served apart, on the address ``nearline serve
--metrics`` names, never here.
"""

from __future__ import annotations

from fastapi import FastAPI

from nearline.api import _coverages as coverages
from nearline.api import _downloads as downloads
from nearline.api import _edr as edr
from nearline.api import _gridded as gridded
from nearline.api import _jobs as jobs
from nearline.api import _openapi as openapi
from nearline.api import _openeo as openeo
from nearline.api import _openeo_jobs as openeo_jobs
from nearline.api import _openeo_result as openeo_result
from nearline.api import _problems as problems
from nearline.api import _processes as processes
from nearline.api import _queryables as queryables
from nearline.api import _requests as requests
from nearline.api import _signin as signin
from nearline.api import _stac as stac
from nearline.api import _subscriptions as subscriptions
from nearline.api import _surrogates as surrogates
from nearline.api import _tiles as tiles
from nearline.api import _users as users
from nearline.api import _web as web
from nearline.api._cors import CrossOrigin, CrossOriginMiddleware
from nearline.orders import Service


def create_app(service: Service, *, cors: CrossOrigin | None = None) -> FastAPI:
    """The app over a started :class:`~nearline.orders.Service`.

    Parameters
    ----------
    service
        The started service whose catalogue, algorithms and jobs the app serves.
    cors
        The origins whose pages may call the app from a browser; None (the default): no
        CORS header is ever sent, and a browser on another origin reads nothing.
    """
    gridded.max_values(), tiles.overview_budget()  # a bad setting stops the start, saying which
    app = stac.build_app(service)
    app.state.service = service
    routers = (processes, users, jobs, downloads, subscriptions, queryables)
    for part in (*routers, coverages, edr, tiles, openeo, openeo_result, openeo_jobs):
        app.include_router(part.build_router())
    problems.install(app)
    openapi.install(app)
    web.install(app)
    signin.install(app, service)
    app.add_middleware(surrogates.RefuseLoneSurrogates)
    app.add_middleware(openeo.MergeSlashes)
    if cors is not None:  # inside the request log: refused preflights are logged too
        app.add_middleware(CrossOriginMiddleware, allowed=cors)
    app.add_middleware(requests.RequestLog, latency=service.metrics.request_seconds)
    return app
