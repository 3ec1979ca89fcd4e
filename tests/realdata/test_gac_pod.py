"""The real TIROS-N AVHRR GAC Level 1b file (POD, 1980-01-03; its first 60,000 bytes: the
header and 16 of the 12,660 scan lines the header promises), read, calibrated, located,
composited and catalogued by nearline, and held against pygac 1.8's own calibration and
geolocation of it.

Measured (``pytest tests/realdata/test_gac_pod.py -s`` prints them): calibration, nearline
against pygac's ``get_calibrated_channels`` (channels 1 and 2 times pygac's Earth-Sun factor,
0.9666 on 3 January): 8e-7 % at most in channels 1 and 2, 1.5e-5 K in 3, 4 and 5, NaN on the
same pixels (775 in channel 2, 56 in channel 3). Geolocation, against pygac's pixels
(``interpolate_coords=True``; POD tie points at pixels 4, 12, ..., 404 for both): 36 m
median, 0.60 km at most between the outermost tie points, 3.0 km at the four extrapolated
pixels of each edge, where GAC's pixels are 22 km apart across the track.

The file is GPL-3.0: it is read from ../shared/realdata, never copied into the repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
import shapely
from shapely.geometry import shape

from nearline.archive import Search, open_catalogue
from nearline.composite._ancillary import Ancillary
from nearline.composite._calibration import line_calibration
from nearline.composite._coefficients import load_coefficients
from nearline.composite._observe import observe
from nearline.errors import GranuleError
from nearline.grid import get_grid
from nearline.swath import TIE_COLUMNS, lonlat, open_granule

from ..gac_reference import differences, ground_km, nearline_channels, pygac_reference

CUT_SHORT = "holds 16 of the 12,660 scan lines its header promises: the file is cut short"
FIRST, LAST = "1980-01-03T11:47:15.469000+00:00", "1980-01-03T11:47:22.969000+00:00"
NEARLINE = str(Path(sys.executable).parent / "nearline")
FLOAT32_AT_300K = 3.05e-5  # K: one float32 step between 256 and 512


@pytest.fixture(scope="module")
def pod(real_file) -> Path:
    return real_file("avhrr-gac-pod")


@pytest.fixture(scope="module")
def day(pod, real_file, tmp_path_factory) -> Path:
    """A folder holding the granule and its element set, as a user keeps them (links)."""
    folder = tmp_path_factory.mktemp("day")
    for path in (pod, real_file("tle-tirosn")):
        (folder / path.name).symlink_to(path)
    return folder


def test_the_file_reads_with_its_real_time_range_and_says_it_is_cut_short(pod):
    with open_granule(pod) as granule:
        assert (granule.reader, granule.platform, granule.product) == (
            "avhrr-gac", "tirosn", "AVHRR-GAC-L1B",
        )  # fmt: skip
        assert granule.n_lines == 16
        assert granule.start_time.isoformat() == FIRST
        assert granule.end_time.isoformat() == LAST
        assert granule.warnings == (CUT_SHORT,)  # TIROS-N's clock needs no element set
        telemetry = granule.read_telemetry()
        block = granule.read(0, 16)
    assert telemetry.ch3_select is None  # AVHRR/1: no channel 3a
    assert block.counts.shape == (5, 16, 409)
    assert 61.9 < block.tie_lat.min() < block.tie_lat.max() < 72.6
    assert 2.7 < block.tie_lon.min() < block.tie_lon.max() < 67.2


def test_tirosn_is_calibrated_as_the_single_gain_avhrr1_it_is():
    coefficients = load_coefficients("tirosn")
    assert np.isnan(coefficients.gain_switch).all()  # single gain
    assert coefficients.s0[2] == 0  # no channel 3a
    # channel 5 of AVHRR/1 repeats channel 4 (POD Guide): the same coefficients
    np.testing.assert_array_equal(coefficients.b[2], coefficients.b[1])
    assert coefficients.centroid_wavenumber[2] == coefficients.centroid_wavenumber[1]


@pytest.fixture(scope="module")
def compared(pod, real_file):
    return nearline_channels(pod), pygac_reference(pod, real_file("tle-tirosn").parent)


@pytest.mark.parametrize("channel", ["1", "2", "3b", "4", "5"])
def test_the_calibration_is_pygacs(compared, channel):
    (ours, _, _), (theirs, _, _) = compared
    diff, disagree = differences(ours[channel], theirs[channel])
    print(f"channel {channel}: max {diff.max():.2g}, median {np.median(diff):.2g}, "
          f"{np.isnan(ours[channel]).sum()} NaN")  # fmt: skip
    assert not disagree.any()
    assert diff.size > 5500  # of 6544 pixels
    assert diff.max() < (1e-6 if channel in ("1", "2") else FLOAT32_AT_300K)


def test_the_geolocation_is_pygacs(compared):
    (_, lon, lat), (_, pygac_lon, pygac_lat) = compared
    apart = ground_km(lon, lat, pygac_lon, pygac_lat)
    inner = apart[:, TIE_COLUMNS[0] : TIE_COLUMNS[-1] + 1]
    print(f"median {np.median(apart) * 1000:.0f} m, max {inner.max():.2f} km inside the tie "
          f"points, {apart.max():.2f} km at the edges")  # fmt: skip
    np.testing.assert_allclose(lat[:, TIE_COLUMNS], pygac_lat[:, TIE_COLUMNS], atol=1e-4)
    assert np.median(apart) < 0.05
    assert inner.max() < 0.75
    assert apart.max() < 3.5


def _relabelled(pod: Path, folder: Path) -> Path:
    """The file as NOAA-7 would have it (spacecraft code 4, NC): a POD platform whose clock
    drift pygac corrects, which needs the element set. pygac's drift table for NOAA-7 begins
    in June 1981 at +0.1 s, which holds before it."""
    data = bytearray(pod.read_bytes())
    data[0] = 4
    data[40:84] = data[40:84].replace(b"NSS.GHRR.TN.", b"NSS.GHRR.NC.")
    folder.mkdir(exist_ok=True)
    path = folder / pod.name.replace(".TN.", ".NC.")
    path.write_bytes(bytes(data))
    return path


def test_a_drifting_clock_is_corrected_with_the_element_set_beside_the_granule(
    pod, real_file, tmp_path
):
    """What pygac 1.8's correction does: line times move by the drift exactly; positions
    move by whole lines (its slerp keeps the earlier of two points closer than ~28 km), and a
    line shifted in from beyond the file's start is propagated from the element set."""
    path = _relabelled(pod, tmp_path / "granules")
    with open_granule(path) as granule:
        assert granule.platform == "noaa7"
        assert granule.warnings[1].startswith(
            "geolocation not corrected for the spacecraft clock's drift of up to 0.10 s "
            "(about 1 km along track): no TLE_noaa7.txt beside the granule or in "
            "$NEARLINE_TLE_DIR; put TLE_noaa7.txt"
        )
        assert granule.start_time.isoformat() == FIRST
        raw = granule.read(0, 16)
    (path.parent / "TLE_noaa7.txt").write_bytes(real_file("tle-tirosn").read_bytes())
    with open_granule(path) as granule:
        assert granule.warnings == (CUT_SHORT,)
        assert datetime.fromisoformat(FIRST) - granule.start_time == timedelta(seconds=0.1)
        corrected = granule.read(0, 16)
    np.testing.assert_array_equal(corrected.tie_lat[1:], raw.tie_lat[:-1])
    np.testing.assert_array_equal(corrected.tie_lon[1:], raw.tie_lon[:-1])
    first = ground_km(raw.tie_lon[0], raw.tie_lat[0], corrected.tie_lon[0], corrected.tie_lat[0])
    print(f"line 0 from the element set: {first.min():.1f} to {first.max():.1f} km from the "
          "file's")  # fmt: skip
    assert 2.0 < first.min() <= first.max() < 25.0


def test_the_element_set_is_found_in_the_folder_named_and_must_be_near(
    pod, real_file, tmp_path, monkeypatch
):
    path = _relabelled(pod, tmp_path / "granules")
    elements = tmp_path / "elements"
    elements.mkdir()
    monkeypatch.setenv("NEARLINE_TLE_DIR", str(elements))
    lines = real_file("tle-tirosn").read_text().splitlines()
    (elements / "TLE_noaa7.txt").write_text("\n".join(lines) + "\n")
    with open_granule(path) as granule:
        assert granule.warnings == (CUT_SHORT,)
    epoch = lines[0][18:32]
    later = lines[0].replace(epoch, f"{float(epoch) + 30:14.8f}")  # a month on: too far
    checksum = sum(int(c) if c.isdigit() else c == "-" for c in later[:68]) % 10
    (elements / "TLE_noaa7.txt").write_text(f"{later[:68]}{checksum}\n{lines[1]}\n")
    with open_granule(path) as granule:
        assert "holds no element set within 7 days of 1980-01-03" in granule.warnings[1]


@pytest.mark.parametrize(
    ("size", "said"),
    [(60, "cut inside its NOAA Level 1b header"), (6000, "holds no whole scan line")],
)
def test_a_copy_cut_before_its_first_scan_line_is_refused(pod, tmp_path, size, said):
    cut = tmp_path / pod.name
    cut.write_bytes(pod.read_bytes()[:size])
    with pytest.raises(GranuleError, match=rf"granule {cut}: {said}"):
        open_granule(cut)


def _run(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [NEARLINE, *arguments], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def test_nearline_ingest_catalogues_it_with_its_times_warning_and_footprint(pod, day, tmp_path):
    done = _run("ingest", str(day), "--collection", "real", "--data", "data", "--workers",
                "1", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "ingested 1 granules" in done.stdout  # the element set passed over
    with open_catalogue(None, tmp_path / "data" / "catalogue.db") as catalogue:
        (item,) = catalogue.search(Search(collections=("real",), limit=10)).items
    assert item.id == pod.name
    assert item.start.isoformat() == FIRST
    assert item.end.isoformat() == LAST
    assert item.properties["platform"] == "tirosn"
    assert item.properties["nearline:lines"] == 16
    assert item.properties["nearline:warnings"] == [CUT_SHORT]
    with open_granule(pod) as granule:
        lon, lat = lonlat(granule.read(0, 16))
    assert shapely.covers(shape(item.geometry), shapely.points(lon.ravel(), lat.ravel())).all()


def test_an_ingest_meeting_a_cut_copy_fails_in_one_line_and_adds_nothing(pod, day, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "NSS.GHRR.TN.D80003.S1147.E1332.B0630507.GC").write_bytes(pod.read_bytes()[:60])
    done = _run("ingest", str(day), str(broken), "--collection", "real", "--data", "data",
                "--workers", "1", cwd=tmp_path)  # fmt: skip
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.strip()]
    assert "B0630507.GC: cut inside its NOAA Level 1b header (60 bytes" in line
    with open_catalogue(None, tmp_path / "data" / "catalogue.db") as catalogue:
        assert catalogue.search(Search(collections=("real",), limit=10)).items == []


@pytest.fixture(scope="module")
def composite(day, tmp_path_factory):
    """``nearline composite`` of the folder (the granule and its element set)."""
    out = tmp_path_factory.mktemp("composite")
    done = _run("composite", str(day), "--out", "day.nc", "--png", "day.png", cwd=out)
    assert done.returncode == 0, done.stderr
    assert "1 granules" in done.stdout
    return out / "day.nc", out / "day.png"


def test_the_composite_fills_the_cells_where_the_files_daylit_pixels_are(pod, composite):
    """1980-01-03 at 61-73 N is polar night: only the swath's western edge, under a sun at
    84.4-85 degrees, is observed by day, and a maximum-NDVI composite keeps day pixels."""
    import netCDF4

    with netCDF4.Dataset(composite[0]) as dataset:
        bands = {name: dataset[name][:] for name in ("ndvi", "bt3", "bt4", "bt5", "refl1")}
    filled = ~np.ma.getmaskarray(bands["bt4"])
    rows, columns = np.nonzero(filled)
    assert 20 < rows.size < 200
    for values in bands.values():  # every band where bt4 is, bt3 but where 3 is NaN
        assert (~np.ma.getmaskarray(values) <= filled).all()
    centre_lon, centre_lat = get_grid("igh-8km").centre_lonlat()
    centre_lon, centre_lat = centre_lon[rows, columns], centre_lat[rows, columns]

    seen = _observed(pod)
    apart = ground_km(centre_lon[:, None], centre_lat[:, None], seen["lon"], seen["lat"])
    # a cell is filled by a pixel whose footprint (half-way to its neighbours) holds its
    # centre, or whose centre lies in it: within half a pixel diagonal or half a cell's
    reach = max(seen["half_diagonal"], 8.0 * np.sqrt(2) / 2)
    print(f"{rows.size} cells, each within {apart.min(axis=1).max():.1f} km (of {reach:.1f}) "
          f"of a daylit pixel")  # fmt: skip
    assert apart.min(axis=1).max() <= reach
    # each cell's temperatures are one nearby pixel's, to the file's 0.01 K steps
    for cell in range(rows.size):
        near = apart[cell] <= reach
        same = np.ones(near.sum(), bool)
        for name in ("bt3", "bt4", "bt5"):
            stored = bands[name][rows[cell], columns[cell]]
            ours = seen[name][near]
            same &= np.isnan(ours) if stored is np.ma.masked else np.abs(ours - stored) < 0.0051
        assert same.any(), f"cell {cell}: no pixel nearby has its temperatures"


def _observed(pod: Path) -> dict[str, np.ndarray]:
    """The file's daylit pixels as the composite sees them (calibrated, terrain-corrected
    positions), and the largest half diagonal between neighbouring pixels (km)."""
    with open_granule(pod) as granule:
        block = granule.read(0, granule.n_lines)
        calibration = line_calibration(granule.read_telemetry(), granule.platform)
    seen = observe(block, calibration, Ancillary.load(), night=False)
    day = seen.sun_zenith < 85.0
    across = ground_km(seen.lon[:, 1:], seen.lat[:, 1:], seen.lon[:, :-1], seen.lat[:, :-1])
    along = ground_km(seen.lon[1:], seen.lat[1:], seen.lon[:-1], seen.lat[:-1])
    half = 0.5 * np.hypot(across.max(), along.max())
    values = {"lon": seen.lon, "lat": seen.lat, "bt3": seen.bt3, "bt4": seen.bt4, "bt5": seen.bt5}
    return {name: value[day] for name, value in values.items()} | {"half_diagonal": half}


def test_the_quicklook_shows_the_swath_where_it_was(composite):
    """The PNG (IGH, 2502 x 1188) is grey, no data, but for the few cells off Norway."""
    from PIL import Image

    image = np.asarray(Image.open(composite[1]).convert("RGB")).astype(int)
    height, width, _ = image.shape
    world = image[: int(height * 0.9)]  # above the legend
    grey = (np.ptp(world, axis=2) < 8) & (np.abs(world[:, :, 0] - 150) < 20)
    white = (world > 240).all(axis=2)
    painted = np.argwhere(~grey & ~white)
    assert 0 < len(painted) < 200
    # IGH's northern lobe east of 40 W: 62 N, 2-3 E lies 54 % across, 10 % down
    assert (np.abs(painted[:, 1] / width - 0.54) < 0.02).all()
    assert (np.abs(painted[:, 0] / height - 0.10) < 0.03).all()
