"""Each process nearline declares, run on the composites through ``POST /result`` by the
openEO Python client, its answer compared with numpy on the composite files: the filters,
``apply`` with ``linear_scale_range``, ``aggregate_temporal_period``, ``resample_spatial``,
``merge_cubes`` and ``mask`` (the reducers, ``ndvi`` and ``save_result`` are in
test_result.py; the processes' own examples on arrays run in CI through openeo-test-suite)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openeo
import pytest
import xarray as xr
from openeo.rest import OpenEoApiError

from ..tiles.gridded import NEXT_DAY_NDVI, PUBLIC
from .test_result import MONTH, cells_of, physical, seen_box


@pytest.fixture(scope="module")
def box(composite: Path) -> dict[str, float]:
    return seen_box(composite)


def month(connection: openeo.Connection, box: dict | None, *bands: str) -> openeo.DataCube:
    """The public collection's month in ``box``: ``bands``, or all of them."""
    return connection.load_collection(PUBLIC, spatial_extent=box, temporal_extent=MONTH,
                                      bands=list(bands) or None)  # fmt: skip


def fetch(cube: openeo.DataCube, path: Path) -> xr.Dataset:
    """The cube computed by the service, as netCDF read back by xarray."""
    cube.download(path, format="netCDF")
    return xr.load_dataset(path)


def file_window(path: Path, band: str, answer: xr.Dataset) -> np.ndarray:
    """``band`` of a composite file on the answer's cells."""
    rows, cols = cells_of(answer)
    return physical(path, band)[np.ix_(rows, cols)]


def test_filter_bands_keeps_the_bands_asked_in_their_order(
    alice: openeo.Connection, box: dict, composite: Path, tmp_path: Path
) -> None:
    cube = month(alice, box)
    answer = fetch(cube.filter_bands(["refl2", "ndvi"]), tmp_path / "bands.nc")
    assert [name for name in answer.data_vars if name != "spatial_ref"] == ["refl2", "ndvi"]
    np.testing.assert_allclose(answer["refl2"].values[0], file_window(composite, "refl2", answer),
                               rtol=1e-6, equal_nan=True)  # fmt: skip


def test_filter_temporal_keeps_the_later_day(
    alice: openeo.Connection, box: dict, tmp_path: Path
) -> None:
    cube = month(alice, box, "ndvi")
    answer = fetch(cube.filter_temporal("2012-12-13", "2012-12-14"), tmp_path / "later.nc")
    assert [str(t)[:10] for t in answer["t"].values] == ["2012-12-13"]
    seen = answer["ndvi"].values[np.isfinite(answer["ndvi"].values)]
    assert seen.size > 0
    np.testing.assert_allclose(seen, NEXT_DAY_NDVI, rtol=1e-6)


def test_filter_bbox_cuts_the_same_cells_as_a_smaller_load(
    alice: openeo.Connection, box: dict, tmp_path: Path
) -> None:
    inner = {"west": box["west"] + 0.5, "south": box["south"] + 0.5,
             "east": box["east"] - 0.5, "north": box["north"] - 0.5}  # fmt: skip
    load = month(alice, box, "ndvi")
    cut = fetch(load.filter_bbox(**inner), tmp_path / "cut.nc")
    direct = fetch(month(alice, inner, "ndvi"), tmp_path / "direct.nc")  # fmt: skip
    whole = fetch(load, tmp_path / "whole.nc")
    assert cut.sizes["x"] < whole.sizes["x"]
    assert cut.sizes["y"] < whole.sizes["y"]
    # the grid's own box rules cut the loaded cube as they cut a load of the inner box
    np.testing.assert_array_equal(cut["x"].values, direct["x"].values)
    np.testing.assert_array_equal(cut["y"].values, direct["y"].values)
    np.testing.assert_array_equal(cut["ndvi"].values, direct["ndvi"].values)


def test_apply_linear_scale_range_scales_every_pixel(
    alice: openeo.Connection, box: dict, composite: Path, tmp_path: Path
) -> None:
    cube = month(alice, box, "ndvi")
    scaled = cube.apply(lambda x: x.linear_scale_range(-1, 1, 0, 200))
    answer = fetch(scaled, tmp_path / "scaled.nc")
    first = file_window(composite, "ndvi", answer)
    np.testing.assert_allclose(answer["ndvi"].values[0], (first + 1) * 100, rtol=1e-5,
                               equal_nan=True)  # fmt: skip


def test_aggregate_temporal_period_means_the_month(
    alice: openeo.Connection, box: dict, composite: Path, tmp_path: Path
) -> None:
    cube = month(alice, box, "ndvi")
    answer = fetch(cube.aggregate_temporal_period("month", reducer="mean"), tmp_path / "m.nc")
    assert answer.sizes["t"] == 1
    assert str(answer["t"].values[0])[:7] == "2012-12"
    first = file_window(composite, "ndvi", answer)
    expected = np.where(np.isfinite(first), (first + NEXT_DAY_NDVI) / 2, np.nan)
    np.testing.assert_allclose(answer["ndvi"].values[0], expected, rtol=1e-5, equal_nan=True)


def test_resample_spatial_to_twice_the_cell_keeps_values_of_the_cells(
    alice: openeo.Connection, box: dict, tmp_path: Path
) -> None:
    cube = month(alice, box, "ndvi")
    native = fetch(cube, tmp_path / "native.nc")
    coarse = fetch(cube.resample_spatial(resolution=16000, method="near"), tmp_path / "c.nc")
    assert abs(float(coarse["x"][1] - coarse["x"][0])) == pytest.approx(16000)
    assert abs(coarse.sizes["x"] - native.sizes["x"] / 2) <= 2  # its own cells' edges
    seen = coarse["ndvi"].values[0][np.isfinite(coarse["ndvi"].values[0])]
    assert seen.size > 0
    assert np.isin(seen, native["ndvi"].values[0]).all()  # nearest: no value invented


def test_merge_cubes_holds_both_cubes_bands(
    alice: openeo.Connection, box: dict, composite: Path, tmp_path: Path
) -> None:
    ndvi = month(alice, box, "ndvi")
    red = month(alice, box, "refl1")
    answer = fetch(ndvi.merge_cubes(red), tmp_path / "merged.nc")
    assert {"ndvi", "refl1"} <= set(answer.data_vars)
    np.testing.assert_allclose(answer["refl1"].values[0], file_window(composite, "refl1", answer),
                               rtol=1e-6, equal_nan=True)  # fmt: skip


def test_mask_by_the_cloud_band_drops_cloudy_pixels(
    alice: openeo.Connection, box: dict, composite: Path, tmp_path: Path
) -> None:
    ndvi = month(alice, box, "ndvi")
    cloud = month(alice, box, "cloud").reduce_dimension(dimension="bands",
                                                                    reducer="max")  # fmt: skip
    answer = fetch(ndvi.mask(cloud), tmp_path / "masked.nc")
    first = file_window(composite, "ndvi", answer)
    cloudy = file_window(composite, "cloud", answer)
    expected = np.where(np.isfinite(cloudy) & (cloudy != 0), np.nan, first)
    assert np.isfinite(first).sum() > np.isfinite(expected).sum() > 0  # some cloud, some clear
    np.testing.assert_allclose(answer["ndvi"].values[0], expected, rtol=1e-6, equal_nan=True)


def test_a_resampling_too_fine_for_the_server_is_refused_before_it_runs(
    alice: openeo.Connection, box: dict
) -> None:
    cube = month(alice, box, "ndvi")
    with pytest.raises(OpenEoApiError) as refused:
        cube.resample_spatial(resolution=0.5, method="near").download(format="netCDF")
    assert refused.value.http_status_code == 400
    assert refused.value.code == "ProcessGraphComplexity"
    assert "over this service's limit" in refused.value.message


def test_a_graph_of_many_loads_reads_no_more_than_one_may(alice: openeo.Connection) -> None:
    """Each load reads one band of the whole grid for two days (21.7 million values), under
    the server's limit (50 million) alone; the graph's loads together may not pass it: the
    third is refused before it is read."""
    ndvi, red, nir = (month(alice, None, band) for band in ("ndvi", "refl1", "refl2"))
    with pytest.raises(OpenEoApiError) as refused:
        ndvi.merge_cubes(red).merge_cubes(nir).download(format="netCDF")
    assert refused.value.code == "ProcessGraphComplexity"
    assert "earlier loads read 43,394,688 values of the 50,000,000" in refused.value.message
