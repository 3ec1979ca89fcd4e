"""Synchronous processing (``POST /result``) through the openEO Python client, as a scientist
runs it: the composites' NDVI (from the red and near-infrared bands, openEO's ``ndvi``) and
their own NDVI band, each reduced to its maximum over the month over a box, downloaded as
netCDF and GeoTIFF, and compared with numpy on the composite files themselves."""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import openeo
import pyproj
import pytest
import rasterio
import xarray as xr
from openeo.rest import OpenEoApiError

from ..live_service import LiveService
from ..service.gridded import CELL, IGH_EXTENT
from ..tiles.gridded import NEXT_DAY_NDVI, PUBLIC
from .conftest import connect

MONTH = ["2012-12-01", "2013-01-01"]
TO_LONLAT = pyproj.Transformer.from_crs("+proj=igh +R=6370997 +units=m", "EPSG:4326",
                                        always_xy=True)  # fmt: skip


def physical(path: Path, name: str) -> np.ndarray:
    """A band of a composite file as physical values, NaN where it holds none (CF unpacking
    by netCDF4 itself)."""
    with netCDF4.Dataset(path) as dataset:
        return np.ma.filled(dataset[name][:].astype(np.float64), np.nan)


def seen_box(composite: Path) -> dict[str, float]:
    """A 2 x 2 degree box around a cell the orbits saw in both visible channels."""
    seen = np.argwhere(np.isfinite(physical(composite, "refl1") + physical(composite, "refl2")))
    row, col = seen[len(seen) // 2]
    x = IGH_EXTENT[0] + (col + 0.5) * CELL
    y = IGH_EXTENT[3] - (row + 0.5) * CELL
    lon, lat = TO_LONLAT.transform(x, y)
    return {"west": lon - 1, "south": lat - 1, "east": lon + 1, "north": lat + 1}


def cells_of(answer: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """The grid rows and columns an answer's pixels stand on, from its coordinates."""
    rows = np.round((IGH_EXTENT[3] - answer["y"].values) / CELL - 0.5).astype(int)
    cols = np.round((answer["x"].values - IGH_EXTENT[0]) / CELL - 0.5).astype(int)
    return rows, cols


@pytest.fixture(scope="module")
def days(composite: Path, live: LiveService) -> list[Path]:
    """The public collection's two files: the composite and its next day (tiles/gridded.py
    writes it beside the service's data folder)."""
    return [composite, live.data.parent / "composite-next-day.nc"]


def test_ndvi_max_over_a_month_equals_numpy_on_the_files(
    alice: openeo.Connection, composite: Path, days: list[Path], tmp_path: Path
) -> None:
    box = seen_box(composite)
    cube = alice.load_collection(PUBLIC, spatial_extent=box, temporal_extent=MONTH,
                                 bands=["refl1", "refl2"])  # fmt: skip
    cube.ndvi().reduce_dimension(dimension="t", reducer="max").download(tmp_path / "max.nc")
    with xr.open_dataset(tmp_path / "max.nc") as answer:
        got = answer["data"].values
        rows, cols = cells_of(answer)
        crs = pyproj.CRS.from_wkt(answer["spatial_ref"].attrs["crs_wkt"])
    assert "goode" in crs.coordinate_operation.method_name.lower()
    window = np.ix_(rows, cols)
    red = np.stack([physical(path, "refl1")[window] for path in days])
    nir = np.stack([physical(path, "refl2")[window] for path in days])
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.nanmax((nir - red) / (nir + red), axis=0)
    assert got.shape == expected.shape
    assert min(got.shape) >= 20
    assert np.isfinite(got).sum() > 50
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-5, equal_nan=True)


def test_the_ndvi_band_maximum_takes_the_later_day_where_it_is_higher(
    alice: openeo.Connection, composite: Path, days: list[Path], tmp_path: Path
) -> None:
    box = seen_box(composite)
    cube = alice.load_collection(PUBLIC, spatial_extent=box, temporal_extent=MONTH,
                                 bands=["ndvi"])  # fmt: skip
    cube.max_time().download(tmp_path / "ndvi.tif", format="GTiff")
    with rasterio.open(tmp_path / "ndvi.tif") as tiff:
        got = tiff.read(1)
        assert tiff.descriptions == ("ndvi",)
        left, top = tiff.transform.c, tiff.transform.f
        rows = np.round((IGH_EXTENT[3] - top) / CELL).astype(int) + np.arange(tiff.height)
        cols = np.round((left - IGH_EXTENT[0]) / CELL).astype(int) + np.arange(tiff.width)
    first = physical(days[0], "ndvi")[np.ix_(rows, cols)]
    expected = np.where(np.isfinite(first), np.fmax(first, NEXT_DAY_NDVI), np.nan)
    assert (expected[np.isfinite(expected)] >= NEXT_DAY_NDVI).all()
    np.testing.assert_allclose(got, expected, rtol=1e-6, equal_nan=True)


def test_a_month_of_one_day_holds_that_day_alone(
    alice: openeo.Connection, composite: Path, tmp_path: Path
) -> None:
    box = seen_box(composite)
    day = ["2012-12-13", "2012-12-14"]
    cube = alice.load_collection(PUBLIC, spatial_extent=box, temporal_extent=day, bands=["ndvi"])
    cube.download(tmp_path / "day.nc")
    with xr.open_dataset(tmp_path / "day.nc") as answer:
        assert [str(t)[:10] for t in answer["t"].values] == ["2012-12-13"]
        values = answer["ndvi"].values
    assert np.nanmin(values) == pytest.approx(NEXT_DAY_NDVI) == np.nanmax(values)


@pytest.mark.parametrize(
    ("graph", "code", "words"),
    [
        ({"a": {"process_id": "no_such_process", "arguments": {}, "result": True}},
         "ProcessUnsupported", "no_such_process"),
        ({"a": {"process_id": "apply", "arguments": {"data": {"from_node": "b"}}},
          "b": {"process_id": "apply", "arguments": {"data": {"from_node": "a"}},
                "result": True}},
         "ProcessGraphInvalid", "cycle"),
        ({"a": {"process_id": "load_collection", "arguments": {"id": 5}, "result": True}},
         "ProcessParameterInvalid", "id must be"),
        ({"a": {"process_id": "load_collection", "result": True, "arguments": {
            "id": PUBLIC, "bands": ["no_such_band"], "temporal_extent": MONTH,
            "spatial_extent": {"west": 0, "south": 0, "east": 1, "north": 1}}}},
         "ProcessParameterInvalid", "no_such_band"),
        ({"a": {"process_id": "load_collection", "result": True, "arguments": {
            "id": PUBLIC, "temporal_extent": ["2020-01-01", "2020-02-01"],
            "spatial_extent": {"west": 0, "south": 0, "east": 1, "north": 1}}}},
         "NoDataAvailable", "2012-12-12"),
        ({"a": {"process_id": "load_collection", "result": True, "arguments": {
            "id": PUBLIC, "temporal_extent": MONTH, "spatial_extent": {
                "west": 9e7, "south": 9e7, "east": 9.1e7, "north": 9.1e7,
                "crs": "+proj=igh +R=6370997 +units=m"}}}},
         "ProcessParameterInvalid", "outside the grid"),
        ({"a": {"process_id": "load_collection", "result": True, "arguments": {
            "id": "no-such-collection", "temporal_extent": MONTH}}},
         "CollectionNotFound", "no-such-collection"),
        ({"a": {"process_id": "load_collection", "arguments": {"id": PUBLIC,
            "temporal_extent": MONTH, "bands": ["ndvi"],
            "spatial_extent": {"west": 0, "south": 0, "east": 1, "north": 1}}},
          "b": {"process_id": "reduce_dimension", "result": True, "arguments": {
              "data": {"from_node": "a"}, "dimension": "no_such_dimension",
              "reducer": {"process_graph": {"m": {"process_id": "max", "result": True,
                          "arguments": {"data": {"from_parameter": "data"}}}}}}}},
         "DimensionNotAvailable", "no_such_dimension"),
    ],
    ids=["unknown-process", "cycle", "wrong-type", "unknown-band", "no-data", "off-grid",
         "no-collection", "no-dimension"],
)  # fmt: skip
def test_bad_graphs_are_openeo_errors_not_500s(
    alice: openeo.Connection, graph: dict, code: str, words: str
) -> None:
    with pytest.raises(OpenEoApiError) as refused:
        alice.post("/result", json={"process": {"process_graph": graph}}, expected_status=200)
    assert refused.value.http_status_code in (400, 404)
    assert refused.value.code == code
    assert words in refused.value.message


def test_a_swath_collection_is_refused_as_no_cube(alice: openeo.Connection) -> None:
    from ..service.granules import COLLECTION as SWATH

    with pytest.raises(OpenEoApiError) as refused:
        alice.load_collection(SWATH, temporal_extent=MONTH).download()
    assert refused.value.http_status_code == 400
    assert "not a data cube" in refused.value.message


def test_processing_needs_a_token(live: LiveService) -> None:
    anonymous = connect(live)
    with pytest.raises(OpenEoApiError) as refused:
        anonymous.load_collection(PUBLIC, temporal_extent=MONTH).download()
    assert refused.value.http_status_code == 401
    assert refused.value.code == "AuthenticationRequired"


def test_validation_lists_what_would_refuse_the_graph(alice: openeo.Connection) -> None:
    good = alice.load_collection(PUBLIC, temporal_extent=MONTH, bands=["ndvi"]).max_time()
    assert alice.validate_process_graph(good.flat_graph()) == []
    unknown = {"a": {"process_id": "no_such_process", "arguments": {}, "result": True}}
    foreign = {"a": {"process_id": "load_collection", "arguments": {"id": "elsewhere"},
                     "result": True}}  # fmt: skip
    assert [e["code"] for e in alice.validate_process_graph(unknown)] == ["ProcessUnsupported"]
    assert [e["code"] for e in alice.validate_process_graph(foreign)] == ["CollectionNotFound"]
