"""Subsetting the real granules: the AVHRR FDR and VGAC (netCDF), the MODIS Collection 4
MOD04_L2 (HDF4) and the TIROS-N POD Level 1b, each cut compared with numpy slices of the
source read by the ecosystem's readers (xarray, netCDF4, pyhdf, pygac) and reopened by them
and by nearline's own readers."""

from __future__ import annotations

import shutil
import warnings
from datetime import UTC, datetime

import netCDF4
import numpy as np
import pytest
import xarray as xr

from nearline.errors import SubsetEmpty, SubsetError
from nearline.swath import open_granule, subset_granule


def test_the_fdr_is_cut_to_a_box_and_keeps_its_coordinates(real_file, tmp_path):
    source = real_file("avhrr-fdr-l1c")
    with xr.open_dataset(source) as whole:
        lat, lon = whole["latitude"].values, whole["longitude"].values
        bt4 = whole["brightness_temperature_channel_4"].values
    bbox = [-134.28, 19.0, -120.0, 20.6]
    touching = np.flatnonzero(
        ((lat >= 19) & (lat <= 20.6) & (lon >= -134.28) & (lon <= -120)).any(1)
    )
    result = subset_granule(
        source, tmp_path, {"bbox": bbox, "variables": ["brightness_temperature_channel_4"]}
    )
    assert (result.first, result.stop) == (touching[0], touching[-1] + 1) == (0, 7)
    with xr.open_dataset(result.path) as cut:
        assert sorted(cut.variables) == sorted(
            ["acq_time", "brightness_temperature_channel_4", "latitude", "longitude", "x", "y"]
        )
        np.testing.assert_array_equal(cut["brightness_temperature_channel_4"].values, bt4[0:7])
        np.testing.assert_array_equal(cut["latitude"].values, lat[0:7])
        assert cut.attrs["time_coverage_start"] == "19810330T042358Z"
        assert cut.attrs["time_coverage_end"] == "19810330T042401Z"
        assert cut.attrs["geospatial_lat_max"] == pytest.approx(float(np.nanmax(lat[0:7])))
    with open_granule(result.path) as granule:  # one channel: a CF swath, no longer the FDR
        assert granule.reader == "cf-netcdf"
        assert granule.n_lines == 7
    whole_lines = subset_granule(source, tmp_path / "all.nc", {"bbox": bbox})
    with open_granule(whole_lines.path) as granule:  # every variable: still the FDR
        assert granule.reader == "avhrr-l1c"
        assert granule.n_lines == 7


def test_vgac_is_cut_to_a_window_with_its_time_origin(real_file, tmp_path):
    source = real_file("vgac")
    window = "2018-11-01T10:42:10Z/2018-11-01T10:42:13Z"
    result = subset_granule(source, tmp_path, {"datetime": window, "variables": ["M15"]})
    assert (result.first, result.stop) == (1, 6)
    with netCDF4.Dataset(source) as src, netCDF4.Dataset(result.path) as cut:
        assert list(cut.variables) == ["proj_time0", "time", "lat", "lon", "M15", "M15_LUT"]
        for name in ("M15", "lat", "lon", "time"):
            np.testing.assert_array_equal(cut[name][:], src[name][1:6])
        np.testing.assert_array_equal(cut["M15_LUT"][:], src["M15_LUT"][:])
        assert cut.time_coverage_start == "2018-11-01T10:42:10"
    with xr.open_dataset(result.path, decode_times=False) as cut:  # as VGAC must be opened
        assert cut.sizes["nscn"] == 5
    with open_granule(result.path) as granule:
        assert granule.start_time == result.start == datetime(2018, 11, 1, 10, 42, 10, 395000, UTC)


def test_mod04_is_cut_by_scans_with_its_metadata(real_file, tmp_path):
    from pyhdf.SD import SD

    source = real_file("mod04-l2")
    bbox = [170.0, 60.0, 180.0, 66.0]
    result = subset_granule(source, tmp_path, {"bbox": bbox})
    src, cut = SD(str(source)), SD(str(result.path))
    try:
        lat, lon = src.select("Latitude")[:], src.select("Longitude")[:]
        touching = np.flatnonzero(((lat >= 60) & (lat <= 66) & (lon >= 170) & (lon <= 180)).any(1))
        assert (result.first, result.stop) == (touching[0], touching[-1] + 1)  # 10 km: a row a scan
        rows = slice(result.first, result.stop)
        for name in ("Latitude", "Optical_Depth_Land_And_Ocean", "Scan_Start_Time"):
            np.testing.assert_array_equal(cut.select(name)[:], src.select(name)[:][rows])
        np.testing.assert_array_equal(
            cut.select("Mean_Reflectance_Land")[:], src.select("Mean_Reflectance_Land")[:][:, rows]
        )
        np.testing.assert_array_equal(
            cut.select("Quality_Assurance_Land")[:], src.select("Quality_Assurance_Land")[:][rows]
        )
        assert sorted(cut.datasets()) == sorted(src.datasets())
        assert cut.attributes()["Number_of_Instrument_Scans"] == result.stop - result.first
        core = cut.attributes()["CoreMetadata.0"]
        assert '"00:03:05.466000"' in core  # RANGEBEGINNINGTIME: the first kept scan, UTC
    finally:
        src.end()
        cut.end()
    with open_granule(result.path) as granule:
        assert granule.product == "MOD04_L2"
        assert granule.start_time == result.start == datetime(2001, 3, 7, 0, 3, 5, 466000, UTC)
        assert granule.read_field("Optical_Depth_Land_And_Ocean").shape == (
            result.stop - result.first,
            135,
        )
    with pytest.raises(SubsetError, match="has no SDS 'AOD'; it holds Aerosol_Type_Land"):
        subset_granule(source, tmp_path / "no.hdf", {"variables": ["AOD"]})
    assert not (tmp_path / "no.hdf").exists()


def test_the_pod_file_is_cut_by_records_and_pygac_reads_it(real_file, tmp_path):
    from pygac.gac_pod import GACPODReader

    folder = tmp_path / "in"
    folder.mkdir()
    source = folder / real_file("avhrr-gac-pod").name
    shutil.copy(real_file("avhrr-gac-pod"), source)
    shutil.copy(real_file("tle-tirosn"), folder)
    with open_granule(source) as granule:
        block = granule.read(0, granule.n_lines)
    result = subset_granule(
        source, tmp_path, {"datetime": "1980-01-03T11:47:17Z/1980-01-03T11:47:20Z"}
    )
    assert (result.first, result.stop, result.source_rows) == (4, 10, 16)
    shutil.copy(real_file("tle-tirosn"), tmp_path)
    with open_granule(result.path) as granule:
        cut = granule.read(0, granule.n_lines)
        assert granule.warnings == ()  # the header promises 6 lines, and holds 6
    np.testing.assert_array_equal(cut.counts, block.counts[:, 4:10])
    np.testing.assert_array_equal(cut.tie_lat, block.tie_lat[4:10])
    np.testing.assert_array_equal(cut.times, block.times[4:10])
    reader = GACPODReader(interpolate_coords=False, tle_dir=str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader.read(str(result.path))
    assert int(reader.head["number_of_scans"]) == 6
    assert reader.get_times()[0] == np.datetime64("1980-01-03T11:47:17.469")
    with pytest.raises(SubsetEmpty, match="no pixel lies in the bbox"):
        subset_granule(source, tmp_path / "none", {"bbox": [-10, -10, 10, 10]})
    assert not (tmp_path / "none").exists()
