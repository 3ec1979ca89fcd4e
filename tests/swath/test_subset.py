"""Subsetting nearline's own granules (netCDF, KLM Level 1b, MODIS Level 2): the cut holds
exactly the source's rows touching the box and window (numpy slices of the source read with
netCDF4, pygac and pyhdf), reopens with nearline's readers and the ecosystem's, and bad
requests are typed errors that leave no file."""

from __future__ import annotations

import warnings
from datetime import UTC, datetime
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from nearline.errors import SubsetEmpty, SubsetError
from nearline.swath import (
    SubsetRequest,
    lonlat,
    open_granule,
    subset_granule,
    synthesize_day,
    synthesize_modis_day,
)
from nearline.swath._gac_klm import write_klm
from nearline.swath._subset_modis import tai93_to_utc


@pytest.fixture(scope="module")
def granule(tmp_path_factory) -> Path:
    """One 400-line NOAA-19 orbit start as nearline's netCDF granule."""
    folder = tmp_path_factory.mktemp("day")
    return synthesize_day("2012-12-12", 1, folder, lines_per_orbit=400)[0]


@pytest.fixture(scope="module")
def source(granule):
    with open_granule(granule) as opened:
        block = opened.read(0, opened.n_lines)
    return block, *lonlat(block)


@pytest.fixture(scope="module")
def modis(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("modis")
    return synthesize_modis_day("MOD05_L2", "2012-12-12", 1, folder, first=110, scans=20)[0]


def _touching(lon, lat, bbox):
    west, south, east, north = bbox
    rows = np.flatnonzero(((lon >= west) & (lon <= east) & (lat >= south) & (lat <= north)).any(1))
    return rows[0], rows[-1] + 1


def test_a_box_keeps_exactly_the_rows_with_a_pixel_in_it(granule, source, tmp_path):
    block, lon, lat = source
    bbox = [-150.0, -57.0, -140.0, -52.0]
    first, stop = _touching(lon, lat, bbox)
    assert 0 < first < stop < block.n_lines  # the box cuts both ends
    result = subset_granule(granule, tmp_path, {"bbox": bbox})
    assert (result.first, result.stop, result.source_rows) == (first, stop, 400)
    assert result.path.name == granule.stem + ".subset.nc"
    with netCDF4.Dataset(granule) as src, netCDF4.Dataset(result.path) as cut:
        assert set(cut.variables) == set(src.variables)
        for name in ("counts", "latitude", "longitude", "time", "ict_counts", "prt_counts"):
            whole = src[name][:]
            expected = whole[:, first:stop] if name == "counts" else whole[first:stop]
            np.testing.assert_array_equal(cut[name][:], expected)
        assert cut.time_coverage_start == "2012-12-12T00:00:" + f"{first / 2:04.1f}"[:2] + "+00:00"
        assert "nearline subset of" in cut.history
    with open_granule(result.path) as opened:  # nearline's own reader reads the cut
        assert opened.n_lines == stop - first
        assert (
            opened.start_time
            == datetime(2012, 12, 12, tzinfo=UTC) + (block.times[first] - block.times[0]).item()
        )
        np.testing.assert_array_equal(
            opened.read(0, opened.n_lines).counts, block.counts[:, first:stop]
        )


def test_variables_and_a_window_keep_what_they_need(granule, tmp_path):
    window = "2012-12-12T00:01:00Z/2012-12-12T00:02:00Z"
    result = subset_granule(
        granule, tmp_path / "cut.nc", {"variables": ["counts"], "datetime": window}
    )
    assert (result.first, result.stop) == (120, 241)  # two lines a second, both ends kept
    assert result.start == datetime(2012, 12, 12, 0, 1, tzinfo=UTC)
    assert result.end == datetime(2012, 12, 12, 0, 2, tzinfo=UTC)
    with netCDF4.Dataset(granule) as src, netCDF4.Dataset(result.path) as cut:
        assert list(cut.variables) == ["channel", "counts", "latitude", "longitude", "time"]
        np.testing.assert_array_equal(cut["counts"][:], src["counts"][:, 120:241])
        assert cut.time_coverage_end.startswith("2012-12-12T00:02:00")


def test_klm_level1b_keeps_header_and_records_and_reads_back(granule, source, tmp_path):
    from pygac.gac_klm import GACKLMReader

    block, lon, lat = source
    l1b = tmp_path / "NSS.GHRR.NP.D12347.S0000.E0003.B0000001.GC"
    write_klm(l1b, block, archive_header=True)
    bbox = [-150.0, -57.0, -140.0, -52.0]
    first, stop = _touching(lon, lat, bbox)
    result = subset_granule(l1b, tmp_path, {"bbox": bbox})
    assert (result.first, result.stop) == (first, stop)
    assert result.path.name == l1b.name + ".subset"
    with open_granule(result.path) as opened:
        assert opened.warnings == ()  # the header promises exactly the records it holds
        cut = opened.read(0, opened.n_lines)
    np.testing.assert_array_equal(cut.counts, block.counts[:, first:stop])
    np.testing.assert_allclose(cut.tie_lat, block.tie_lat[first:stop], atol=1e-4)
    np.testing.assert_array_equal(cut.times, block.times[first:stop].astype("datetime64[ms]"))
    reader = GACKLMReader(interpolate_coords=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reader.read(str(result.path))
    assert int(reader.head["count_of_data_records"]) == stop - first
    assert list(reader.scans["scan_line_number"]) == list(range(1, stop - first + 1))
    start = block.times[first].astype("datetime64[ms]").astype(datetime)
    assert reader.head["data_set_name"].decode().startswith(f"NSS.GHRR.NP.D12347.S{start:%H%M}.E")
    with pytest.raises(SubsetError, match=r"whole\s+records are kept"):
        subset_granule(l1b, tmp_path / "no", {"variables": ["counts"]})
    assert not (tmp_path / "no").exists()


def test_modis_is_cut_by_whole_scans_at_every_resolution(modis, tmp_path):
    from pyhdf.SD import SD

    result = subset_granule(
        modis, tmp_path, {"datetime": "2012-12-12T09:10:05Z/2012-12-12T09:10:10Z"}
    )
    assert result.path.name == modis.stem + ".hdf"
    assert result.path.parent == tmp_path
    assert (result.first % 2, result.stop % 2) == (0, 0)  # 5 km rows, two a scan
    scans = slice(result.first // 2, result.stop // 2)
    src, cut = SD(str(modis)), SD(str(result.path))
    try:
        for name, per_scan in (
            ("Latitude", 2),
            ("Water_Vapor_Infrared", 2),
            ("Water_Vapor_Near_Infrared", 10),
            ("Quality_Assurance_Near_Infrared", 10),
        ):
            rows = slice(scans.start * per_scan, scans.stop * per_scan)
            np.testing.assert_array_equal(cut.select(name)[:], src.select(name)[:][rows])
            assert cut.select(name).attributes() == src.select(name).attributes()
        assert cut.attributes()["Number_of_Instrument_Scans"] == scans.stop - scans.start
        struct = cut.attributes()["StructMetadata.0"]
        assert (
            f'"Cell_Along_Swath_1km:mod05"\n\t\t\t\tSize={10 * (scans.stop - scans.start)}'
            in struct
        )
    finally:
        src.end()
        cut.end()
    with open_granule(result.path) as opened:
        assert opened.n_lines == 10 * (scans.stop - scans.start)
        assert opened.start_time == result.start
        lon, _lat = opened.read_lonlat("1km")
        assert lon.shape == (opened.n_lines, 1354)
    from satpy import Scene

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene = Scene(filenames=[str(result.path)], reader="modis_l2")
        scene.load(["water_vapor_infrared"])
        with open_granule(result.path) as opened:
            np.testing.assert_allclose(
                scene["water_vapor_infrared"].values,
                opened.read_field("Water_Vapor_Infrared"),
                rtol=1e-6,
            )


def test_modis_variables_keep_the_geolocation_and_drop_other_fields(modis, tmp_path):
    from pyhdf.SD import SD

    subset_granule(modis, tmp_path / "v.hdf", {"variables": ["Solar_Zenith"]})
    cut = SD(str(tmp_path / "v.hdf"))
    try:
        assert sorted(cut.datasets()) == ["Latitude", "Longitude", "Solar_Zenith"]
        struct = cut.attributes()["StructMetadata.0"]
        assert 'DataFieldName="Solar_Zenith"' in struct
        assert "Water_Vapor" not in struct
        assert "OBJECT=DataField_1\n" in struct
        assert "DataField_2" not in struct
    finally:
        cut.end()


def test_tai93_is_taken_to_utc_with_the_leap_seconds():
    # 2001-03-07 00:00:06 TAI93-naive is 00:00:01 UTC: five leap seconds came 1993-1999
    seconds = (np.datetime64("2001-03-07T00:00:06") - np.datetime64("1993-01-01")) / np.timedelta64(
        1, "s"
    )
    assert tai93_to_utc(np.array([seconds]))[0] == np.datetime64("2001-03-07T00:00:01", "ms")
    assert np.isnat(tai93_to_utc(np.array([np.nan]))[0])


@pytest.mark.parametrize(
    ("request_", "error", "words"),
    [
        ({"variables": ["no_such"]}, SubsetError, "has no variable 'no_such'; it holds channel"),
        ({"bbox": [10, 50, 20, 40]}, SubsetError, "is reversed: south (50.0) lies north of north"),
        ({"bbox": [10, 40, 200, 50]}, SubsetError, "longitudes must lie in -180..180"),
        (
            {"datetime": "2012-12-13T00:00:00Z/2012-12-14T00:00:00Z"},
            SubsetEmpty,
            "no scan line lies in the window 2012-12-13T00:00:00Z/2012-12-14T00:00:00Z",
        ),
        ({"datetime": "2012-12-13T00:00:00Z/2012-12-12T00:00:00Z"}, SubsetError, "is reversed"),
        ({"bbox": [0, 0, 10, 10]}, SubsetEmpty, "no pixel lies in the bbox [0.0, 0.0, 10.0, 10.0]"),
        ({"box": [0, 0, 10, 10]}, SubsetError, "unknown key 'box'"),
    ],
)
def test_bad_requests_are_typed_errors_and_leave_no_file(granule, tmp_path, request_, error, words):
    with pytest.raises(error) as raised:
        subset_granule(granule, tmp_path, request_)
    assert words in str(raised.value)
    assert list(tmp_path.iterdir()) == []  # nothing, not even the temporary


def test_a_request_round_trips_through_its_json_form():
    request = SubsetRequest.from_dict(
        {
            "variables": ["a", "a", "b"],
            "bbox": [170, -10, -170, 10],
            "datetime": "2012-12-12T00:00:00/..",
        }
    )
    assert request.variables == ("a", "b")
    assert request.start == datetime(2012, 12, 12, tzinfo=UTC)
    assert request.end is None
    assert request.to_dict() == {
        "variables": ["a", "b"],
        "bbox": [170.0, -10.0, -170.0, 10.0],
        "datetime": "2012-12-12T00:00:00Z/..",
    }
    assert SubsetRequest.from_dict(request.to_dict()) == request
