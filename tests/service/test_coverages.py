"""OGC API - Coverages on a gridded collection, from the outside: a box as GeoTIFF and as
netCDF over days, a band subset, a scale-down, the bytes a box reads against the file's
size, GDAL's OGC API driver and OWSLib's Coverages client; every value compared with numpy
on the composite files (gridded.py)."""

from __future__ import annotations

import io
import subprocess

import h5py
import numpy as np
import pyproj
import rasterio
import xarray as xr
from owslib.ogcapi.coverages import Coverages

from . import gridded as fixtures
from .gridded import (
    CELL,
    COLLECTION,
    IGH_EXTENT,
    NDVI_STEP,
    PRIVATE,
    cell_lonlat,
    physical,
    seen_cell,
)

series, gridded = fixtures.series, fixtures.gridded  # fixtures
BYTES_READ = "Nearline-Bytes-Read"


def around_seen(series, half: float = 5.0) -> tuple[float, float, float, float]:
    """A box of 2 half degrees a side centred on a cell the orbits saw."""
    lon, lat = cell_lonlat(*seen_cell(series[0]))
    return lon - half, lat - half, lon + half, lat + half


def window_of(transform, width: int, height: int) -> tuple[slice, slice]:
    """The grid rows and columns a GeoTIFF's pixels are, from its own georeferencing."""
    col = round((transform.c - IGH_EXTENT[0]) / CELL)
    row = round((IGH_EXTENT[3] - transform.f) / CELL)
    return slice(row, row + height), slice(col, col + width)


def test_a_box_as_geotiff_is_the_files_cells_around_it(gridded, series):
    west, south, east, north = around_seen(series)
    with gridded.client("bob") as client:
        response = client.get(
            f"/collections/{COLLECTION}/coverage",
            params={"bbox": f"{west},{south},{east},{north}", "properties": "ndvi,bt4",
                    "datetime": "2012-12-13", "f": "geotiff"},
        )  # fmt: skip
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/tiff; application=geotiff"
    with rasterio.MemoryFile(response.content) as memory, memory.open() as tiff:
        assert tiff.descriptions == ("ndvi", "bt4")
        assert tiff.crs.to_dict()["proj"] == "igh"
        assert tiff.transform.a == CELL
        rows, cols = window_of(tiff.transform, tiff.width, tiff.height)
        ndvi, bt4 = tiff.read(1), tiff.read(2)
        bounds = tiff.bounds
    assert np.array_equal(ndvi, physical(series[1], "ndvi")[rows, cols].astype(np.float32),
                          equal_nan=True)  # fmt: skip
    assert np.isfinite(ndvi).sum() > 100
    assert np.array_equal(bt4, physical(series[1], "bt4")[rows, cols].astype(np.float32),
                          equal_nan=True)  # fmt: skip
    to_igh = pyproj.Transformer.from_crs("EPSG:4326", "+proj=igh +R=6370997", always_xy=True)
    for lon, lat in ((west, south), (west, north), (east, south), (east, north)):
        x, y = to_igh.transform(lon, lat)
        assert bounds.left <= x <= bounds.right
        assert bounds.bottom <= y <= bounds.top


def chunk_bytes(path, rows: slice, cols: slice) -> int:
    """The stored bytes of every band's chunks that a window touches, by HDF5's chunk index."""
    total = 0
    with h5py.File(path) as hdf5:
        for dataset in hdf5.values():
            if dataset.ndim != 2 or dataset.chunks is None:
                continue
            for index in range(dataset.id.get_num_chunks()):
                chunk = dataset.id.get_chunk_info(index)
                row, col = chunk.chunk_offset
                if (row < rows.stop and row + dataset.chunks[0] > rows.start
                        and col < cols.stop and col + dataset.chunks[1] > cols.start):  # fmt: skip
                    total += chunk.size
    return total


def test_a_1_percent_box_reads_only_the_chunks_it_touches(gridded, series):
    lon, lat = cell_lonlat(*seen_cell(series[0]))
    west = min(max(lon - 18, -180), 144)
    box = f"{west},{lat - 9},{west + 36},{lat + 9}"  # 36 x 18 degrees: 1% of the globe's
    with gridded.client("bob") as client:
        params = {"bbox": box, "datetime": "2012-12-12", "f": "netcdf"}
        response = client.get(f"/collections/{COLLECTION}/coverage", params=params)
    assert response.status_code == 200, response.text
    read = int(response.headers[BYTES_READ])
    with xr.open_dataset(io.BytesIO(response.content), engine="h5netcdf") as subset:
        assert len(subset.data_vars) == 12 + 2  # every band, with crs and time_bounds
        cols = np.round((subset.x.values - IGH_EXTENT[0]) / CELL - 0.5).astype(int)
        rows = np.round((IGH_EXTENT[3] - subset.y.values) / CELL - 0.5).astype(int)
    touched = chunk_bytes(series[0], slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1))
    size = series[0].stat().st_size
    assert touched <= read <= touched + 64 * 1024  # the chunks, and the file's metadata
    assert read < size / 2


def test_days_as_netcdf_keep_the_grid_and_each_days_values(gridded, series):
    west, south, east, north = around_seen(series, 2.0)
    with gridded.client("bob") as client:
        response = client.get(
            f"/collections/{COLLECTION}/coverage",
            params={"subset": [f"Lon({west}:{east}),Lat({south}:{north})",
                               'time("2012-12-12":"2012-12-14")'],
                    "properties": "ndvi", "f": "netcdf"},
        )  # fmt: skip
    assert response.status_code == 200, response.text
    with xr.open_dataset(io.BytesIO(response.content), engine="h5netcdf") as subset:
        assert [str(t)[:10] for t in subset.time.values] == [
            "2012-12-12", "2012-12-13", "2012-12-14"]  # fmt: skip
        assert "Goode" in subset["crs"].attrs["crs_wkt"] or "igh" in subset["crs"].attrs["proj4"]
        cols = np.round((subset.x.values - IGH_EXTENT[0]) / CELL - 0.5).astype(int)
        rows = np.round((IGH_EXTENT[3] - subset.y.values) / CELL - 0.5).astype(int)
        got = subset["ndvi"].values
    first = physical(series[0], "ndvi")[np.ix_(rows, cols)]
    for day, path in enumerate(series):
        expected = physical(path, "ndvi")[np.ix_(rows, cols)]
        assert np.allclose(got[day], expected, equal_nan=True, atol=1e-6)
        seen = np.isfinite(first) & (first < 0.99)
        assert np.allclose(got[day][seen], first[seen] + day * NDVI_STEP * 1e-4, atol=1e-6)


def test_a_scale_factor_takes_the_cell_under_each_coarser_pixel(gridded, series):
    west, south, east, north = around_seen(series)
    params = {"bbox": f"{west},{south},{east},{north}", "properties": "ndvi",
              "datetime": "2012-12-12"}  # fmt: skip
    with gridded.client("bob") as client:
        whole = client.get(f"/collections/{COLLECTION}/coverage", params=params)
        coarse = client.get(f"/collections/{COLLECTION}/coverage",
                            params={**params, "scale-factor": "4"})  # fmt: skip
        axes = client.get(f"/collections/{COLLECTION}/coverage",
                          params={**params, "scale-axes": "x(2),y(4)"})  # fmt: skip
    with rasterio.MemoryFile(whole.content) as memory, memory.open() as tiff:
        full, width, height, bounds = tiff.read(1), tiff.width, tiff.height, tiff.bounds
    with rasterio.MemoryFile(coarse.content) as memory, memory.open() as tiff:
        small = tiff.read(1)
        assert tiff.bounds == bounds  # the same extent in coarser pixels
    assert small.shape == (round(height / 4), round(width / 4))
    rows = np.floor((np.arange(small.shape[0]) + 0.5) * height / small.shape[0]).astype(int)
    cols = np.floor((np.arange(small.shape[1]) + 0.5) * width / small.shape[1]).astype(int)
    assert np.array_equal(small, full[np.ix_(rows, cols)], equal_nan=True)
    with rasterio.MemoryFile(axes.content) as memory, memory.open() as tiff:
        assert (tiff.height, tiff.width) == (round(height / 4), round(width / 2))


def test_gdal_reads_the_coverage_and_a_window_of_the_latest_day(gridded, series, tmp_path):
    url = f"OGCAPI:{gridded.url}/collections/{COLLECTION}"
    env = {"GDAL_HTTP_HEADERS": f"Authorization: Bearer {gridded.tokens['bob']}",
           "PATH": "/usr/bin:/bin"}  # fmt: skip
    run = {"capture_output": True, "text": True, "env": env, "check": True, "cwd": tmp_path}
    info = subprocess.run(["gdalinfo", url], **run)  # GDAL keeps its cache in ./gdalwmscache
    assert "Size is 5004, 2168" in info.stdout
    assert info.stdout.count("\nBand ") == 12
    row, col = seen_cell(series[0])
    out = tmp_path / "window.tif"
    window = [str(col - 100), str(row - 60), "300", "200"]
    translate = ["gdal_translate", "-q", "-srcwin", *window, "-b", "1", url, str(out)]
    subprocess.run(translate, **run)
    with rasterio.open(out) as tiff:
        got = tiff.read(1)
    expected = physical(series[2], "ndvi")[row - 60 : row + 140, col - 100 : col + 200]
    assert np.isfinite(expected).sum() > 100
    assert np.array_equal(got, expected.astype(np.float32), equal_nan=True)


def test_owslib_finds_the_coverage_and_fetches_a_box(gridded, series):
    headers = {"Authorization": f"Bearer {gridded.tokens['bob']}"}
    client = Coverages(gridded.url, headers=headers)
    assert COLLECTION in client.coverages()
    assert "test-granules" not in client.coverages()
    west, south, east, north = around_seen(series, 3.0)
    answer = client.coverage(COLLECTION, subset=[("Lon", west, east), ("Lat", south, north)],
                             properties=["ndvi"], datetime="2012-12-14")  # fmt: skip
    with rasterio.MemoryFile(answer.read()) as memory, memory.open() as tiff:
        rows, cols = window_of(tiff.transform, tiff.width, tiff.height)
        got = tiff.read(1)
    assert np.array_equal(got, physical(series[2], "ndvi")[rows, cols].astype(np.float32),
                          equal_nan=True)  # fmt: skip


def test_coverages_are_offered_only_on_gridded_collections_their_viewer_sees(gridded):
    with gridded.client("alice") as alice, gridded.client("bob") as bob:
        assert alice.get(f"/collections/{PRIVATE}/coverage/rangetype").status_code == 200
        assert bob.get(f"/collections/{PRIVATE}/coverage").status_code == 404
        refused = bob.get("/collections/test-granules/coverage")
        document = bob.get("/collections/test-granules").json()
        fields = bob.get(f"/collections/{COLLECTION}/coverage/rangetype").json()["field"]
        domain = bob.get(f"/collections/{COLLECTION}/coverage/domainset").json()
    assert refused.status_code == 404
    assert "not gridded" in refused.json()["detail"]
    assert "data_queries" not in document
    assert not any("coverage" in link["rel"] for link in document["links"])
    assert [field["name"] for field in fields][:2] == ["ndvi", "cloud"]
    axes = domain["generalGrid"]["axis"]
    assert (axes[0]["lowerBound"], axes[1]["upperBound"]) == (IGH_EXTENT[0], IGH_EXTENT[3])
    assert axes[2]["coordinate"] == [f"2012-12-1{d}T00:00:00Z" for d in (2, 3, 4)]


def test_gdal_reads_a_zoomed_out_view_of_the_whole_grid(gridded, series, tmp_path):
    url = f"OGCAPI:{gridded.url}/collections/{COLLECTION}"
    env = {"GDAL_HTTP_HEADERS": f"Authorization: Bearer {gridded.tokens['bob']}",
           "PATH": "/usr/bin:/bin"}  # fmt: skip
    out = tmp_path / "globe.tif"
    translate = ["gdal_translate", "-q", "-outsize", "250", "108", "-b", "1", url, str(out)]
    subprocess.run(translate, capture_output=True, text=True, env=env, check=True, cwd=tmp_path)
    with rasterio.open(out) as tiff:
        got = tiff.read(1)
    assert got.shape == (108, 250)
    source = physical(series[2], "ndvi").astype(np.float32)
    seen = got[np.isfinite(got)]
    assert seen.size > 0
    assert np.isin(seen, source[np.isfinite(source)]).all()  # cells of the day, none made up
