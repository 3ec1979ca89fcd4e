"""What the Coverages, EDR and Tiles routes share: a gridded collection as its viewer may see it (a
collection whose items carry ``nearline:grid``), its items in a time range as coverage layers
read where they lie, the operator's limit, and the extra parts of its collection document
(links to its coverage and map tiles, EDR's ``data_queries`` and ``parameter_names``).

A collection that is not gridded offers none of them: its coverage, queries and tiles are a
404 saying so, and its document carries none of them. Another user's private collection is a 404, as
everywhere in the catalogue."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO
from urllib.parse import quote

from fastapi import Request

from nearline.api._auth import check_public, viewer
from nearline.api._tilesets import tilesets_link
from nearline.archive import (
    Collection,
    Item,
    Search,
    is_local,
    is_object_url,
    parse_datetime,
    rfc3339,
)
from nearline.coverage import DEFAULT_MAX_VALUES, LIMIT_SETTING, Layer
from nearline.errors import ConfigError, CoverageError, NotFound, ServiceError
from nearline.orders import Service

GRID = "nearline:grid"
BANDS = "nearline:bands"
READER = "nearline:reader"
COMPOSITE_READER = "nearline-composite"  # the files the map tiles are drawn of
GRIDDED_PROBE = 8  # items looked at for a grid: a few pictures may come before a composite
UNITS = "nearline:units"  # band: CF units, and band: CF long_name (items catalogued since)
LONG_NAMES = "nearline:long_names"
MAX_LAYERS = 10_000  # a page of the catalogue: a request over more layers is over the limit too
OGC_REL = "http://www.opengis.net/def/rel/ogc/1.0/"
CRS84 = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
GEOTIFF = "image/tiff; application=geotiff"
NETCDF = "application/x-netcdf"
COVERAGEJSON = "application/prs.coverage+json"
GREGORIAN = "http://www.opengis.net/def/uom/ISO-8601/0/Gregorian"
EDR_QUERIES = ("position", "area", "cube")
COVERAGES_1 = "http://www.opengis.net/spec/ogcapi-coverages-1/1.0/conf/"
EDR_1 = "http://www.opengis.net/spec/ogcapi-edr-1/1.0/conf/"
# what /conformance declares of the two: exactly what the routes here answer (no HTML, no
# CRS other than the grid's own and CRS84, no GeoJSON, no radius, trajectory or corridor)
CONFORMANCE = [
    *(COVERAGES_1 + name for name in ("core", "geodata-coverage", "coverage-subset",
      "coverage-rangesubset", "coverage-bbox", "coverage-datetime", "coverage-scaling",
      "geotiff", "netcdf")),
    *(EDR_1 + name for name in ("core", "collections", "json", "covjson", "oas30")),
]  # fmt: skip


@dataclass(frozen=True)
class Gridded:
    """A gridded collection: its catalogue entry, its grid's name, its bands (with their
    units and long names where its items carry them), and whether map tiles are drawn of it
    (its files are composites; a GEOS-5 reduction's are not: the tiles' colours and legends
    are the composite bands')."""

    collection: Collection
    grid: str
    bands: tuple[str, ...]
    units: Mapping[str, str] = field(default_factory=dict)
    long_names: Mapping[str, str] = field(default_factory=dict)
    drawn: bool = False


def gridded_or_none(service: Service, collection: Collection, user: str | None) -> Gridded | None:
    """``collection`` as gridded, if one of its first items (in time) names a grid: an
    algorithm's output collection holds its composites beside their quicklook pictures."""
    search = Search(collections=(collection.id,), limit=GRIDDED_PROBE, viewer=user)
    found = [item for item in service.catalogue.search(search).items if GRID in item.properties]
    if not found:
        return None
    first = found[0].properties
    return Gridded(collection, str(first[GRID]), tuple(first.get(BANDS, ())),
                   dict(first.get(UNITS) or {}), dict(first.get(LONG_NAMES) or {}),
                   drawn=first.get(READER) == COMPOSITE_READER)  # fmt: skip


def find_gridded(service: Service, request: Request, collection_id: str) -> Gridded:
    """The gridded collection ``collection_id`` as the request's user may see it.

    Raises
    ------
    NotFound
        No such collection for this user, or one that is not gridded.
    """
    check_public(request, collection_id)
    user = viewer(request)
    found = service.catalogue.get_collection(collection_id, viewer=user)
    gridded = gridded_or_none(service, found, user)
    if gridded is None:
        raise NotFound(
            f"collection {collection_id!r} is not gridded (its items name no grid): it offers "
            "no coverage, EDR queries nor map tiles; search its items instead"
        )
    return gridded


def find_layers(
    service: Service, request: Request, gridded: Gridded, when: str | None, *, latest: bool
) -> list[Layer]:
    """The collection's items within ``when`` (a STAC datetime; a date stands for its day),
    in time order, as layers read where their files lie; with ``latest`` and no ``when``,
    the latest item alone.

    Raises
    ------
    CoverageError
        ``when`` is not a datetime, or no item lies in it (the message gives their span).
    """
    start, end = parse_datetime(when, dates=True) if when else (None, None)
    search = Search(collections=(gridded.collection.id,), start=start, end=end,
                    limit=MAX_LAYERS, viewer=viewer(request))  # fmt: skip
    items = [
        item
        for item in service.catalogue.search(search).items
        if item.properties.get(GRID) == gridded.grid
    ]  # not the quicklooks beside them
    if not items:
        _, first, last = gridded.collection.extent
        raise CoverageError(
            f"datetime {when}: no item of {gridded.collection.id} lies in it; its items span "
            f"{rfc3339(first)} to {rfc3339(last)}"
        )
    if latest and not when:
        items = items[-1:]
    return [Layer(item.id, item.start, item.end or item.start, opener(service, item))
            for item in items]  # fmt: skip


def opener(service: Service, item: Item) -> Callable[[], BinaryIO]:
    """How to open an item's data file where it lies: on disk, or in a bucket (ranged reads).

    Raises
    ------
    ServiceError
        A file kept in a bundle, which is not read in place (501).
    """
    location = item.assets["data"].location
    if is_local(location):
        return lambda: open(location, "rb")
    if is_object_url(location):
        return lambda: service.stores.open(location)
    raise ServiceError(
        f"item {item.id}'s file lies in an archive bundle, which coverages do not read in "
        "place; download it whole instead",
        status=501,
    )


def max_values() -> int:
    """The operator's limit on the values one request reads (``NEARLINE_COVERAGE_MAX_VALUES``).

    Raises
    ------
    ConfigError
        The setting is not a whole number of at least 1.
    """
    text = os.environ.get(LIMIT_SETTING)
    if text is None:
        return DEFAULT_MAX_VALUES
    if not text.strip().isdigit() or int(text) < 1:
        raise ConfigError(f"{LIMIT_SETTING}: expected a whole number of values >= 1, got {text!r}")
    return int(text)


def collection_extras(service: Service, collection: Collection, base: str,
                      user: str | None) -> dict[str, Any]:  # fmt: skip
    """What a gridded collection's document adds (links to its coverage, EDR queries and map
    tilesets, ``data_queries``, ``parameter_names``, the extent's CRS and TRS); nothing for
    another."""
    gridded = gridded_or_none(service, collection, user)
    if gridded is None:
        return {}
    href = f"{base}/collections/{quote(collection.id, safe='')}"
    links = [
        {"rel": f"{OGC_REL}coverage", "type": GEOTIFF, "title": "The coverage as GeoTIFF",
         "href": f"{href}/coverage?f=geotiff"},
        {"rel": f"{OGC_REL}coverage", "type": NETCDF, "title": "The coverage as netCDF",
         "href": f"{href}/coverage?f=netcdf"},
        {"rel": f"{OGC_REL}coverage-domainset", "type": "application/json",
         "title": "The coverage's domain", "href": f"{href}/coverage/domainset"},
        {"rel": f"{OGC_REL}coverage-rangetype", "type": "application/json",
         "title": "The coverage's bands", "href": f"{href}/coverage/rangetype"},
        *({"rel": "data", "type": COVERAGEJSON, "title": f"EDR {query} query",
           "href": f"{href}/{query}"} for query in EDR_QUERIES),
        *([tilesets_link(base, collection.id)] if gridded.drawn else []),
    ]  # fmt: skip
    return {
        "links": links,
        "data_queries": {query: _data_query(href, query) for query in EDR_QUERIES},
        "parameter_names": {name: _parameter(name) for name in gridded.bands},
        "crs": [CRS84],
        "output_formats": ["CoverageJSON", "netCDF"],
        "nearline:grid": gridded.grid,
    }


def _data_query(href: str, query: str) -> dict[str, Any]:
    return {"link": {
        "href": f"{href}/{query}", "rel": "data", "type": COVERAGEJSON,
        "title": f"{query.capitalize()} query",
        "variables": {
            "title": f"{query.capitalize()} query", "query_type": query,
            "output_formats": ["CoverageJSON", "netCDF"],
            "default_output_format": "CoverageJSON",
            "crs_details": [{"crs": "CRS84", "wkt": _CRS84_WKT}],
        },
    }}  # fmt: skip


def _parameter(name: str) -> dict[str, Any]:
    return {"type": "Parameter", "id": name, "description": {"en": name},
            "observedProperty": {"id": name, "label": {"en": name}}}  # fmt: skip


_CRS84_WKT = (
    'GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],'
    'PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],AXIS["Lon",EAST],AXIS["Lat",NORTH]]'
)


def merged(document: dict[str, Any], extras: dict[str, Any]) -> dict[str, Any]:
    """A collection document with ``extras`` in: their links after its own, the extent's
    CRS and TRS named (EDR asks), the rest beside its fields."""
    if not extras:
        return document
    links = [*document.get("links", []), *extras["links"]]
    extent = document.get("extent", {})
    extent = {
        **extent,
        "spatial": {**extent.get("spatial", {}), "crs": CRS84},
        "temporal": {**extent.get("temporal", {}), "trs": GREGORIAN},
    }
    rest = {key: value for key, value in extras.items() if key != "links"}
    return {**document, **rest, "extent": extent, "links": links}
