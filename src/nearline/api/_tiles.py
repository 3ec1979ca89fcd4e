"""OGC API - Tiles for gridded collections: map tiles (PNG) of the day's composite, their
tilesets, TileJSON and legend, and the tile matrix sets; with the catalogue's doors (a token,
or an anonymous reader of public collections) and its visibility (another user's private
collection is a 404, as if it did not exist).

A collection is gridded when its items carry ``nearline:grid`` (the composites' reader
catalogues them so); a tile is drawn from one item's ``data`` file: the one of the day
``datetime`` names, else the newest (nearline.tiles draws it, from overviews made once per
file, and keeps it in a bounded cache under the service's data folder).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from nearline.api._adapter import ERRORS, service_of
from nearline.api._auth import require_reader, viewer
from nearline.api._gridded import COMPOSITE_READER, GRIDDED_PROBE, READER, find_gridded
from nearline.api._gridded import opener as open_item
from nearline.api._stac import base_url, respond
from nearline.api._tilesets import (
    PNG,
    tile_matrix_set_document,
    tile_matrix_sets,
    tilejson,
    tileset,
    tilesets_list,
)
from nearline.archive import Collection, Item, is_local, parse_search
from nearline.errors import InvalidRequest, ServiceError
from nearline.orders import Service
from nearline.tiles import (
    OVERVIEW_BYTES,
    MapTiles,
    NotAComposite,
    Source,
    TileNotFound,
    check_tile,
    local_source,
    object_source,
    tile_matrix_set,
)
from nearline.units import parse_size

TILE_PARAMETERS = {"band", "datetime"}
Band = Annotated[
    str | None,
    Query(
        description="A band of the composite, or ndvi-index (the default): /map/legend lists them"
    ),
]
Datetime = Annotated[
    str | None,
    Query(
        description="The day whose composite to draw (a date, a date-time or an interval, "
        "RFC 3339): the newest composite within it; none: the newest of all"
    ),
]
TILE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The tile: 256 x 256 RGBA, colours as the legend gives them, transparent "
        "where there is no data",
        "content": {PNG: {"schema": {"type": "string", "format": "binary"}}},
    }
}


OVERVIEWS_SETTING = "NEARLINE_TILES_OVERVIEWS"


def map_tiles(request: Request) -> MapTiles:
    """The app's tiles, kept beside the service's data (made on first use), their overviews
    within the operator's budget (``NEARLINE_TILES_OVERVIEWS``, a size: 4GiB by default)."""
    state = request.app.state
    if getattr(state, "map_tiles", None) is None:
        folder = service_of(request).places.data / "tiles"
        state.map_tiles = MapTiles(folder, overview_bytes=overview_budget())
    return state.map_tiles


def overview_budget() -> int:
    """What the tiles' overviews may take on disk (``NEARLINE_TILES_OVERVIEWS``).

    Raises
    ------
    ConfigError
        The setting is not a size.
    """
    text = os.environ.get(OVERVIEWS_SETTING)
    return OVERVIEW_BYTES if text is None else parse_size(text, what=OVERVIEWS_SETTING)


def gridded(request: Request, collection_id: str) -> Collection:
    """The collection, if the caller may see it and it is gridded with composites; else a 404
    (the same test of gridded as the coverage's, :func:`nearline.api._gridded.find_gridded`)."""
    found = find_gridded(service_of(request), request, collection_id)
    if not found.drawn:
        raise NotAComposite(
            f"collection {collection_id!r} is gridded, but its files are not Pathfinder "
            "composites, whose bands the map tiles' colours and legends are made for: ask "
            "its coverage or EDR queries instead"
        )
    return found.collection


def composite_of(request: Request, collection: Collection, datetime: str | None) -> Source:
    """The collection's composite of ``datetime`` (the newest within it; none: the newest of
    all), where its file lies: on the service's disks or in a bucket; a 404 naming the
    collection's time span if there is none."""
    query: dict[str, Any] = {
        "collections": [collection.id],
        "limit": GRIDDED_PROBE,
        "sortby": [{"field": "properties.datetime", "direction": "desc"}],
    }
    if datetime is not None:
        query["datetime"] = datetime
    page = service_of(request).catalogue.search(
        parse_search(query, viewer=viewer(request), dates=True)
    )
    drawn = [item for item in page.items if item.properties.get(READER) == COMPOSITE_READER]
    if not drawn:  # (an order's quicklooks lie beside its composites)
        _, start, end = collection.extent
        span = f"{start:%Y-%m-%d} to {end:%Y-%m-%d}" if start and end else "no days yet"
        raise TileNotFound(
            f"collection {collection.id!r} has no composite at {datetime}; it holds {span}"
        )
    return _source(service_of(request), drawn[0])


def _source(service: Service, item: Item) -> Source:
    asset = item.assets.get("data")
    if asset is None:
        raise NotAComposite(f"item {item.id!r} has no data file to draw tiles from")
    if is_local(asset.location):
        return local_source(Path(asset.location))
    try:
        opener = open_item(service, item)
    except ServiceError:  # in a bundle: not read in place
        raise NotAComposite(
            f"item {item.id!r}'s file lies in an archive bundle, which tiles are not drawn "
            "from in place; download it whole instead"
        ) from None
    return object_source(item.id, asset.location, asset.sha256 or asset.location, opener)


def day_composite(
    request: Request, collection_id: str, datetime: str | None
) -> tuple[Collection, Source]:
    """What a tile, the legend or TileJSON asks for: the gridded collection (a 404 if the
    caller may not see it) and its composite of ``datetime``; a 400 for a parameter that is
    not ``band`` or ``datetime``."""
    refuse_unknown(request)
    found = gridded(request, collection_id)
    return found, composite_of(request, found, datetime)


def refuse_unknown(request: Request) -> None:
    if unknown := sorted(set(request.query_params) - TILE_PARAMETERS):
        raise InvalidRequest(f"unknown parameter {unknown[0]!r} of a tile; use band, datetime")


def title_of(collection: Collection) -> str:
    return collection.title or collection.id


def build_router() -> APIRouter:
    router = APIRouter(responses=ERRORS, dependencies=[Depends(require_reader)], tags=["Map tiles"])
    json_route: dict[str, Any] = {"response_class": Response}

    @router.get("/tileMatrixSets", summary="The tile matrix sets tiles are served in", **json_route)
    def matrix_sets(request: Request) -> Response:
        return respond(tile_matrix_sets(base_url(request)))

    @router.get(
        "/tileMatrixSets/{tile_matrix_set_id}",
        summary="A tile matrix set's definition (OGC TMS 2.0)",
        **json_route,
    )
    def matrix_set(tile_matrix_set_id: str) -> Response:
        return respond(tile_matrix_set_document(tile_matrix_set_id))

    @router.get(
        "/collections/{collection_id}/map/tiles",
        summary="A gridded collection's map tilesets",
        operation_id="collection.map.getTileSetsList",
        **json_route,
    )
    def collection_tilesets(collection_id: str, request: Request) -> Response:
        found = gridded(request, collection_id)
        return respond(tilesets_list(base_url(request), found.id, title_of(found)))

    @router.get(
        "/collections/{collection_id}/map/tiles/{tile_matrix_set_id}",
        summary="A map tileset: its tile matrix set, limits and tiles' URL template",
        operation_id="collection.map.getTileSet",
        **json_route,
    )
    def collection_tileset(
        collection_id: str, tile_matrix_set_id: str, request: Request
    ) -> Response:
        found = gridded(request, collection_id)
        tile_matrix_set(tile_matrix_set_id)  # a 404 for an unknown one
        bands = map_tiles(request).bands(composite_of(request, found, None))
        return respond(
            tileset(base_url(request), found.id, tile_matrix_set_id, title_of(found), bands)
        )

    @router.get(
        "/collections/{collection_id}/map/tiles/{tile_matrix_set_id}/tilejson.json",
        summary="TileJSON of the WebMercatorQuad map tiles, for web maps",
        **json_route,
    )
    def collection_tilejson(
        collection_id: str,
        tile_matrix_set_id: str,
        request: Request,
        band: Band = None,
        datetime: Datetime = None,
    ) -> Response:
        found, source = day_composite(request, collection_id, datetime)
        if tile_matrix_set_id != "WebMercatorQuad":
            raise TileNotFound("TileJSON describes WebMercatorQuad tiles only")
        map_tiles(request).style(source, band)  # a 400 for a band it has not
        query = {k: v for k, v in (("band", band), ("datetime", datetime)) if v is not None}
        return respond(tilejson(base_url(request), found.id, title_of(found), query))

    @router.get(
        "/collections/{collection_id}/map/legend",
        summary="The legend of a band's map tiles: the values each colour stands for",
        **json_route,
    )
    def collection_legend(
        collection_id: str, request: Request, band: Band = None, datetime: Datetime = None
    ) -> Response:
        _, source = day_composite(request, collection_id, datetime)
        tiles = map_tiles(request)
        return respond({**tiles.legend(source, band), "bands": tiles.bands(source)})

    @router.get(
        "/collections/{collection_id}/map/tiles/{tile_matrix_set_id}/{tile_matrix}/{tile_row}/{tile_col}",
        summary="A map tile of the day's composite (PNG)",
        operation_id="collection.map.getTile",
        response_class=Response,
        responses=TILE_RESPONSES,
    )
    def collection_tile(
        collection_id: str,
        tile_matrix_set_id: str,
        tile_matrix: int,
        tile_row: int,
        tile_col: int,
        request: Request,
        band: Band = None,
        datetime: Datetime = None,
    ) -> Response:
        check_tile(tile_matrix_set_id, tile_matrix, tile_row, tile_col)  # 404 before any file
        _, source = day_composite(request, collection_id, datetime)
        png = map_tiles(request).tile(
            source, tile_matrix_set_id, tile_matrix, tile_row, tile_col, band
        )
        return Response(png, media_type=PNG)

    return router
