"""Composites catalogued by `nearline ingest` as a gridded collection: each day an item whose
time range is its day, whose footprint is the grid's extent and whose properties name the
grid and the bands, found by the STAC API as granules are."""

from __future__ import annotations

import netCDF4

from nearline.grid import get_grid

from . import gridded as fixtures
from .gridded import COLLECTION, DAYS, PRIVATE

series, gridded = fixtures.series, fixtures.gridded  # fixtures


def test_each_composite_is_an_item_naming_its_grid_bands_and_day(gridded, series):
    with netCDF4.Dataset(series[0]) as dataset:
        bands = [name for name, v in dataset.variables.items() if v.dimensions == ("y", "x")]
    south, north = get_grid("igh-8km").latitude_range((0, 2168))
    with gridded.client("bob") as client:
        found = client.get("/search", params={"collections": COLLECTION, "limit": 10}).json()
    items = sorted(found["features"], key=lambda item: item["properties"]["start_datetime"])
    assert [item["id"] for item in items] == [path.name for path in series]
    for day, item in zip(DAYS, items, strict=True):
        properties = item["properties"]
        assert properties["nearline:grid"] == "igh-8km"
        assert properties["nearline:bands"] == bands
        assert len(bands) == 12
        assert properties["start_datetime"] == f"{day}T00:00:00Z"
        assert properties["end_datetime"] == f"{day}T23:59:59Z"
        assert item["bbox"] == [-180.0, round(south, 6), 180.0, round(north, 6)]
        assert item["assets"]["data"]["type"] == "application/x-netcdf"
        assert item["assets"]["data"]["href"].endswith(f"/items/{item['id']}/assets/data")


def test_a_day_is_found_by_its_date_and_the_grid_by_its_property(gridded, series):
    with gridded.client("bob") as client:
        one_day = client.get(
            "/search", params={"collections": COLLECTION, "datetime": "2012-12-13T12:00:00Z"}
        ).json()
        by_grid = client.post(
            "/search",
            json={
                "filter-lang": "cql2-json",
                "filter": {"op": "=", "args": [{"property": "nearline:grid"}, "igh-8km"]},
                "limit": 10,
            },
        ).json()
    assert [item["id"] for item in one_day["features"]] == [series[1].name]
    assert sorted(item["id"] for item in by_grid["features"]) == sorted(p.name for p in series)


def test_a_private_gridded_collection_is_its_owners_alone(gridded):
    with gridded.client("alice") as client:
        assert client.get(f"/collections/{PRIVATE}").status_code == 200
    with gridded.client("bob") as client:
        assert client.get(f"/collections/{PRIVATE}").status_code == 404
