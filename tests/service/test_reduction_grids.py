"""A GEOS-5 reduction's daily files as a gridded collection, from the outside: `nearline ingest`
catalogues them (reader nearline-gridded), and their coverage and EDR points hold the files'
values, each looked up by the file's own latitude and longitude with xarray (not by nearline's
grid rows: the files store their rows south to north, the grid counts them from the north).
No map tiles: their colours are the composites' bands'."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import rasterio
import xarray as xr

from nearline.testing.gridded import write_reduction

from ..live_service import LiveService, nearline
from .conftest import serving

COLLECTION = "aerosol-geos5"
GRID = "geos5-1x1.25"
DAYS = ("2012-12-12", "2012-12-13")
TILESETS = "http://www.opengis.net/def/rel/ogc/1.0/tilesets-map"


@pytest.fixture(scope="module")
def days(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("reductions")
    return [write_reduction(folder / f"aerosol-{GRID}-{day}.nc", day=day, number=number, grid=GRID)
            for number, day in enumerate(DAYS)]  # fmt: skip


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, days: list[Path]) -> Iterator[LiveService]:
    def prepare(live: LiveService) -> None:
        nearline("ingest", *map(str, days), "--collection", COLLECTION, data=live.data)

    with serving(tmp_path_factory.mktemp("reduction-grids"), prepare) as live:
        yield live


def file_value(path: Path, band: str, lon: float, lat: float) -> float:
    """The file's value at the cell nearest (lon, lat), by its own coordinates."""
    with xr.open_dataset(path) as dataset:
        return float(dataset[band].isel(time=0).sel(lat=lat, lon=lon, method="nearest"))


def test_the_days_are_catalogued_as_a_gridded_collection(service):
    with service.client("bob") as client:
        items = client.get(f"/collections/{COLLECTION}/items").json()["features"]
        document = client.get(f"/collections/{COLLECTION}").json()
    assert sorted(item["properties"]["datetime"] or item["properties"]["start_datetime"]
                  for item in items)[0].startswith(DAYS[0])  # fmt: skip
    assert {item["properties"]["nearline:grid"] for item in items} == {GRID}
    assert {tuple(item["properties"]["nearline:bands"]) for item in items} == {
        ("aod_550_mean", "aod_550_count")
    }
    assert {item["properties"]["nearline:reader"] for item in items} == {"nearline-gridded"}
    assert set(document["parameter_names"]) == {"aod_550_mean", "aod_550_count"}
    rels = {link["rel"] for link in document["links"]}
    assert "http://www.opengis.net/def/rel/ogc/1.0/coverage" in rels
    assert TILESETS not in rels


def test_a_points_series_holds_the_files_values(service, days):
    lon, lat = 31.25, -45.0  # a cell centre of geos5-1x1.25
    with service.client("bob") as client:
        response = client.get(
            f"/collections/{COLLECTION}/position",
            params={"coords": f"POINT({lon} {lat})", "parameter-name": "aod_550_count"},
        )
    assert response.status_code == 200, response.text
    got = response.json()["ranges"]["aod_550_count"]["values"]
    expected = [file_value(path, "aod_550_count", lon, lat) for path in days]
    assert got == expected
    assert expected[0] != expected[1]


def test_a_box_as_geotiff_holds_the_files_values_north_up(service, days):
    with service.client("bob") as client:
        response = client.get(
            f"/collections/{COLLECTION}/coverage",
            params={"bbox": "10,30,20,40", "properties": "aod_550_mean",
                    "datetime": DAYS[1], "f": "geotiff"},
        )  # fmt: skip
    assert response.status_code == 200, response.text
    with rasterio.MemoryFile(response.content) as memory, memory.open() as tiff:
        values = tiff.read(1)
        rows, cols = np.indices(values.shape)
        lons, lats = rasterio.transform.xy(tiff.transform, rows.ravel(), cols.ravel())
    with xr.open_dataset(days[1]) as dataset:
        expected = (
            dataset["aod_550_mean"]
            .isel(time=0)
            .sel(lat=xr.DataArray(lats), lon=xr.DataArray(lons), method="nearest")
            .values.reshape(values.shape)
        )
    assert values.shape == (11, 9)  # 10 degrees: 11 rows of 1 degree and 9 columns of 1.25
    assert np.array_equal(values, expected.astype(np.float32), equal_nan=True)
    assert np.isnan(values).any()  # fill cells are NaN
    assert np.isfinite(values).sum() > 50
    assert np.all(np.diff(np.array(lats).reshape(values.shape)[:, 0]) < 0)  # north first


def test_its_map_tiles_are_a_clear_404(service):
    with service.client("bob") as client:
        response = client.get(f"/collections/{COLLECTION}/map/tiles/WebMercatorQuad/0/0/0")
    assert response.status_code == 404
    assert "not Pathfinder composites" in response.json()["detail"]


def test_a_damaged_file_is_a_problem_naming_its_item_not_a_dropped_connection(service, days):
    broken = days[0].parent / "broken" / days[0].name
    broken.parent.mkdir()
    broken.write_bytes(days[0].read_bytes())
    nearline("ingest", str(broken), "--collection", "broken-geos5", data=service.data)
    with broken.open("r+b") as handle:  # the superblock's signature gone: HDF5 cannot open it
        handle.write(b"\0" * 8)
    with service.client("bob") as client:
        response = client.get("/collections/broken-geos5/position",
                              params={"coords": "POINT(10 10)"})  # fmt: skip
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/json"  # as every problem here
    assert f"item {broken.name}'s file cannot be read" in response.json()["detail"]


def test_openeo_averages_the_days_as_xarray_does_on_the_files(service, days, tmp_path):
    """The reductions' days are data cubes to openEO: their mean over time in a box, by the
    openEO client, equals xarray's on the files, looked up by the files' own latitudes and
    longitudes (stored south to north); every 7th cell is fill in each file, so each mean is
    of both days or of none."""
    import openeo

    connection = openeo.connect(service.url)
    connection.authenticate_bearer_token(f"basic//{service.tokens['bob']}")
    box = {"west": -20.0, "south": 10.0, "east": 20.0, "north": 40.0}
    cube = connection.load_collection(COLLECTION, spatial_extent=box, bands=["aod_550_mean"],
                                      temporal_extent=["2012-12-12", "2012-12-14"])  # fmt: skip
    cube.reduce_dimension(dimension="t", reducer="mean").download(tmp_path / "mean.nc")
    with xr.open_dataset(tmp_path / "mean.nc") as answer:
        assert set(answer.data_vars) == {"aod_550_mean", "spatial_ref"}  # its one band kept
        got = answer["aod_550_mean"].values
        lats, lons = answer["y"].values, answer["x"].values
    assert got.shape == (lats.size, lons.size)
    assert lats.size >= 30
    assert lons.size >= 30
    with xr.open_mfdataset(days, combine="nested", concat_dim="time") as files:
        expected = files["aod_550_mean"].mean("time").sel(lat=lats, lon=lons, method="nearest")
        expected = expected.values
    assert np.isnan(got).sum() > 0  # the fill cells
    np.testing.assert_allclose(got, expected, rtol=1e-6, equal_nan=True)
