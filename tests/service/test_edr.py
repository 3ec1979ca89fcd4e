"""OGC API - EDR on a gridded collection, from the outside: a point's values through the
days (CoverageJSON and netCDF), OWSLib's EDR client, a cube and an area on a lattice, and the
collection document's queries; every value compared with numpy on the composite files,
each point's cell found by PROJ's IGH rather than nearline's (gridded.py)."""

from __future__ import annotations

import io

import numpy as np
import xarray as xr
from owslib.ogcapi.edr import EnvironmentalDataRetrieval

from . import gridded as fixtures
from .gridded import COLLECTION, DAYS, cell_lonlat, cell_of, physical, seen_cell

series, gridded = fixtures.series, fixtures.gridded  # fixtures


def values(series, band: str, rows, cols) -> np.ndarray:
    """(days, points) of ``band`` at the cells, as numpy reads the files."""
    return np.array([physical(path, band)[rows, cols] for path in series])


def numbers(listed: list) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in listed], dtype=np.float64)


def test_a_points_values_through_the_days(gridded, series):
    row, col = seen_cell(series[0])
    lon, lat = cell_lonlat(row, col)
    with gridded.client("bob") as client:
        response = client.get(
            f"/collections/{COLLECTION}/position",
            params={"coords": f"POINT({lon} {lat})", "parameter-name": "ndvi,bt4"},
        )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/prs.coverage+json"
    coverage = response.json()
    assert coverage["domain"]["domainType"] == "PointSeries"
    assert coverage["domain"]["axes"]["t"]["values"] == [f"{day}T00:00:00Z" for day in DAYS]
    assert set(coverage["parameters"]) == {"ndvi", "bt4"}
    for band in ("ndvi", "bt4"):
        got = numbers(coverage["ranges"][band]["values"])
        assert np.allclose(got, values(series, band, row, col), equal_nan=True)
    assert np.isfinite(got).all()


def test_owslib_fetches_a_point_series_and_netcdf_holds_the_same(gridded, series):
    row, col = seen_cell(series[0])
    lon, lat = cell_lonlat(row, col)
    client = EnvironmentalDataRetrieval(
        gridded.url, headers={"Authorization": f"Bearer {gridded.tokens['bob']}"}
    )
    assert COLLECTION in client.data()
    coverage = client.query_data(COLLECTION, "position", coords=f"POINT({lon} {lat})",
                                 parameter_names=["ndvi"], datetime_="2012-12-13/..")  # fmt: skip
    expected = values(series, "ndvi", row, col)
    assert np.allclose(numbers(coverage["ranges"]["ndvi"]["values"]), expected[1:])
    with gridded.client("bob") as http:
        response = http.get(f"/collections/{COLLECTION}/position",
                            params={"coords": f"POINT({lon} {lat})", "f": "netCDF"})  # fmt: skip
    assert response.status_code == 200, response.text
    with xr.open_dataset(io.BytesIO(response.content), engine="h5netcdf") as answer:
        assert np.allclose(answer["ndvi"].values[:, 0], expected, atol=1e-6)


def test_a_cube_samples_the_grid_at_its_resolution(gridded, series):
    lon, lat = cell_lonlat(*seen_cell(series[0]))
    box = (lon - 1, lat - 1, lon + 1, lat + 1)
    with gridded.client("bob") as client:
        response = client.get(
            f"/collections/{COLLECTION}/cube",
            params={"bbox": ",".join(map(str, box)), "parameter-name": "ndvi",
                    "datetime": "2012-12-14"},
        )  # fmt: skip
    assert response.status_code == 200, response.text
    coverage = response.json()
    axes = coverage["domain"]["axes"]
    lons, lats = np.array(axes["x"]["values"]), np.array(axes["y"]["values"])
    assert 25 <= lons.size <= 30  # 2 degrees at 8 km cells (0.072 degrees at the equator)
    assert box[0] < lons.min() < lons.max() < box[2]
    grid_lon, grid_lat = np.meshgrid(lons, lats)
    rows, cols = cell_of(grid_lon, grid_lat)
    expected = physical(series[2], "ndvi")[rows, cols]
    got = numbers(coverage["ranges"]["ndvi"]["values"]).reshape(1, *grid_lon.shape)[0]
    assert np.isfinite(expected).sum() > 50
    assert np.allclose(got, expected, equal_nan=True)


def test_an_area_leaves_out_what_lies_outside_its_polygon(gridded, series):
    lon, lat = cell_lonlat(*seen_cell(series[0]))
    ring = [(lon - 1, lat - 1), (lon + 1, lat - 1), (lon - 1, lat + 1), (lon - 1, lat - 1)]
    polygon = "POLYGON((" + ", ".join(f"{x} {y}" for x, y in ring) + "))"
    with gridded.client("bob") as client:
        response = client.get(
            f"/collections/{COLLECTION}/area",
            params={"coords": polygon, "parameter-name": "ndvi", "datetime": "2012-12-12"},
        )
    assert response.status_code == 200, response.text
    coverage = response.json()
    lons = np.array(coverage["domain"]["axes"]["x"]["values"])
    lats = np.array(coverage["domain"]["axes"]["y"]["values"])
    grid_lon, grid_lat = np.meshgrid(lons, lats)
    got = numbers(coverage["ranges"]["ndvi"]["values"]).reshape(grid_lon.shape)
    inside = (grid_lon - (lon - 1)) + (grid_lat - (lat - 1)) < 2  # below the diagonal
    rows, cols = cell_of(grid_lon, grid_lat)
    expected = physical(series[0], "ndvi")[rows, cols]
    assert np.isnan(got[~inside]).all()
    assert np.allclose(got[inside], expected[inside], equal_nan=True)
    assert np.isfinite(got[inside]).sum() > 20


def test_a_gridded_collection_names_its_queries_and_parameters(gridded):
    with gridded.client("bob") as client:
        document = client.get(f"/collections/{COLLECTION}").json()
        listed = client.get("/collections").json()["collections"]
        conformance = client.get("/conformance").json()["conformsTo"]
    assert set(document["data_queries"]) == {"position", "area", "cube"}
    assert document["data_queries"]["position"]["link"]["href"].endswith("/position")
    assert list(document["parameter_names"])[:3] == ["ndvi", "cloud", "qc"]
    assert document["extent"]["spatial"]["crs"].endswith("CRS84")
    assert next(c for c in listed if c["id"] == COLLECTION)["data_queries"]
    assert "http://www.opengis.net/spec/ogcapi-edr-1/1.0/conf/core" in conformance
    assert "http://www.opengis.net/spec/ogcapi-coverages-1/1.0/conf/core" in conformance
