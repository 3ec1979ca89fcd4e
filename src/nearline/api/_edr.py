"""OGC API - Environmental Data Retrieval 1.0 on gridded collections: position (a point's
values through time), area (a polygon) and cube (a box) queries, as CoverageJSON or netCDF.

Values are the grid cell's holding each point; an area or cube is sampled on a regular
longitude/latitude lattice at about the grid's resolution (cells of an area's lattice outside
its polygon are null). Every item in ``datetime`` (none: every item) is a time step.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import shapely
from fastapi import APIRouter, Request
from fastapi.responses import Response

from nearline.api._adapter import ERRORS, OGC_ERROR, Reader, service_of
from nearline.api._coverage_query import CRS84, parse_box
from nearline.api._gridded import (
    COVERAGEJSON,
    NETCDF,
    find_gridded,
    find_layers,
    max_values,
)
from nearline.coverage import (
    Box,
    coveragejson,
    lattice,
    sample_points,
    write_samples_netcdf,
)
from nearline.errors import CoverageError
from nearline.orders import Service

BYTES_READ = "Nearline-Bytes-Read"
FORMATS = {"coveragejson": "covjson", "covjson": "covjson", "json": "covjson",
           "netcdf": "netcdf", "nc": "netcdf"}  # fmt: skip
PARAMETERS = frozenset(
    {"coords", "bbox", "datetime", "parameter-name", "parameter_names", "f", "crs", "z"}
)
SHAPES = {"position": ("Point", "MultiPoint"), "area": ("Polygon", "MultiPolygon")}
DATA_BODY = {
    "description": "CoverageJSON (a point series, a collection of them, or a grid), or netCDF",
    "content": {
        COVERAGEJSON: {"schema": {"type": "object"}},
        NETCDF: {"schema": {"type": "string", "format": "binary"}},
    },
}


def _one(request: Request) -> dict[str, str]:
    """The query parameters, each given once and each one EDR's, or a CoverageError."""
    params = request.query_params
    unknown = sorted(set(params) - PARAMETERS)
    if unknown:
        raise CoverageError(
            f"unknown parameter {unknown[0]!r}; an EDR query takes "
            f"{', '.join(sorted(PARAMETERS - {'parameter_names'}))}"
        )
    for name in params:
        if len(params.getlist(name)) > 1:
            raise CoverageError(f"{name}: given {len(params.getlist(name))} times; give it once")
    found = dict(params)
    if found.get("crs", CRS84[1]) not in CRS84:
        raise CoverageError(f"crs: only {CRS84[1]} (longitude, latitude) is offered")
    return found


def _geometry(query: str, coords: str | None) -> Any:
    """The WKT ``coords`` of a position or area query, checked for its kind."""
    kinds = " or ".join(kind.upper() for kind in SHAPES[query])
    if not coords:
        raise CoverageError(f"coords: a {query} query needs a WKT {kinds}")
    try:
        geometry = shapely.from_wkt(coords)
    except shapely.errors.GEOSException:
        raise CoverageError(f"coords={coords!r} is not WKT (e.g. POINT(10 45))") from None
    if geometry.geom_type not in SHAPES[query] or geometry.is_empty:
        raise CoverageError(
            f"coords: a {query} query takes a {kinds}, not a {geometry.geom_type.upper()}"
        )
    return geometry


def _bands(params: dict[str, str]) -> list[str] | None:
    text = params.get("parameter-name", params.get("parameter_names"))
    if text is None:
        return None
    return [name.strip() for name in text.split(",") if name.strip()]


def _box(text: str | None) -> Box:
    if not text:
        raise CoverageError("bbox: a cube query needs west,south,east,north in degrees")
    return parse_box(text)


def _where(
    query: str, params: dict[str, str], grid: str
) -> tuple[np.ndarray, np.ndarray, tuple[int, ...], np.ndarray | None]:
    """The longitudes and latitudes a query samples, their layout, and which of them lie
    inside an area's polygon (None: all)."""
    if query == "position":
        xy = shapely.get_coordinates(_geometry(query, params.get("coords")))
        for lon, lat in xy:
            Box(lon, lat, lon, lat)  # each point checked as a box of no size
        return xy[:, 0], xy[:, 1], (len(xy),), None
    polygon = None
    if query == "area":
        polygon = _geometry(query, params.get("coords"))
        box = Box(*polygon.bounds)
    else:
        box = _box(params.get("bbox"))
    lon, lat = np.meshgrid(*lattice(grid, box))
    inside = None if polygon is None else shapely.contains_xy(polygon, lon, lat)
    return lon, lat, lon.shape, inside


def edr_response(service: Service, request: Request, collection_id: str, query: str) -> Response:
    """The answer to an EDR ``query`` on a gridded collection."""
    gridded = find_gridded(service, request, collection_id)  # a 404 first, whatever is asked
    params = _one(request)
    chosen = FORMATS.get(params.get("f", "CoverageJSON").lower())
    if chosen is None:
        raise CoverageError(f"f={params['f']!r}: EDR answers as CoverageJSON or netCDF")
    lon, lat, shape, inside = _where(query, params, gridded.grid)
    layers = find_layers(service, request, gridded, params.get("datetime"), latest=False)
    samples = sample_points(
        layers, grid=gridded.grid, lon=lon, lat=lat, bands=_bands(params), shape=shape,
        inside=inside, limit=max_values(),
    )  # fmt: skip
    headers = {BYTES_READ: str(samples.bytes_read)}
    if chosen == "covjson":
        body = orjson.dumps(coveragejson(samples))
        return Response(body, media_type=COVERAGEJSON, headers=headers)
    name = f"{collection_id}-{query}.nc"
    with tempfile.TemporaryDirectory(dir=service.places.scratch, prefix="edr-") as folder:
        content = write_samples_netcdf(samples, Path(folder) / name).read_bytes()
    headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return Response(content, media_type=NETCDF, headers=headers)


QUERIES = {  # query: (summary, its place parameter, what that is)
    "position": ("A point's values through time (EDR position)", "coords",
                 "POINT(lon lat) or MULTIPOINT in degrees"),
    "area": ("Values inside a polygon (EDR area)", "coords",
             "POLYGON or MULTIPOLYGON in degrees, sampled at about the grid's resolution"),
    "cube": ("Values in a box (EDR cube)", "bbox",
             "west,south,east,north in degrees, sampled at about the grid's resolution"),
}  # fmt: skip
OPTIONAL = {
    "datetime": "an instant, a date or an interval a/b (none: every item)",
    "parameter-name": "bands, comma-separated (none: every band)",
    "crs": "only CRS84 (longitude, latitude)",
    "f": "CoverageJSON (the default) or netCDF",
}


BBOX_SCHEMA = {"type": "array", "items": {"type": "number"}, "minItems": 4, "maxItems": 4}


def _parameter(name: str, description: str, *, required: bool) -> dict[str, Any]:
    """A query parameter as EDR's OpenAPI building blocks define it: form style, not
    exploded, a string (bbox: numbers, comma-separated)."""
    schema = BBOX_SCHEMA if name == "bbox" else {"type": "string"}
    return {"name": name, "in": "query", "required": required, "style": "form",
            "explode": False, "description": description, "schema": schema}  # fmt: skip


def _endpoint(query: str) -> Any:
    """The route function of one query; its parameters, read from the query string by
    :func:`edr_response`, are declared to the OpenAPI document by :func:`build_router`."""

    def answer(collection_id: str, request: Request, user: Reader) -> Response:
        return edr_response(service_of(request), request, collection_id, query)

    return answer


def build_router() -> APIRouter:
    router = APIRouter(responses={**ERRORS, 413: OGC_ERROR}, tags=["Environmental Data Retrieval"])
    for query, (summary, place, what) in QUERIES.items():
        parameters = [_parameter(place, what, required=True)]
        parameters += [_parameter(name, text, required=False) for name, text in OPTIONAL.items()]
        router.add_api_route(
            f"/collections/{{collection_id}}/{query}", _endpoint(query), methods=["GET"],
            summary=summary, response_class=Response, responses={200: DATA_BODY}, name=query,
            openapi_extra={"parameters": parameters},
        )  # fmt: skip
    return router
