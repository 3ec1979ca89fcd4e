"""The documents of OGC API - Tiles for a gridded collection's map tiles: the tilesets list,
a tileset's metadata (Tile Matrix Set and Tileset Metadata 2.0), the tile matrix sets
themselves (morecantile's definitions of the OGC registry's), and TileJSON for web maps.
Plain functions of the request's base URL and the collection: no HTTP here."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from nearline.tiles import MAX_ZOOM, TILE_MATRIX_SETS, tile_matrix_set

JSON = "application/json"
PNG = "image/png"
OGC_REL = "http://www.opengis.net/def/rel/ogc/1.0/"
TILESETS_MAP = OGC_REL + "tilesets-map"
TILES = "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/"
# declared in /conformance: what the tests and the OGC suite hold the service to. Not
# declared: dataset-tilesets (no tiles of the whole landing page), collections-selection,
# and the vector and coverage encodings (mvt, geojson, tiff, netcdf, jpeg)
TILES_CONFORMANCE = [
    TILES + name
    for name in ("core", "tileset", "tilesets-list", "geodata-tilesets", "datetime", "png", "oas30")
]


def collection_url(base: str, collection: str) -> str:
    return f"{base}/collections/{quote(collection, safe='')}"


def tilesets_link(base: str, collection: str) -> dict[str, Any]:
    """The link from a gridded collection to its map tilesets."""
    return {
        "rel": TILESETS_MAP,
        "type": JSON,
        "title": "Map tiles of the composites (OGC API - Tiles)",
        "href": f"{collection_url(base, collection)}/map/tiles",
    }


def tile_template(base: str, collection: str, matrix_set: str, query: dict[str, str]) -> str:
    """The URL template of a tileset's tiles, with ``query`` (band, datetime) kept."""
    path = f"{collection_url(base, collection)}/map/tiles/{matrix_set}"
    suffix = f"?{urlencode(query)}" if query else ""
    return f"{path}/{{tileMatrix}}/{{tileRow}}/{{tileCol}}{suffix}"


def _summary(base: str, collection: str, matrix_set: str, title: str) -> dict[str, Any]:
    tms = tile_matrix_set(matrix_set)
    return {
        "title": f"{title} in {matrix_set}",
        "dataType": "map",
        "crs": tms.crs.root,
        "tileMatrixSetURI": tms.uri,
        "links": [
            {
                "rel": "self",
                "type": JSON,
                "title": f"The {matrix_set} tileset",
                "href": f"{collection_url(base, collection)}/map/tiles/{matrix_set}",
            },
            {
                "rel": OGC_REL + "tiling-scheme",
                "type": JSON,
                "title": f"The {matrix_set} tile matrix set",
                "href": f"{base}/tileMatrixSets/{matrix_set}",
            },
        ],
    }


def tilesets_list(base: str, collection: str, title: str) -> dict[str, Any]:
    """/collections/{id}/map/tiles: one tileset a tile matrix set served."""
    return {
        "tilesets": [_summary(base, collection, name, title) for name in TILE_MATRIX_SETS],
        "links": [
            {"rel": "self", "type": JSON, "href": f"{collection_url(base, collection)}/map/tiles"},
            {"rel": "collection", "type": JSON, "href": collection_url(base, collection)},
        ],
    }


def limits(matrix_set: str) -> list[dict[str, Any]]:
    """Every served matrix, whole: a tile of a matrix beyond these is a 404."""
    tms = tile_matrix_set(matrix_set)
    found = []
    for zoom in range(MAX_ZOOM[matrix_set] + 1):
        matrix = tms.matrix(zoom)
        found.append(
            {
                "tileMatrix": matrix.id,
                "minTileRow": 0,
                "maxTileRow": matrix.matrixHeight - 1,
                "minTileCol": 0,
                "maxTileCol": matrix.matrixWidth - 1,
            }
        )
    return found


def tileset(
    base: str, collection: str, matrix_set: str, title: str, bands: list[str]
) -> dict[str, Any]:
    """/collections/{id}/map/tiles/{tileMatrixSetId}: the tileset's metadata and its tiles'
    URL template (the newest composite's NDVI index; ``band`` and ``datetime`` choose)."""
    document = _summary(base, collection, matrix_set, title)
    tms = tile_matrix_set(matrix_set)
    left, bottom, right, top = tms.xy_bbox
    # the whole set's extent: without one GDAL takes the collection's (to the poles), which
    # has no place in WebMercatorQuad
    document["boundingBox"] = {
        "lowerLeft": [left, bottom],
        "upperRight": [right, top],
        "crs": tms.crs.root,
    }
    document["tileMatrixSetLimits"] = limits(matrix_set)
    document["links"] += [
        {
            "rel": "item",
            "type": PNG,
            "title": f"A tile (band: one of {', '.join(bands)}; datetime: the day, else the "
            "newest composite)",
            "templated": True,
            "href": tile_template(base, collection, matrix_set, {}),
        },
        {
            "rel": "describedby",
            "type": JSON,
            "title": "The legend: the values each colour stands for",
            "href": f"{collection_url(base, collection)}/map/legend",
        },
    ]
    if matrix_set == "WebMercatorQuad":
        document["links"].append(
            {
                "rel": "alternate",
                "type": JSON,
                "title": "TileJSON, for web maps",
                "href": f"{collection_url(base, collection)}/map/tiles/{matrix_set}/tilejson.json",
            }
        )
    return document


def tilejson(base: str, collection: str, title: str, query: dict[str, str]) -> dict[str, Any]:
    """TileJSON 3.0 of the WebMercatorQuad tiles (what Leaflet, MapLibre and OpenLayers read)."""
    template = tile_template(base, collection, "WebMercatorQuad", query)
    return {
        "tilejson": "3.0.0",
        "name": title,
        "tiles": [template.replace("{tileMatrix}", "{z}").replace("{tileRow}", "{y}").replace(
            "{tileCol}", "{x}"
        )],
        "scheme": "xyz",
        "minzoom": 0,
        "maxzoom": MAX_ZOOM["WebMercatorQuad"],
        "bounds": [-180.0, -85.0511287798066, 180.0, 85.0511287798066],
    }  # fmt: skip


def tile_matrix_sets(base: str) -> dict[str, Any]:
    """/tileMatrixSets: the sets tiles are served in."""
    return {
        "tileMatrixSets": [
            {
                "id": name,
                "title": tile_matrix_set(name).title,
                "uri": tile_matrix_set(name).uri,
                "links": [{"rel": "self", "type": JSON, "href": f"{base}/tileMatrixSets/{name}"}],
            }
            for name in TILE_MATRIX_SETS
        ],
        "links": [{"rel": "self", "type": JSON, "href": f"{base}/tileMatrixSets"}],
    }


def tile_matrix_set_document(name: str) -> dict[str, Any]:
    """/tileMatrixSets/{id}: the set's definition in TMS 2.0 JSON, with the members of its
    1.0 encoding (OGC 17-083r2) beside them, which are all GDAL before 3.7 reads (Debian 12's
    3.6 among them: QGIS's OGC API client); neither encoding's readers mind the other's."""
    tms = tile_matrix_set(name)
    document = tms.model_dump(mode="json", exclude_none=True, by_alias=True)
    left, bottom, right, top = tms.xy_bbox
    document.update(
        type="TileMatrixSetType",
        identifier=name,
        supportedCRS=document["crs"],
        boundingBox={
            "type": "BoundingBoxType",
            "crs": document["crs"],
            "lowerCorner": [left, bottom],
            "upperCorner": [right, top],
        },
        tileMatrix=[
            {
                "type": "TileMatrixType",
                "identifier": matrix["id"],
                "scaleDenominator": matrix["scaleDenominator"],
                "topLeftCorner": matrix["pointOfOrigin"],
                "tileWidth": matrix["tileWidth"],
                "tileHeight": matrix["tileHeight"],
                "matrixWidth": matrix["matrixWidth"],
                "matrixHeight": matrix["matrixHeight"],
            }
            for matrix in document["tileMatrices"]
        ],
    )
    return document
