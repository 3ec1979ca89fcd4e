"""VGAC (VIIRS on NOAA-20 resampled to look like AVHRR GAC; 11 lines x 801 pixels of an orbit
of 2018-11-01 over the southern Indian Ocean), catalogued by the cf-netcdf reader: its own
line times (hours since a ``proj_time0`` variable), not the orbit its attributes describe."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import netCDF4
import pytest

from nearline.errors import GranuleError
from nearline.swath import describe_granule, open_granule

from ..catalogued import (
    assert_broken_copy_refused,
    assert_tight_footprint,
    assert_valid_stac,
    ingested,
)

KEY = "vgac"


@pytest.fixture(scope="module")
def vgac(real_file) -> Path:
    return real_file(KEY)


def line_times(path: Path) -> tuple[datetime, datetime]:
    """The first and last line's time as satpy's VGAC reader reads them: ``time`` hours after
    ``proj_time0``, itself days after 1 January 2010 (written day/month/year)."""
    with netCDF4.Dataset(path) as dataset:
        assert dataset["proj_time0"].units == "days since 01/01/2010T00:00:00"
        assert dataset["time"].units == "hours since proj_time0"
        epoch = datetime(2010, 1, 1, tzinfo=UTC) + timedelta(days=float(dataset["proj_time0"][...]))
        hours = dataset["time"][:]
    return epoch + timedelta(hours=float(hours[0])), epoch + timedelta(hours=float(hours[-1]))


def test_it_is_catalogued_by_its_line_times_not_its_orbit(vgac):
    summary = describe_granule(vgac)
    assert (summary.reader, summary.product, summary.platform, summary.instrument) == (
        "cf-netcdf", "VGAC", "noaa20", "viirs"
    )  # fmt: skip
    first, last = line_times(vgac)
    assert abs(summary.start - first) <= timedelta(milliseconds=1)
    assert abs(summary.end - last) <= timedelta(milliseconds=1)
    assert summary.start.replace(microsecond=0) == datetime(2018, 11, 1, 10, 42, 8, tzinfo=UTC)
    assert timedelta(seconds=7) < summary.end - summary.start < timedelta(seconds=7.2)
    with netCDF4.Dataset(vgac) as dataset:  # the orbit the file was cut from: 1 h 42 min
        assert (dataset.time_coverage_start, dataset.time_coverage_end) == (
            "2018-11-01T10:42:08", "2018-11-01T12:24:09"
        )  # fmt: skip
        lon, lat = dataset["lon"][:], dataset["lat"][:]
    assert summary.n_lines == 11
    assert_tight_footprint(summary, lon, lat)


def test_nearline_ingest_makes_a_valid_stac_item(vgac, tmp_path):
    item = ingested(vgac, tmp_path / "data")
    stac = assert_valid_stac(item)
    properties = stac["properties"]
    assert (properties["platform"], properties["instruments"]) == ("noaa20", ["viirs"])
    assert (properties["nearline:product"], properties["nearline:lines"]) == ("VGAC", 11)
    assert properties["start_datetime"].startswith("2018-11-01T10:42:08.")


def test_it_is_catalogued_not_composited(vgac):
    with open_granule(vgac) as granule, pytest.raises(GranuleError, match="no AVHRR counts"):
        granule.read(0, 4)


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "garbled"])
def test_broken_copies_are_refused_naming_the_file(vgac, damage, tmp_path):
    assert_broken_copy_refused(vgac, damage, tmp_path, chunk_of="lat")
