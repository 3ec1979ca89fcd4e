"""A gridded collection whose files lie in a bucket (a real S3 server, SeaweedFS), catalogued
where they lie by `nearline ingest s3://...`: its coverage and a point's series are read by
ranged reads of the objects, only the chunks they need, and equal the file's cells."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import rasterio
from PIL import Image

from nearline.grid import get_grid
from nearline.testing.gridded import SCALE, cell_value, write_gridded
from nearline.testing.s3server import SeaweedFS
from nearline.tiles import MapTiles

from ..live_service import LiveService, nearline

COLLECTION = "grid-in-a-bucket"
DAYS = ("2012-12-12", "2012-12-13")


@pytest.fixture
def served(tmp_path: Path, s3_server: SeaweedFS, s3_bucket: str, monkeypatch) -> Iterator[
    tuple[LiveService, int]
]:  # fmt: skip
    """A service whose gridded collection's two files lie in the bucket alone; the size of
    one of them."""
    for name, value in s3_server.credentials().items():
        monkeypatch.setenv(name, value)
    s3 = s3_server.client()
    for number, day in enumerate(DAYS):
        path = write_gridded(tmp_path / f"{day}.nc", day=day, number=number)
        size = path.stat().st_size
        s3.upload_file(str(path), s3_bucket, f"grids/{path.name}")
        path.unlink()
    live = LiveService(tmp_path / "data")
    live.add_user("alice")
    nearline("ingest", f"s3://{s3_bucket}/grids/", "--collection", COLLECTION, data=live.data)
    live.start("--cpus", "2")
    try:
        yield live, size
    finally:
        live.stop()


def test_a_bucketed_collections_box_and_series_read_only_their_chunks(served):
    live, size = served
    grid = get_grid("igh-8km")
    lon, lat = grid.centre_lonlat(step=1)  # the cell centres, to ask for cells exactly
    row, col = 1000, 3000
    with live.client("alice") as client:
        box = client.get(f"/collections/{COLLECTION}/coverage",
                         params={"bbox": "10,10,15,15", "datetime": DAYS[1]})  # fmt: skip
        point = f"POINT({lon[row, col]} {lat[row, col]})"
        series = client.get(f"/collections/{COLLECTION}/position", params={"coords": point})
    assert box.status_code == 200, box.text
    assert int(box.headers["Nearline-Bytes-Read"]) < 0.05 * size
    with rasterio.MemoryFile(box.content) as memory, memory.open() as tiff:
        first_col = round((tiff.transform.c - grid.extent[0]) / 8000)
        first_row = round((grid.extent[3] - tiff.transform.f) / 8000)
        rows = np.arange(first_row, first_row + tiff.height)[:, None]
        cols = np.arange(first_col, first_col + tiff.width)[None, :]
        expected = cell_value(rows, cols, 1) * SCALE
        assert np.allclose(tiff.read(1), expected, atol=1e-6)
    assert series.status_code == 200, series.text
    values = series.json()["ranges"]["ndvi"]["values"]
    assert np.allclose(values, [cell_value(row, col, day) * SCALE for day in (0, 1)])
    assert int(series.headers["Nearline-Bytes-Read"]) < 0.05 * 2 * size


def test_a_bucketed_composites_tiles_are_drawn_from_the_object(served, s3_server, s3_bucket,
                                                                tmp_path):  # fmt: skip
    live, _ = served
    local = tmp_path / "from-the-bucket.nc"
    s3_server.client().download_file(s3_bucket, f"grids/{DAYS[1]}.nc", str(local))
    expected = MapTiles(tmp_path / "local-tiles").tile(local, "WebMercatorQuad", 2, 1, 2, "ndvi")
    with live.client("alice") as client:
        tile = client.get(f"/collections/{COLLECTION}/map/tiles/WebMercatorQuad/2/1/2",
                          params={"band": "ndvi", "datetime": DAYS[1]})  # fmt: skip
        document = client.get(f"/collections/{COLLECTION}").json()
    assert tile.status_code == 200, tile.text
    assert tile.headers["content-type"] == "image/png"
    assert tile.content == expected  # the same pixels as drawn from the file on disk
    with Image.open(io.BytesIO(tile.content)) as png:
        assert (np.asarray(png.convert("RGBA"))[..., 3] > 0).sum() > 10_000  # it shows data
    assert any(link["rel"].endswith("tilesets-map") for link in document["links"])
