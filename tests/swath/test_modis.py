"""MODIS Level-2 granules: synthesised in the products' HDF4 layout, read back by nearline's
reader, by pyhdf on its own and by satpy's modis_l2 reader, and catalogued by ingest."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from pyhdf.SD import SD, SDC

from nearline.archive import Search
from nearline.archive._catalogues import open_catalogue
from nearline.errors import GranuleError
from nearline.swath import _orbit as orbit
from nearline.swath import describe_granule, open_granule
from nearline.swath._modis import ModisL2Reader
from nearline.swath._modis_products import PRODUCTS
from nearline.swath._modis_synth import TERRA_TLE, scan_angles, synthesize_modis_day

# Terra's tenth-past-nine descending pass of 2012-12-12 crosses 5 N over the Central African
# Republic in daylight: land nearly everywhere under the 20 scans (200 lines) written here.
FIRST = 110
START = datetime(2012, 12, 12, 9, 10, tzinfo=UTC)
SCANS = 20
PRODUCED = datetime(2026, 11, 25, 2, 15, tzinfo=UTC)


@pytest.fixture(scope="module")
def granules(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("modis")
    return {
        name: synthesize_modis_day(
            name, "2012-12-12", 1, folder / name, first=FIRST, scans=SCANS, produced=PRODUCED
        )[0]
        for name in PRODUCTS
    }


def _sds(path: Path) -> dict[str, tuple[np.ndarray, dict, list[str]]]:
    """Every SDS of a file as pyhdf's SD interface reads it: values, attributes, dims."""
    sd = SD(str(path), SDC.READ)
    try:
        out = {}
        for name in sd.datasets():
            sds = sd.select(name)
            out[name] = (sds.get(), sds.attributes(), list(sds.dimensions()))
            sds.endaccess()
        return out
    finally:
        sd.end()


def test_files_are_named_as_laads_names_them(granules):
    for name, path in granules.items():
        assert path.name == f"{name}.A2012347.0910.061.2026329021500.hdf"
        assert re.fullmatch(r"MOD(11|06|05|04)_L2\.A\d{7}\.\d{4}\.061\.\d{13}\.hdf", path.name)


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_pyhdf_reads_the_products_layout_and_attributes_exactly(granules, name):
    product = PRODUCTS[name]
    found = _sds(granules[name])
    assert set(found) == {"Latitude", "Longitude", *(f.name for f in product.fields)}
    for field in product.fields:
        values, attrs, dims = found[field.name]
        along, across = product.dims[field.grid].split(",")
        assert dims[:2] == [along, across]
        lines = SCANS * 10 if field.grid == "1km" else SCANS * 10 // product.geo_step
        assert values.shape[:2] == (lines, 1354 if field.grid == "1km" else product.geo_columns)
        assert values.dtype == np.dtype(field.dtype)
        assert attrs["_FillValue"] == field.fill
        if field.valid_range is not None:
            assert list(attrs["valid_range"]) == list(field.valid_range)
        if field.scale_factor is not None:
            assert attrs["scale_factor"] == field.scale_factor
            assert attrs["add_offset"] == field.add_offset
        if field.qa_bytes:
            assert values.shape[2] == field.qa_bytes
    lat, attrs, dims = found["Latitude"]
    assert lat.shape == (SCANS * 10 // product.geo_step, product.geo_columns)
    assert dims == product.dims[product.geo].split(",")
    assert list(attrs["valid_range"]) == [-90.0, 90.0]


def test_the_specifications_values_are_those_of_the_products():
    """Spot checks against the product specifications (MOD11_L2 filespec, atmosphere CDL)."""
    lst = PRODUCTS["MOD11_L2"].field("LST")
    assert (lst.dtype, lst.scale_factor, lst.add_offset, lst.valid_range, lst.fill) == (
        "uint16", 0.02, 0.0, (7500, 65535), 0,
    )  # fmt: skip
    ctt = PRODUCTS["MOD06_L2"].field("Cloud_Top_Temperature")
    assert (ctt.dtype, ctt.add_offset, ctt.valid_range, ctt.fill) == (
        "int16", -15000.0, (0, 20000), -32768,
    )  # fmt: skip
    assert ctt.scale_factor * (0 - ctt.add_offset) == pytest.approx(150.0)  # K at stored 0
    cf = PRODUCTS["MOD06_L2"].field("Cloud_Fraction")
    assert (cf.dtype, cf.valid_range, cf.fill) == ("int8", (0, 100), 127)
    ctp = PRODUCTS["MOD06_L2"].field("Cloud_Top_Pressure")
    assert (ctp.valid_range, ctp.fill) == ((10, 11000), -999)
    nir = PRODUCTS["MOD05_L2"].field("Water_Vapor_Near_Infrared")
    assert (nir.dtype, nir.grid, nir.valid_range, nir.fill) == ("int16", "1km", (0, 20000), -9999)
    assert PRODUCTS["MOD05_L2"].field("Water_Vapor_Infrared").grid == "5km"


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_the_reader_decodes_as_modis_defines_it(granules, name):
    """value = scale_factor * (stored - add_offset), NaN at the fill value; flags as stored."""
    found = _sds(granules[name])
    with open_granule(granules[name]) as granule:
        assert (granule.reader, granule.instrument) == ("modis-l2", "modis")
        assert (granule.short_name, granule.platform) == (name, "terra")
        assert granule.start_time == START
        assert granule.end_time == START + timedelta(seconds=SCANS * 1.4771)
        assert granule.n_lines == SCANS * 10
        for field in PRODUCTS[name].fields:
            stored, attrs, _ = found[field.name]
            got = granule.read_field(field.name)
            if field.scale_factor is None:
                np.testing.assert_array_equal(got, stored)
                continue
            bad = stored == attrs["_FillValue"]
            want = attrs["scale_factor"] * (stored.astype(np.float64) - attrs["add_offset"])
            np.testing.assert_array_equal(np.isnan(got), bad)
            np.testing.assert_allclose(got[~bad], want[~bad], rtol=1e-6)
        lon, lat = granule.read_lonlat()
        np.testing.assert_array_equal(lat, found["Latitude"][0])
        np.testing.assert_array_equal(lon, found["Longitude"][0])


def test_geolocation_is_terras_from_pyorbital(granules):
    """The 5 km points sit on 1 km lines 2, 7, ... and frames 2, 7, ... of Terra's scans."""
    with open_granule(granules["MOD06_L2"]) as granule:
        lon, lat = granule.read_lonlat()
        lines, frames = granule.geo_pixels()
    assert (lines[:3].tolist(), frames[-1]) == ([2, 7, 12], 1347)
    want_lon, want_lat = orbit.scan_lonlat(
        TERRA_TLE, START.replace(tzinfo=None), lines[[0, -1]] * 0.14771,
        scan_angles(frames[[0, 135, -1]]), frames[[0, 135, -1]] * 333.333e-6,
    )  # fmt: skip
    np.testing.assert_allclose(lon[np.ix_([0, -1], [0, 135, -1])], want_lon, atol=1e-4)
    np.testing.assert_allclose(lat[np.ix_([0, -1], [0, 135, -1])], want_lat, atol=1e-4)
    km = 111.2 * np.hypot(np.diff(lat[:, 135]), np.diff(lon[:, 135]) * np.cos(np.radians(5)))
    assert km == pytest.approx(np.full(km.size, 5.0), abs=0.3)  # 5 km apart along track
    width = 111.2 * np.hypot(lat[0, 0] - lat[0, -1], (lon[0, 0] - lon[0, -1]) * np.cos(0.09))
    assert 2100 < width < 2400  # a MODIS swath is about 2330 km wide
    assert 0 < lat.min() < lat.max() < 10
    assert 10 < lon.min() < lon.max() < 36


def test_fields_and_quality_flags_are_plausible(granules):
    with open_granule(granules["MOD11_L2"]) as granule:
        lst, qc = granule.read_field("LST"), granule.read_field("QC")
    produced = (qc & 0b11) <= 1
    np.testing.assert_array_equal(np.isfinite(lst), produced)  # LST exactly where QC says
    assert produced.mean() > 0.2
    assert 270 < np.nanmin(lst) < np.nanmax(lst) < 330
    with open_granule(granules["MOD06_L2"]) as granule:
        fraction = granule.read_field("Cloud_Fraction")
        pressure = granule.read_field("Cloud_Top_Pressure")
        temperature = granule.read_field("Cloud_Top_Temperature")
        qa = granule.read_field("Quality_Assurance_5km")
    cloudy = fraction > 0
    assert 0.02 < cloudy.mean() < 0.95  # the clouds are coherent: few in 200 km of swath
    assert np.nanmax(fraction) <= 1.0
    assert ((fraction > 0) & (fraction < 1)).any()  # clouds' edges cover part of a 5 km pixel
    np.testing.assert_array_equal(np.isfinite(pressure), cloudy)
    assert 100 <= np.nanmin(pressure) < np.nanmax(pressure) <= 1000
    assert 195 < np.nanmin(temperature) < np.nanmax(temperature) < 310
    np.testing.assert_array_equal(qa[..., 0] & 1, cloudy)  # cloud-top retrieval useful
    with open_granule(granules["MOD05_L2"]) as granule:
        near = granule.read_field("Water_Vapor_Near_Infrared")
        infrared = granule.read_field("Water_Vapor_Infrared")
        qa_near = granule.read_field("Quality_Assurance_Near_Infrared")
    assert near.shape == (SCANS * 10, 1354)
    assert np.isfinite(near).all()  # all in daylight
    assert 2.0 < np.nanmean(near) < 6.0  # a humid tropical column, cm
    assert np.all((qa_near[..., 0] & 1) == 1)
    assert 0.0 < np.isnan(infrared).mean() < 0.95  # clear sky only


def test_satpy_reads_the_same_values_and_places(granules):
    from satpy import Scene

    names = {
        "MOD06_L2": {"cloud_fraction": "Cloud_Fraction", "cloud_top_pressure":
                     "Cloud_Top_Pressure", "cloud_top_temperature": "Cloud_Top_Temperature"},
        "MOD05_L2": {"water_vapor_infrared": "Water_Vapor_Infrared",
                     "water_vapor_near_infrared": "Water_Vapor_Near_Infrared"},
    }  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # satpy's and dask's own deprecations
        for product, datasets in names.items():
            scene = Scene(filenames=[str(granules[product])], reader="modis_l2")
            assert scene.start_time == START.replace(tzinfo=None)
            resolution = {"resolution": 5000} if product == "MOD06_L2" else {}
            scene.load(list(datasets), **resolution)
            with open_granule(granules[product]) as granule:
                lonlat = {"5km": granule.read_lonlat(), "1km": granule.read_lonlat("1km")}
                for theirs, ours in datasets.items():
                    mine = granule.read_field(ours)
                    np.testing.assert_allclose(scene[theirs].values, mine, rtol=1e-6)
                    their_lon, their_lat = map(
                        np.asarray, scene[theirs].attrs["area"].get_lonlats()
                    )
                    lon, lat = lonlat["5km" if mine.shape[1] < 1354 else "1km"]
                    if mine.shape[1] < 1354:  # the file's own geolocation
                        np.testing.assert_array_equal(their_lon, lon)
                        np.testing.assert_array_equal(their_lat, lat)
                        continue
                    # 1 km: satpy interpolates the 5 km geolocation its own way
                    km = 111.2 * np.hypot(lat - their_lat, (lon - their_lon) * np.cos(0.09))
                    assert np.median(km) < 0.05
                    assert km.max() < 1.5
        lst = Scene(filenames=[str(granules["MOD11_L2"])], reader="modis_l2")
        assert lst.start_time == START.replace(tzinfo=None)
        assert "QC" in lst.available_dataset_names()


def test_sniffing_finds_the_modis_reader_and_no_other(granules, tmp_path):
    for path in granules.values():
        assert ModisL2Reader.can_open(path)
    plain = tmp_path / "plain.hdf"  # HDF4, but no MODIS core metadata
    sd = SD(str(plain), SDC.WRITE | SDC.CREATE)
    sd.create("x", SDC.INT16, (2, 2)).endaccess()
    sd.end()
    assert not ModisL2Reader.can_open(plain)
    with pytest.raises(GranuleError, match="no reader recognises"):
        open_granule(plain)
    other = tmp_path / "other.bin"  # the HDF4 signature, then nothing HDF4 can open
    other.write_bytes(b"\x0e\x03\x13\x01" + b"x" * 500)
    assert ModisL2Reader.can_open(other)  # claimed, to be refused as what it is
    with pytest.raises(GranuleError, match=re.escape(f"granule {other}: HDF4 cannot open it")):
        open_granule(other)


def test_a_truncated_granule_is_refused_naming_it(granules, tmp_path):
    cut = tmp_path / granules["MOD05_L2"].name
    cut.write_bytes(granules["MOD05_L2"].read_bytes()[:200_000])
    with pytest.raises(GranuleError, match=re.escape(str(cut))), ModisL2Reader().open(cut) as g:
        g.read_field("Water_Vapor_Near_Infrared")


def test_the_avhrr_calls_say_what_a_level2_granule_is(granules):
    with open_granule(granules["MOD06_L2"]) as granule:
        for call in (granule.read_telemetry, granule.read_tie_latitudes):
            with pytest.raises(GranuleError, match="MOD06_L2 Level-2 product"):
                call()
        with pytest.raises(GranuleError, match="read_field"):
            granule.read(0, 10)


def test_the_footprint_covers_every_pixel(granules):
    import shapely
    from shapely.geometry import shape

    summary = describe_granule(granules["MOD05_L2"])
    assert (summary.reader, summary.instrument, summary.n_lines) == ("modis-l2", "modis", 200)
    footprint = shape(summary.geometry)
    with open_granule(granules["MOD05_L2"]) as granule:
        lon, lat = granule.read_lonlat("1km")
    rows, columns = [0, 0, -1, -1], [0, -1, 0, -1]
    corners = shapely.points(lon[rows, columns], lat[rows, columns])
    assert shapely.covers(footprint, corners).all()
    assert footprint.area < 1.15 * shapely.convex_hull(shapely.multipoints(
        np.column_stack([lon.ravel()[::97], lat.ravel()[::97]]))).area  # fmt: skip


def test_nearline_ingest_catalogues_the_granules(granules, tmp_path):
    env = {**os.environ, "COLUMNS": "120"}
    command = [str(Path(sys.executable).parent / "nearline"), "ingest",
               *(str(p.parent) for p in granules.values()), "--collection", "modis",
               "--data", str(tmp_path / "data"), "--workers", "1"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    with open_catalogue(None, tmp_path / "data" / "catalogue.db") as catalogue:
        items = catalogue.search(Search(collections=("modis",), limit=10)).items
        assert sorted(item.id for item in items) == sorted(p.name for p in granules.values())
        for item in items:
            assert item.start == START
            assert item.end == START + timedelta(seconds=SCANS * 1.4771)
            assert item.properties["instruments"] == ["modis"]
            assert item.properties["nearline:reader"] == "modis-l2"
            assert item.assets["data"].media_type == "application/x-hdf"
            west, south, east, north = item.bbox
            assert 10 < west < east < 40
            assert -10 < south < north < 20


def test_the_command_line_writes_a_products_granules(tmp_path):
    command = [str(Path(sys.executable).parent / "nearline"), "synth", "modis", "--product",
               "MOD11_L2", "--date", "2012-12-12", "--granules", "2", "--first", "110",
               "--scans", "4", "--out", str(tmp_path)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "wrote 2 granules" in done.stdout
    names = sorted(path.name for path in tmp_path.iterdir())
    assert [name[:27] for name in names] == ["MOD11_L2.A2012347.0910.061.",
                                              "MOD11_L2.A2012347.0915.061."]  # fmt: skip
    with open_granule(tmp_path / names[1]) as granule:
        assert granule.start_time == START + timedelta(minutes=5)
        assert granule.read_field("LST").shape == (40, 1354)


def test_core_metadata_is_read_as_laads_writes_it():
    """An excerpt of a real Aqua granule's CoreMetadata.0 (ODL, as LAADS serves it)."""
    from nearline.swath._modis import ecs_value

    core = """
    GROUP                  = RANGEDATETIME
      OBJECT                 = RANGEENDINGDATE
        NUM_VAL              = 1
        VALUE                = "2012-11-03"
      END_OBJECT             = RANGEENDINGDATE
      OBJECT                 = RANGEBEGINNINGTIME
        NUM_VAL              = 1
        VALUE                = "01:05:00.000000"
      END_OBJECT             = RANGEBEGINNINGTIME
    END_GROUP              = RANGEDATETIME
      OBJECT                 = ASSOCIATEDPLATFORMSHORTNAME
        CLASS                = "1"
        NUM_VAL              = 1
        VALUE                = "Aqua"
      END_OBJECT             = ASSOCIATEDPLATFORMSHORTNAME
    """
    assert ecs_value(core, "RANGEENDINGDATE") == "2012-11-03"
    assert ecs_value(core, "RANGEBEGINNINGTIME") == "01:05:00.000000"
    assert ecs_value(core, "ASSOCIATEDPLATFORMSHORTNAME") == "Aqua"
    assert ecs_value(core, "RANGEBEGINNINGDATE") is None


def test_collection6_quality_bytes_with_an_identity_scale_stay_flags(granules, tmp_path):
    """Real C6 MOD06_L2 gives Quality_Assurance_5km scale_factor 1, add_offset 0 and
    _FillValue 0: still bytes of flags, as stored and unsigned (0 is a valid byte)."""
    path = tmp_path / granules["MOD06_L2"].name
    path.write_bytes(granules["MOD06_L2"].read_bytes())
    sd = SD(str(path), SDC.WRITE)
    sds = sd.select("Quality_Assurance_5km")
    stored = sds.get()
    stored[0, 0, 0] = -128  # a byte with its top bit set
    sds[:] = stored
    sds.attr("scale_factor").set(SDC.FLOAT64, 1.0)
    sds.attr("add_offset").set(SDC.FLOAT64, 0.0)
    sds.endaccess()
    sd.end()
    with open_granule(path) as granule:
        qa = granule.read_field("Quality_Assurance_5km")
    assert qa.dtype == np.uint8
    assert qa[0, 0, 0] == 128
    np.testing.assert_array_equal(qa, stored.view(np.uint8))
