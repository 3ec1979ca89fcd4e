"""The AVHRR GAC FDR Level 1C (EUMETSAT, NOAA-6, 1981-03-30; 11 lines of a night orbit over
the eastern North Pacific), read by the avhrr-l1c reader: catalogued by its own line times,
decoded by the chain rather than calibrated, and composited where the swath really was."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import shapely
from PIL import Image
from shapely.geometry import shape

from nearline.composite._ancillary import Ancillary
from nearline.composite._calibration import line_calibration
from nearline.composite._cloudmask import CH4_CH5
from nearline.composite._observe import BAD_CALIBRATION, NIGHT, observe
from nearline.composite._quicklook import NO_DATA, NO_DATA_LAND, OUTSIDE
from nearline.composite._reducers import RANK_BT4
from nearline.grid import FootprintRegistrar, get_grid
from nearline.swath import TIE_COLUMNS, describe_granule, open_granule
from nearline.swath._fdr import FDRReader
from nearline.testing.reader import ReaderTests

from ..catalogued import (
    NEARLINE,
    assert_broken_copy_refused,
    assert_tight_footprint,
    assert_valid_stac,
    ingested,
)

KEY = "avhrr-fdr-l1c"
FIRST_LINE = datetime(1981, 3, 30, 4, 23, 58, 206000, tzinfo=UTC)
LAST_LINE = datetime(1981, 3, 30, 4, 24, 3, 206000, tzinfo=UTC)


def file_values(path: Path) -> dict[str, np.ndarray]:
    """The file's variables as netCDF4 unpacks them (NaN where it has no value)."""
    names = ("latitude", "longitude", "brightness_temperature_channel_3",
             "brightness_temperature_channel_4", "solar_azimuth_angle", "sensor_azimuth_angle",
             "acq_time")  # fmt: skip
    with netCDF4.Dataset(path) as dataset:
        return {name: np.ma.filled(dataset[name][:].astype(float), np.nan) for name in names}


@pytest.fixture(scope="module")
def fdr(real_file) -> Path:
    return real_file(KEY)


def test_it_is_catalogued_by_its_line_times_not_its_record_or_orbit(fdr):
    summary = describe_granule(fdr)
    assert (summary.reader, summary.product, summary.platform, summary.instrument) == (
        "avhrr-l1c", "AVHRR_GAC_L1C_FDR", "noaa6", "avhrr"
    )  # fmt: skip
    assert (summary.start, summary.end, summary.n_lines) == (FIRST_LINE, LAST_LINE, 11)
    with netCDF4.Dataset(fdr) as dataset:  # what the attributes would have said
        assert (dataset.time_coverage_start, dataset.time_coverage_end) == (
            "19800101T000000Z", "19820803T003900Z"
        )  # fmt: skip
        assert (dataset.start_time, dataset.end_time) == ("19810330T042358Z", "19810330T060903Z")
    values = file_values(fdr)
    assert_tight_footprint(summary, values["longitude"], values["latitude"])


def test_nearline_ingest_makes_a_valid_stac_item(fdr, tmp_path):
    item = ingested(fdr, tmp_path / "data")
    assert (item.start, item.end) == (FIRST_LINE, LAST_LINE)
    stac = assert_valid_stac(item)
    properties = stac["properties"]
    assert (properties["platform"], properties["instruments"]) == ("noaa6", ["avhrr"])
    assert (properties["nearline:reader"], properties["nearline:lines"]) == ("avhrr-l1c", 11)
    assert properties["nearline:product"] == "AVHRR_GAC_L1C_FDR"
    assert stac["assets"]["data"]["type"] == "application/x-netcdf"


class TestTheReaderContract(ReaderTests):
    reader = FDRReader

    @pytest.fixture
    def granule_path(self, fdr) -> Path:
        return fdr


def test_blocks_carry_the_stored_values_the_file_geometry_and_the_scaling(fdr):
    values = file_values(fdr)
    with open_granule(fdr) as granule:
        block = granule.read(0, granule.n_lines)
        telemetry = granule.read_telemetry()
    scaling = telemetry.scaling
    bt3, bt4 = scaling.channels[2], scaling.channels[3]
    assert (bt4.quantity, bt4.scale, bt4.offset, bt4.fill) == (
        "brightness_temperature", 0.01, 273.15, -32767
    )  # fmt: skip
    assert scaling.channels[4] is None  # AVHRR/1: no channel 5
    assert telemetry.ch3_select is None  # no channel 3a before AVHRR/3
    stored = block.counts.view(np.int16)
    np.testing.assert_allclose(stored[3] * bt4.scale + bt4.offset,
                               values["brightness_temperature_channel_4"], atol=1e-9)  # fmt: skip
    np.testing.assert_allclose(stored[2] * bt3.scale + bt3.offset,
                               values["brightness_temperature_channel_3"], atol=1e-9)  # fmt: skip
    assert (stored[0] == -32767).mean() > 0.97  # night: channel 1 is fill nearly everywhere
    for field, name in (("tie_lat", "latitude"), ("tie_lon", "longitude")):  # float32
        want = values[name][:, TIE_COLUMNS].astype(np.float32)
        np.testing.assert_array_equal(getattr(block, field), want)
    difference = values["solar_azimuth_angle"] - values["sensor_azimuth_angle"]
    folded = np.abs((difference + 180) % 360 - 180)[:, TIE_COLUMNS]  # |sun - sensor azimuth|
    np.testing.assert_allclose(block.tie_rel_azimuth, folded, atol=0.011)
    seconds = block.times.astype("datetime64[ms]").astype(np.int64) / 1e3
    np.testing.assert_allclose(seconds, values["acq_time"], atol=1e-3)


def test_the_chain_decodes_it_and_a_missing_channel_5_marks_nothing(fdr):
    values = file_values(fdr)
    with open_granule(fdr) as granule:
        calibration = line_calibration(granule.read_telemetry(), granule.platform)
        observed = observe(granule.read(0, granule.n_lines), calibration, Ancillary.load())
    np.testing.assert_allclose(observed.bt4, values["brightness_temperature_channel_4"], atol=1e-4)
    np.testing.assert_allclose(observed.bt3, values["brightness_temperature_channel_3"], atol=1e-4)
    assert np.isnan(observed.bt5).all()
    assert not (observed.qc & BAD_CALIBRATION).any()
    assert (observed.qc & NIGHT).all()  # solar zenith 96-120 degrees
    assert not (observed.cloud & CH4_CH5).any()  # the split-window test needs channel 5
    clear = (observed.cloud == 0).mean()
    assert 0 < clear < 0.05  # a cloudy night: cold tops down to 208 K, yet not every pixel


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "garbled"])
def test_broken_copies_are_refused_naming_the_file(fdr, damage, tmp_path):
    assert_broken_copy_refused(fdr, damage, tmp_path, chunk_of="latitude")


# -- nearline composite ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def composite(fdr, tmp_path_factory) -> tuple[Path, Path]:
    """``nearline composite`` of a folder holding (a link to) the FDR file, warmest channel 4
    per cell (the file is a night pass: maximum NDVI has nothing to keep)."""
    folder = tmp_path_factory.mktemp("fdr")
    (folder / "in").mkdir()
    (folder / "in" / fdr.name).symlink_to(fdr)
    out, png = folder / "night.nc", folder / "night.png"
    command = [str(NEARLINE), "composite", str(folder / "in"), "--out", str(out), "--png",
               str(png), "--reducer", "max-bt4", "--workers", "1"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out, png


def filled_bt4(out: Path) -> np.ndarray:
    with netCDF4.Dataset(out) as dataset:
        assert dataset.input_granules.split() == [
            "AVHRR-GAC_FDR_1C_N06_19810330T042358Z_19810330T060903Z_R_O_20200101T000000Z_0100.nc"
        ]
        return np.ma.filled(dataset["bt4"][:].astype(np.float64), np.nan)


def test_the_composite_fills_cells_only_where_the_swath_was(fdr, composite):
    bt4 = filled_bt4(composite[0])
    filled = ~np.isnan(bt4)
    assert filled.sum() > 1500  # 11 lines x 2,800 km of 8 km cells
    lon, lat = get_grid("igh-8km").centre_lonlat()
    grown = shape(describe_granule(fdr).geometry).buffer(0.1)  # a cell: 8 km, under 0.1 deg
    assert shapely.covers(grown, shapely.points(lon[filled], lat[filled])).all()
    with netCDF4.Dataset(composite[0]) as dataset:  # it says what it was made of
        assert dataset.source == "AVHRR_GAC_L1C_FDR, composited by nearline"
        assert dataset.input_granules == fdr.name


def test_each_cell_keeps_the_file_bt4_of_its_warmest_clear_pixel(fdr, composite):
    """The cell's value is the channel-4 temperature of one pixel whose footprint reached it,
    to the output's 0.01 K; max-bt4 keeps a clear one first, the warmest to its 1.5 K step
    (then the nearest nadir): never more than a step below the warmest clear one."""
    bt4 = filled_bt4(composite[0])
    grid = get_grid("igh-8km")
    file_bt4 = file_values(fdr)["brightness_temperature_channel_4"].ravel()
    with open_granule(fdr) as granule:
        calibration = line_calibration(granule.read_telemetry(), granule.platform)
        observed = observe(granule.read(0, granule.n_lines), calibration, Ancillary.load())
    cells, pixels = FootprintRegistrar(grid).register(observed.lon, observed.lat)
    clear = ((observed.cloud == 0) & ((observed.qc & BAD_CALIBRATION) == 0)).ravel()
    assert np.array_equal(np.flatnonzero(~np.isnan(bt4.ravel())), np.unique(cells))
    step = RANK_BT4.step * 0.01  # K
    for cell in np.unique(cells):
        seen = pixels[cells == cell]
        value = bt4.ravel()[cell]
        assert np.abs(file_bt4[seen] - value).min() < 0.006, cell
        if clear[seen].any():
            assert value >= file_bt4[seen][clear[seen]].max() - step
        else:
            assert value >= file_bt4[seen].max() - step


def test_the_quicklook_colours_exactly_the_filled_cells(composite):
    bt4 = filled_bt4(composite[0])
    image = np.asarray(Image.open(composite[1]).convert("RGB"))
    step = 2  # 5,004 columns thinned to at most 2,502
    shown = bt4[::step, ::step]
    map_part = image[: shown.shape[0], : shown.shape[1]]
    plain = np.zeros(shown.shape, bool)
    for colour in (NO_DATA, NO_DATA_LAND, OUTSIDE):
        plain |= (map_part == colour).all(axis=-1)
    assert np.array_equal(~plain, ~np.isnan(shown))
    assert (~plain).sum() > 300


def test_a_day_only_composite_of_the_night_pass_says_why_it_is_empty(fdr, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / fdr.name).symlink_to(fdr)
    command = [str(NEARLINE), "composite", str(tmp_path / "in"), "--out", str(tmp_path / "o.nc"),
               "--workers", "1"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())  # the console wraps its lines
    assert "no pixel was composited: the max-ndvi composite takes sunlit pixels" in said
    assert "--reducer max-bt4 composites by night too" in said
    assert np.isnan(filled_bt4(tmp_path / "o.nc")).all()
