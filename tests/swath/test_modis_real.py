"""Real MODIS files (tests/data/real): the Collection 4 MOD04_L2 aerosol granule of 2001-03-07
00:00, read by the general Level-2 reader, and truncated or corrupt copies of it and of the
MOD09GA tile, refused by name and never catalogued."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import shapely
from shapely.geometry import shape

from nearline.archive import open_catalogue
from nearline.errors import GranuleError
from nearline.swath import describe_granule, open_granule

from ..algorithms.modis_reference import read as pyhdf

REAL = Path(__file__).parents[1] / "data" / "real"
MOD04 = REAL / "MOD04_L2.A2001066.0000.004.2003078090622.he2"
MOD09GA = REAL / "MOD09GA.A2008296.h14v17.006.2015181011753.hdf"


def test_the_real_mod04_is_a_level2_swath_of_its_own_description():
    with open_granule(MOD04) as granule:
        assert (granule.reader, granule.product, granule.platform) == (
            "modis-l2",
            "MOD04_L2",
            "terra",
        )
        assert granule.start_time == datetime(2001, 3, 7, 0, 0, tzinfo=UTC)
        assert granule.end_time == datetime(2001, 3, 7, 0, 5, tzinfo=UTC)
        assert (granule.geo_rows, granule.geo_columns, granule.n_lines) == (203, 135, 2030)
        lines, frames = granule.geo_pixels()  # Cell_*_Sampling [5, 2025, 10], [5, 1345, 10]
        assert (lines[0], lines[-1], frames[0], frames[-1]) == (4, 2024, 4, 1344)
        assert len(granule.fields) == 62
        assert "Optical_Depth_Land_And_Ocean" in granule.fields


def test_its_fields_are_decoded_by_their_own_attributes():
    stored, _ = pyhdf(MOD04, "Optical_Depth_Land_And_Ocean")
    with open_granule(MOD04) as granule:
        aod = granule.read_field("Optical_Depth_Land_And_Ocean")
        mask = granule.read_field("Cloud_Mask_QA")  # int8, valid_range [0, -1]: bytes
        error = granule.read_field("Error_Path_Radiance_Land")  # scale 0.0, offset 1e-4
        reflectance = granule.read_field("Mean_Reflectance_Land")  # (band, along, across)
        qa = granule.read_field("Quality_Assurance_Ocean")  # (along, across, byte)
    good = (stored != -9999) & (stored >= 0) & (stored <= 5000)
    assert good.sum() == 37  # high-latitude night and ice: few retrievals
    np.testing.assert_array_equal(np.isfinite(aod), good)
    np.testing.assert_allclose(aod[good], 0.0010000000474974513 * stored[good], rtol=1e-6)
    assert 0.0 < np.nanmin(aod) < np.nanmax(aod) < 0.2
    raw_mask, _ = pyhdf(MOD04, "Cloud_Mask_QA")
    assert mask.dtype == np.uint8
    assert raw_mask.dtype == np.int8
    np.testing.assert_array_equal(mask, raw_mask.view(np.uint8))
    raw_error, error_attrs = pyhdf(MOD04, "Error_Path_Radiance_Land")
    assert (error_attrs["scale_factor"], error_attrs["add_offset"]) == (0.0, pytest.approx(1e-4))
    kept = np.isfinite(error)
    np.testing.assert_allclose(error[kept], 1e-4 * raw_error[kept], rtol=1e-6)  # swapped back
    assert reflectance.shape == (5, 203, 135)
    assert reflectance.dtype == np.float32
    assert qa.shape == (203, 135, 5)
    assert qa.dtype == np.uint8


def test_its_footprint_holds_every_point_and_is_small():
    lon, lat = pyhdf(MOD04, "Longitude")[0], pyhdf(MOD04, "Latitude")[0]
    assert lat.min() > 55.5
    assert lat.max() < 78.9
    summary = describe_granule(MOD04)
    # seven 10 km cells straddling ±180 hold longitudes averaged to about 0: put back
    assert summary.warnings == (
        "7 Longitude values averaged across ±180 (near 0 between neighbours at ±180) were put "
        "back on the antimeridian",
    )
    footprint = shape(summary.geometry)
    assert summary.geometry["type"] == "MultiPolygon"  # cut at the antimeridian
    with open_granule(MOD04) as granule:
        fixed_lon, fixed_lat = granule.read_lonlat()
    assert np.abs(np.abs(fixed_lon[np.abs(lon) < 1]) - 180).max() < 0.5
    points = shapely.points(np.where(fixed_lon == 180, -180, fixed_lon).ravel(), fixed_lat.ravel())
    assert shapely.covers(footprint, points).all()
    west, south, east, north = summary.bbox
    # CoreMetadata's bounding rectangle: 146.57 to -140.83, 55.30 to 78.94
    assert 145.0 < west < 146.6
    assert -141.0 < east < -140.5
    assert west > east
    assert 55.0 < south < 55.6
    assert 78.8 < north < 79.2
    span = east - west + 360 if west > east else east - west
    assert span < 80  # 73.5 degrees of longitude, not a band round the world
    assert footprint.area < 0.7 * span * (north - south)  # a slanted swath, not its bbox


def copies(tmp_path: Path) -> list[Path]:
    """A truncated copy (its first half) and a corrupt one (100 KB overwritten mid-file) of
    each real file."""
    made = []
    for real in (MOD04, MOD09GA):
        data = real.read_bytes()
        half = len(data) // 2
        corrupt = data[:half] + b"\xa5" * 100_000 + data[half + 100_000 :]
        for kind, damaged in (("truncated", data[:half]), ("corrupt", corrupt)):
            folder = tmp_path / kind / real.stem
            folder.mkdir(parents=True)
            (folder / real.name).write_bytes(damaged)
            made.append(folder / real.name)
    return made


def test_truncated_and_corrupt_copies_are_refused_naming_them(tmp_path):
    for path in copies(tmp_path):
        with pytest.raises(GranuleError) as refused:
            describe_granule(path)
        message = str(refused.value)
        assert message.startswith(f"granule {path}: ")
        assert "truncated or corrupt" in message
        assert "\n" not in message


def test_nearline_ingest_of_them_adds_nothing(tmp_path):
    data = tmp_path / "data"
    nearline = str(Path(sys.executable).parent / "nearline")
    for path in copies(tmp_path / "copies"):
        done = subprocess.run(
            [nearline, "ingest", str(path), "--collection", "real", "--data", str(data),
             "--workers", "1"],
            capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, timeout=120,
        )  # fmt: skip
        assert done.returncode != 0
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1
        assert str(path) in lines[0]
        assert "Traceback" not in done.stderr
    with open_catalogue(None, data / "catalogue.db") as catalogue:
        assert catalogue.count("real") == 0
