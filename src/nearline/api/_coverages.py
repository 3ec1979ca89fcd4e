"""OGC API - Coverages on gridded collections: ``/collections/{id}/coverage`` (a subset as
Cloud-Optimized GeoTIFF or CF netCDF-4), its ``domainset`` and its ``rangetype``.

The coverage is the collection's latest item unless ``datetime`` or ``subset=time(...)``
asks for others (GeoTIFF holds one time; netCDF any number). Each answer says in the
``Nearline-Bytes-Read`` header what reading it cost: the bytes of the files read, only the
chunks the window needs. A file is made whole in scratch before a byte is sent: a refused
or failed request sends a problem document, never part of a file.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from nearline.api._adapter import ERRORS, OGC_ERROR, Reader, service_of
from nearline.api._coverage_query import parse_coverage_query
from nearline.api._gridded import (
    GEOTIFF,
    NETCDF,
    Gridded,
    find_gridded,
    find_layers,
    max_values,
)
from nearline.coverage import Subset, read_bands, read_subset, write_geotiff, write_netcdf
from nearline.errors import CoverageError
from nearline.grid import get_grid
from nearline.orders import Service

BYTES_READ = "Nearline-Bytes-Read"
FORMATS = {  # f=... and the media types Accept may name
    "geotiff": "geotiff", "tiff": "geotiff", "tif": "geotiff", "cog": "geotiff",
    "image/tiff": "geotiff", "netcdf": "netcdf", "nc": "netcdf", "netcdf4": "netcdf",
    "application/x-netcdf": "netcdf", "application/netcdf": "netcdf",
}  # fmt: skip
WRITERS: dict[str, tuple[Callable[[Subset, Path], Path], str, str]] = {
    "geotiff": (write_geotiff, GEOTIFF, "tif"),
    "netcdf": (write_netcdf, NETCDF, "nc"),
}
FILE_BODY = {
    "description": "The subset as a Cloud-Optimized GeoTIFF or CF netCDF-4; "
    "Nearline-Bytes-Read says how many bytes of the files reading it took",
    "content": {
        GEOTIFF: {"schema": {"type": "string", "format": "binary"}},
        NETCDF: {"schema": {"type": "string", "format": "binary"}},
    },
}
DOCS = dict([
    ("subset", "Lon(w:e),Lat(s:n) in degrees, or x(a:b),y(c:d) in the grid's own coordinates "
               "(metres on IGH), and time(\"a\":\"b\"); * leaves an end open"),
    ("bbox", "west,south,east,north in degrees (CRS84)"),
    ("bbox-crs", "only http://www.opengis.net/def/crs/OGC/1.3/CRS84"),
    ("datetime", "an RFC 3339 instant, a date or an interval a/b; none: the latest item"),
    ("properties", "band names, comma-separated (none: every band)"),
    ("scale-factor", "each side divided by this number (>= 1)"),
    ("scale-size", "the output's size: x(width),y(height); also scaleSize, as GDAL sends it"),
    ("scale-axes", "each side divided by its own number: x(2),y(4)"),
    ("f", "geotiff or netcdf (default: Accept, else GeoTIFF for one time, netCDF for more)"),
])  # fmt: skip


def _format(request: Request, layers: int) -> str:
    """The output format a request asks for (``f``, else ``Accept``), or the default."""
    asked = request.query_params.get("f")
    if asked is not None:
        chosen = FORMATS.get(asked.lower())
        if chosen is None:
            raise CoverageError(f"f={asked!r}: a coverage comes as geotiff or netcdf")
        return chosen
    for part in request.headers.get("accept", "").split(","):
        chosen = FORMATS.get(part.split(";")[0].strip().lower())
        if chosen is not None:
            return chosen
    return "geotiff" if layers == 1 else "netcdf"


def coverage_response(service: Service, request: Request, collection_id: str) -> Response:
    """The subset a coverage request asks for, as a file made whole before it is sent."""
    gridded = find_gridded(service, request, collection_id)
    params = {name: request.query_params.getlist(name) for name in request.query_params}
    query = parse_coverage_query(get_grid(gridded.grid), params)
    layers = find_layers(service, request, gridded, query.when, latest=True)
    writer, media_type, suffix = WRITERS[_format(request, len(layers))]
    if writer is write_geotiff and len(layers) > 1:
        raise CoverageError(
            f"GeoTIFF holds one time, and this request covers {len(layers)} items; narrow "
            "datetime to one, or ask for f=netcdf"
        )
    subset = read_subset(layers, grid=gridded.grid, target=query.target, bands=query.bands,
                         limit=max_values())  # fmt: skip
    name = f"{collection_id}-coverage.{suffix}"
    with tempfile.TemporaryDirectory(dir=service.places.scratch, prefix="coverage-") as folder:
        content = writer(subset, Path(folder) / name).read_bytes()
    headers = {"Content-Disposition": f'attachment; filename="{name}"',
               BYTES_READ: str(subset.bytes_read)}  # fmt: skip
    return Response(content, media_type=media_type, headers=headers)


def domainset(service: Service, request: Request, gridded: Gridded) -> dict[str, Any]:
    """The coverage's domain, as GDAL's OGC API driver reads it: the grid's x and y axes in
    its own CRS and the items' times."""
    grid = get_grid(gridded.grid)
    layers = find_layers(service, request, gridded, None, latest=False)
    xmin, ymin, xmax, ymax = grid.extent
    dx, dy = grid.cell_size
    units = "m" if grid.crs_is_projected else "deg"
    labels = ["x", "y"] if grid.crs_is_projected else ["Lon", "Lat"]
    return {
        "type": "DomainSet",
        "generalGrid": {
            "type": "GeneralGridCoverage",
            "srsName": grid.crs,
            "axisLabels": [*labels, "time"],
            "axis": [
                {
                    "type": "RegularAxis",
                    "axisLabel": labels[0],
                    "lowerBound": xmin,
                    "upperBound": xmax,
                    "uomLabel": units,
                    "resolution": dx,
                },
                {
                    "type": "RegularAxis",
                    "axisLabel": labels[1],
                    "lowerBound": ymin,
                    "upperBound": ymax,
                    "uomLabel": units,
                    "resolution": -dy,
                },
                {
                    "type": "IrregularAxis",
                    "axisLabel": "time",
                    "uomLabel": "s",
                    "coordinate": [
                        layer.start.isoformat().replace("+00:00", "Z") for layer in layers
                    ],
                },
            ],
            "gridLimits": {
                "type": "GridLimits",
                "srsName": "http://www.opengis.net/def/crs/OGC/0/Index2D",
                "axisLabels": ["i", "j"],
                "axis": [
                    {
                        "type": "IndexAxis",
                        "axisLabel": "i",
                        "lowerBound": 0,
                        "upperBound": grid.width - 1,
                    },
                    {
                        "type": "IndexAxis",
                        "axisLabel": "j",
                        "lowerBound": 0,
                        "upperBound": grid.height - 1,
                    },
                ],
            },
        },
    }


def rangetype(service: Service, request: Request, gridded: Gridded) -> dict[str, Any]:
    """The coverage's bands as a SWE DataRecord: float32 physical values, their units."""
    latest = find_layers(service, request, gridded, None, latest=True)[0]
    fields = [
        {"type": "Quantity", "id": name, "name": name, "description": info.long_name,
         "definition": "http://www.opengis.net/def/dataType/OGC/0/float32",
         "uom": {"type": "UnitReference", "code": info.units}}
        for name, info in read_bands(latest, get_grid(gridded.grid)).items()
    ]  # fmt: skip
    return {"type": "DataRecord", "field": fields}


def build_router() -> APIRouter:
    router = APIRouter(responses=ERRORS, tags=["Coverages"])
    path = "/collections/{collection_id}/coverage"

    @router.get(
        path,
        summary="A gridded collection's coverage, or a subset of it",
        description="Only the chunks the subset needs are read. A collection that is not "
        "gridded has no coverage (404); a request over the operator's limit is a 413.",
        response_class=Response,
        responses={200: FILE_BODY, 413: OGC_ERROR},
    )
    def coverage(
        collection_id: str,
        request: Request,
        user: Reader,
        subset: Annotated[list[str] | None, Query(description=DOCS["subset"])] = None,
        bbox: Annotated[str | None, Query(description=DOCS["bbox"])] = None,
        bbox_crs: Annotated[
            str | None, Query(alias="bbox-crs", description=DOCS["bbox-crs"])
        ] = None,
        datetime: Annotated[str | None, Query(description=DOCS["datetime"])] = None,
        properties: Annotated[str | None, Query(description=DOCS["properties"])] = None,
        scale_factor: Annotated[
            str | None, Query(alias="scale-factor", description=DOCS["scale-factor"])
        ] = None,
        scale_size: Annotated[
            str | None, Query(alias="scale-size", description=DOCS["scale-size"])
        ] = None,
        scale_axes: Annotated[
            str | None, Query(alias="scale-axes", description=DOCS["scale-axes"])
        ] = None,
        f: Annotated[str | None, Query(description=DOCS["f"])] = None,
    ) -> Response:
        """Every parameter is read again from the query string, where the unknown ones are
        refused; these declare them to the OpenAPI document."""
        return coverage_response(service_of(request), request, collection_id)

    @router.get(f"{path}/domainset", summary="The coverage's domain (axes, CRS, times)")
    def coverage_domainset(collection_id: str, request: Request, user: Reader) -> dict:
        service = service_of(request)
        return domainset(service, request, find_gridded(service, request, collection_id))

    @router.get(f"{path}/rangetype", summary="The coverage's bands and their units")
    def coverage_rangetype(collection_id: str, request: Request, user: Reader) -> dict:
        service = service_of(request)
        return rangetype(service, request, find_gridded(service, request, collection_id))

    return router
