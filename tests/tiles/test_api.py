"""OGC API - Tiles on a live server: the documents, PNG tiles whose pixels are numpy's sampling
of the composite in the legend's colours, the day chosen by datetime, and every bad request a
clear problem document."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ..live_service import LiveService
from .gridded import NEXT_DAY_NDVI, PRIVATE, PUBLIC
from .sampling import expected_level, expected_values, legend_colours, pixels
from .test_tiles import AGREE, seen_tile

TILES = "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/"


def test_conformance_declares_the_tiles_classes(live: LiveService) -> None:
    with live.client() as client:
        classes = client.get("/conformance").json()["conformsTo"]
    declared = sorted(c.removeprefix(TILES) for c in classes if c.startswith(TILES))
    assert declared == sorted(
        ["core", "tileset", "tilesets-list", "geodata-tilesets", "datetime", "png", "oas30"]
    )


def test_a_gridded_collection_links_its_tilesets(live: LiveService) -> None:
    with live.client("bob") as client:
        collection = client.get(f"/collections/{PUBLIC}").json()
        listed = client.get("/collections").json()["collections"]
        plain = client.get("/collections/test-granules").json()
    rel = "http://www.opengis.net/def/rel/ogc/1.0/tilesets-map"
    (link,) = [link for link in collection["links"] if link["rel"] == rel]
    assert link["href"] == f"{live.url}/collections/{PUBLIC}/map/tiles"
    assert any(link["rel"] == rel for c in listed if c["id"] == PUBLIC for link in c["links"])
    assert not any(link["rel"] == rel for link in plain["links"])  # granules: no grid


def test_tilesets_tileset_and_tile_matrix_sets(live: LiveService) -> None:
    with live.client("bob") as client:
        listing = client.get(f"/collections/{PUBLIC}/map/tiles").json()
        assert [t["tileMatrixSetURI"].rsplit("/", 1)[1] for t in listing["tilesets"]] == [
            "WebMercatorQuad",
            "WorldCRS84Quad",
        ]
        tileset = client.get(f"/collections/{PUBLIC}/map/tiles/WorldCRS84Quad").json()
        assert tileset["dataType"] == "map"
        assert tileset["crs"] == "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
        limits = tileset["tileMatrixSetLimits"]
        assert [(m["tileMatrix"], m["maxTileRow"], m["maxTileCol"]) for m in limits[:3]] == [
            ("0", 0, 1),
            ("1", 1, 3),
            ("2", 3, 7),
        ]
        (item,) = [link for link in tileset["links"] if link["rel"] == "item"]
        assert item["href"].endswith(
            f"/collections/{PUBLIC}/map/tiles/WorldCRS84Quad/{{tileMatrix}}/{{tileRow}}/{{tileCol}}"
        )
        sets = client.get("/tileMatrixSets").json()["tileMatrixSets"]
        assert [s["id"] for s in sets] == ["WebMercatorQuad", "WorldCRS84Quad"]
        definition = client.get("/tileMatrixSets/WebMercatorQuad").json()
        assert definition["tileMatrices"][3]["matrixWidth"] == 8
        tilejson = client.get(
            f"/collections/{PUBLIC}/map/tiles/WebMercatorQuad/tilejson.json",
            params={"band": "bt4"},
        ).json()
        assert tilejson["tiles"] == [
            f"{live.url}/collections/{PUBLIC}/map/tiles/WebMercatorQuad/{{z}}/{{y}}/{{x}}?band=bt4"
        ]


@pytest.mark.parametrize(("zoom", "band"), [(1, "bt4"), (5, "ndvi-index")])
def test_a_tile_is_the_days_composite_in_the_legends_colours(
    live: LiveService,
    composite: Path,
    zoom: int,
    band: str,
) -> None:
    row, col = seen_tile(composite, "WebMercatorQuad", zoom)
    url = f"/collections/{PUBLIC}/map/tiles/WebMercatorQuad/{zoom}/{row}/{col}"
    with live.client("bob") as client:
        response = client.get(url, params={"band": band, "datetime": "2012-12-12"})
        legend = client.get(f"/collections/{PUBLIC}/map/legend", params={"band": band}).json()
        again = client.get(url, params={"band": band, "datetime": "2012-12-12"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    level = expected_level("WebMercatorQuad", zoom, row, col)
    expected = expected_values(composite, band, "WebMercatorQuad", zoom, row, col, level)
    assert np.isfinite(expected).sum() > 500
    drawn = pixels(response.content)
    assert np.mean(np.all(drawn == legend_colours(legend, expected), axis=-1)) >= AGREE
    assert again.content == response.content  # from the cache


def test_datetime_picks_the_day_and_the_newest_is_the_default(
    live: LiveService,
    composite: Path,
) -> None:
    row, col = seen_tile(composite, "WebMercatorQuad", 4)
    url = f"/collections/{PUBLIC}/map/tiles/WebMercatorQuad/4/{row}/{col}"
    with live.client("bob") as client:
        newest = pixels(client.get(url, params={"band": "ndvi"}).content)
        first = pixels(client.get(url, params={"band": "ndvi", "datetime": "2012-12-12"}).content)
        legend = client.get(f"/collections/{PUBLIC}/map/legend", params={"band": "ndvi"}).json()
    green = legend_colours(legend, np.array([NEXT_DAY_NDVI]))[0]
    shown = newest[..., 3] > 0
    assert shown.sum() > 500
    assert np.all(newest[shown] == green)  # the day after: NDVI 0.8 wherever it saw anything
    assert np.array_equal(first[..., 3] > 0, shown)
    assert not np.all(first[shown] == green)


PROBLEMS = [
    ("/map/tiles/WebMercatorQuad/2/4/0", {}, 404, "outside matrix 2"),
    ("/map/tiles/WebMercatorQuad/2/2147483647/2147483647", {}, 404, "outside matrix 2"),
    ("/map/tiles/WebMercatorQuad/9/0/0", {}, 404, "it has 0 to 7"),
    ("/map/tiles/EuropeanETRS89_LAEAQuad/0/0/0", {}, 404, "served in WebMercatorQuad"),
    ("/map/tiles/WebMercatorQuad/x/0/0", {}, 400, "tile_matrix"),
    ("/map/tiles/WebMercatorQuad/0/0/0", {"band": "cloud"}, 400, "use one of ndvi-index"),
    ("/map/tiles/WebMercatorQuad/0/0/0", {"style": "x"}, 400, "unknown parameter 'style'"),
    ("/map/tiles/WebMercatorQuad/0/0/0", {"datetime": "2013-01-01"}, 404, "2012-12-12 to"),
    ("/map/tiles/WebMercatorQuad/0/0/0", {"datetime": "yesterday"}, 400, "RFC 3339"),
    ("/map/legend", {"band": "qc"}, 400, "is not drawn as tiles"),
    ("/map/tiles/WorldCRS84Quad/tilejson.json", {}, 404, "WebMercatorQuad tiles only"),
]


@pytest.mark.parametrize(("path", "params", "status", "says"), PROBLEMS)
def test_bad_requests_are_problems(
    live: LiveService, path: str, params: dict, status: int, says: str
) -> None:
    with live.client("bob") as client:
        response = client.get(f"/collections/{PUBLIC}{path}", params=params)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert says in response.json()["detail"]


def test_tiles_keep_the_catalogues_doors(live: LiveService) -> None:
    path = f"/collections/{PRIVATE}/map/tiles/WebMercatorQuad/0/0/0"
    with live.client("alice") as alice, live.client("bob") as bob, live.client() as nobody:
        assert alice.get(path).status_code == 200
        refused = bob.get(path)  # alice's own collection: as if it did not exist
        assert nobody.get(path).status_code == 401  # no token
        plain = bob.get("/collections/test-granules/map/tiles")
    assert refused.status_code == 404
    assert PRIVATE in refused.json()["detail"]
    assert plain.status_code == 404
    assert "not gridded" in plain.json()["detail"]
