"""Granule footprints: the whole swath inside with a margin, little else; valid GeoJSON
across the antimeridian and over the poles; invalid tie points left out."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
import shapely
from shapely.geometry import shape

from nearline.errors import GranuleError
from nearline.swath import (
    TIE_COLUMNS,
    Granule,
    GranuleSummary,
    describe_granule,
    granule_footprint,
    lonlat,
    open_granule,
    swath_footprint,
    synthesize_day,
    union_footprints,
)
from nearline.swath import (
    _orbit as orbit,
)
from nearline.swath._base import tie_rows
from nearline.swath._footprint import STEP, TOLERANCE
from nearline.swath._gac import klm_name, write_klm
from nearline.swath._synth import synthesize_orbit
from nearline.swath.netcdf_granule import write_granule

LINES = 200
# the first orbit of 2012-12-12 starts at 52 S over the South Pacific going north; 40 minutes
# later NOAA-19 is near 80 N and its swath reaches over the North Pole
NORTH_POLE_PASS = datetime(2012, 12, 12, 0, 40, tzinfo=UTC)
WORLD = 360.0 * 180.0  # square degrees


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    """Two 200-line granules: over the South Pacific, and across the antimeridian."""
    return synthesize_day("2012-12-12", 2, tmp_path_factory.mktemp("day"), lines_per_orbit=LINES)


@pytest.fixture(scope="module")
def pacific(day):
    return day[0]


@pytest.fixture(scope="module")
def across(day):
    return day[1]


@pytest.fixture(scope="module")
def polar(tmp_path_factory):
    folder = tmp_path_factory.mktemp("polar")
    return synthesize_orbit(NORTH_POLE_PASS, 400, folder, platform="noaa19", seed=1)


@pytest.fixture(scope="module")
def l1b(pacific, tmp_path_factory):
    """The South Pacific granule as NOAA KLM GAC Level 1b (tie points in 1e-4 degrees)."""
    with open_granule(pacific) as granule:
        block = granule.read(0, granule.n_lines)
    name = klm_name("noaa19", granule.start_time, granule.end_time)
    path = tmp_path_factory.mktemp("l1b") / name
    write_klm(path, block)
    return path


@pytest.fixture(scope="module")
def whole_orbit():
    """Tie points of 13,000 lines (108 minutes, a little more than one orbit): from 52 S up
    over the North Pole, down over the South Pole and up again."""
    offsets = np.arange(13000) * orbit.GAC_LINE_SECONDS
    lon, lat = orbit.scan_lonlat(
        orbit.NOAA19_TLE,
        datetime(2012, 12, 12, tzinfo=UTC),
        offsets,
        orbit.gac_scan_angles(TIE_COLUMNS),
        TIE_COLUMNS * orbit.GAC_PIXEL_SECONDS,
    )
    return lon.astype(np.float32), lat.astype(np.float32)


def outside(geometry: dict, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """How far (degrees) each point lies outside the footprint; 0 inside or on it."""
    footprint = shape(geometry)
    shapely.prepare(footprint)
    x = (np.ravel(lon).astype(float) + 180) % 360 - 180
    y = np.ravel(lat).astype(float)
    inside = shapely.intersects_xy(footprint, x, y)
    far = np.zeros(x.size)
    far[~inside] = shapely.distance(footprint, shapely.points(x[~inside], y[~inside]))
    return far


def quads(lon: np.ndarray, lat: np.ndarray) -> shapely.Geometry:
    """Union of the quadrilaterals between every fourth line and consecutive columns: a fine
    reference for the swath (not across the antimeridian)."""
    rows = tie_rows(lon.shape[0], 4)
    lon, lat = lon[rows], lat[rows]
    corners = [(lon[:-1, :-1], lat[:-1, :-1]), (lon[:-1, 1:], lat[:-1, 1:]),
               (lon[1:, 1:], lat[1:, 1:]), (lon[1:, :-1], lat[1:, :-1])]  # fmt: skip
    rings = np.stack([np.stack([x.ravel(), y.ravel()], -1) for x, y in corners], 1)
    return shapely.union_all(shapely.polygons(rings.astype(float)))


def all_lines(path):
    with open_granule(path) as granule:
        return granule.read(0, granule.n_lines)


@pytest.mark.parametrize("name", ["pacific", "across", "polar"])
def test_every_pixel_of_a_granule_lies_in_its_footprint(name, request):
    path = request.getfixturevalue(name)
    block = all_lines(path)
    geometry = describe_granule(path).geometry
    assert outside(geometry, block.tie_lon, block.tie_lat).max() <= 1e-6
    # and every pixel as the compositor places it, the four beyond each edge tie point too
    assert outside(geometry, *lonlat(block)).max() <= 1e-6


def test_the_footprint_hugs_the_swath(pacific):
    block = all_lines(pacific)
    footprint = shape(describe_granule(pacific).geometry)
    tie_reference = quads(block.tie_lon, block.tie_lat)
    assert 1.0 < footprint.area / tie_reference.area < 1.3
    lon, lat = lonlat(block)
    edges_and_ties = np.r_[0, TIE_COLUMNS, lon.shape[1] - 1]
    swath = quads(lon[:, edges_and_ties], lat[:, edges_and_ties])
    assert 1.0 < footprint.area / swath.area < 1.05
    # every pixel at least tolerance / 2 inside (less rounding); nothing in the footprint more
    # than 2.5 tolerance (a mitred corner) from the swath
    margin = shapely.distance(footprint.exterior, shapely.points(lon.ravel(), lat.ravel()))
    assert margin.min() >= 0.45 * TOLERANCE
    assert shapely.hausdorff_distance(footprint, swath) <= 2.5 * TOLERANCE


def test_a_granule_across_the_antimeridian_is_split_there(across):
    summary = describe_granule(across)
    assert summary.geometry["type"] == "MultiPolygon"
    parts = shapely.get_parts(shape(summary.geometry))
    assert sorted(round(part.bounds[2]) for part in parts)[-1] == 180  # east part ends at 180
    assert sorted(round(part.bounds[0]) for part in parts)[0] == -180  # west part starts there
    assert shapely.is_valid(shape(summary.geometry))
    west, south, east, north = summary.bbox
    assert west > east  # STAC: a bbox across the antimeridian
    block = all_lines(across)
    lon = block.tie_lon
    assert np.all((lon >= west) | (lon <= east))
    assert south <= block.tie_lat.min()
    assert block.tie_lat.max() <= north
    assert 155 < west < 175  # not the whole circle
    assert -160 < east < -140


def test_a_pass_over_the_pole_is_a_cap_up_to_it(polar):
    summary = describe_granule(polar)
    footprint = shape(summary.geometry)
    assert summary.geometry["type"] == "Polygon"
    assert shapely.is_valid(footprint)
    west, south, east, north = summary.bbox
    assert (west, east, north) == (-180.0, 180.0, 90.0)
    assert 60 < south < 75
    around = np.linspace(-180, 180, 73)
    assert outside(summary.geometry, around, np.full(around.size, 89.99)).max() == 0


def test_a_whole_orbit_covers_both_polar_regions_and_no_more(whole_orbit):
    lon, lat = whole_orbit
    rows = tie_rows(lon.shape[0], STEP)
    geometry, bbox = swath_footprint(lon[rows], lat[rows])
    footprint = shape(geometry)
    assert shapely.is_valid(footprint)
    assert bbox == (-180.0, -90.0, 180.0, 90.0)
    around = np.linspace(-180, 180, 73)
    for pole in (89.99, -89.99):
        assert outside(geometry, around, np.full(around.size, pole)).max() == 0
    assert outside(geometry, lon, lat).max() <= 1e-6  # every tie point of every line
    # the orbit's swath leaves two wide regions of the equator uncovered
    assert not shapely.intersects_xy(footprint, [-75.0, 100.0], [0.0, 0.0]).any()
    assert 0.3 < footprint.area / WORLD < 0.45


def test_geojson_round_trips_with_counter_clockwise_exteriors(across, whole_orbit):
    lon, lat = whole_orbit
    orbit_geometry, _ = swath_footprint(lon[::8], lat[::8])
    for geometry in (describe_granule(across).geometry, orbit_geometry):
        text = json.dumps(geometry, allow_nan=False)
        back = shape(json.loads(text))
        assert back.is_valid
        assert back.equals(shape(geometry))
        polygons = shapely.get_parts(back)
        assert all(polygon.exterior.is_ccw for polygon in polygons)
        assert not any(ring.is_ccw for polygon in polygons for ring in polygon.interiors)
        xy = shapely.get_coordinates(back)
        np.testing.assert_array_equal(xy, np.round(xy, 6))
        assert np.all(np.abs(xy) <= [180, 90])
    assert sum(len(p.interiors) for p in shapely.get_parts(shape(orbit_geometry))) == 1


def test_invalid_tie_points_are_left_out(pacific):
    block = all_lines(pacific)
    lon, lat = block.tie_lon.copy(), block.tie_lat.copy()
    lon[:40] = np.nan
    lat[-30:] = -999.0  # a fill value
    geometry, bbox = swath_footprint(lon, lat)
    assert (geometry, bbox) == swath_footprint(lon[40:-30], lat[40:-30])
    # the middles of the first and last lines (130 and 100 km beyond the valid ones) are out
    far = outside(geometry, block.tie_lon[[0, -1], 25], block.tie_lat[[0, -1], 25])
    assert far.min() > 0.5
    lon[100, 10:20] = np.nan  # a line with some tie points missing keeps the others
    lat[120] = np.inf
    geometry, _ = swath_footprint(lon, lat)
    json.dumps(geometry, allow_nan=False)
    valid = np.isfinite(lon) & (np.abs(lat) <= 90)
    assert outside(geometry, lon[valid], lat[valid]).max() <= 1e-6
    assert swath_footprint(np.full((5, 51), np.nan), np.full((5, 51), np.nan)) == (None, None)


def test_a_granule_with_invalid_sampled_lines_is_read_line_by_line(pacific, tmp_path):
    """A sampled line (every STEP-th) with no tie points must not take the valid lines
    before it out of the footprint."""
    block = all_lines(pacific)
    block.tie_lon[3 * STEP] = np.nan
    block.tie_lat[3 * STEP + 1, :5] = np.nan
    path = tmp_path / "gappy.nc"
    write_granule(path, block, {})
    summary = describe_granule(path)
    with open_granule(path) as granule:
        assert (summary.geometry, summary.bbox) == swath_footprint(*granule.read_tie_lonlat(1))
    valid = np.isfinite(block.tie_lon) & np.isfinite(block.tie_lat)
    far = outside(summary.geometry, block.tie_lon[valid], block.tie_lat[valid])
    assert far.max() <= 1e-6


def test_describe_granule_summarises_the_file(pacific):
    summary = describe_granule(pacific)
    assert isinstance(summary, GranuleSummary)
    assert (summary.path, summary.reader, summary.platform) == (pacific, "nearline-avhrr", "noaa19")
    assert summary.n_lines == LINES
    assert summary.start == datetime(2012, 12, 12, tzinfo=UTC)
    assert summary.start.utcoffset() == summary.end.utcoffset() == timedelta(0)
    assert summary.end - summary.start == timedelta(seconds=(LINES - 1) / 2)
    with open_granule(pacific) as granule:
        assert (summary.geometry, summary.bbox) == granule_footprint(granule)
    west, south, east, north = summary.bbox
    assert -170 < west < east < -118
    assert -61 < south < north < -47


def test_describe_granule_reads_real_gac_level_1b(l1b, pacific):
    summary = describe_granule(l1b)
    assert (summary.reader, summary.platform, summary.n_lines) == ("avhrr-gac", "noaa19", LINES)
    assert summary.start == describe_granule(pacific).start
    same = shape(describe_granule(pacific).geometry)
    assert shape(summary.geometry).symmetric_difference(same).area < 1e-3 * same.area
    block = all_lines(l1b)
    assert outside(summary.geometry, block.tie_lon, block.tie_lat).max() <= 1e-6


@pytest.mark.parametrize("name", ["pacific", "l1b"])
def test_a_truncated_file_raises_a_granule_error_naming_it(name, request, tmp_path):
    """A netCDF granule cut anywhere; a Level 1b one cut inside its header (cut among its
    scan lines, it is read as far as it goes: the next test)."""
    path = request.getfixturevalue(name)
    broken = tmp_path / f"cut-{path.name}"
    data = path.read_bytes()
    broken.write_bytes(data[: len(data) // 2 if name == "pacific" else 300])
    with pytest.raises(GranuleError, match=broken.name):
        describe_granule(broken)


def test_a_level_1b_file_cut_short_is_described_as_far_as_it_goes(l1b, tmp_path):
    cut = tmp_path / l1b.name
    data = l1b.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    summary = describe_granule(cut)
    held = len(data) // 2 // 4608 - 1  # whole records after the header record
    assert summary.n_lines == held
    assert summary.warnings == (
        f"holds {held} of the {LINES} scan lines its header promises: the file is cut short",
    )
    block = all_lines(l1b)
    assert outside(summary.geometry, block.tie_lon[:held], block.tie_lat[:held]).max() <= 1e-6


class BlocksOnly(Granule):
    """Only the abstract methods: ``read_tie_lonlat`` is the default, through ``read``."""

    reader = "blocks-only"

    def __init__(self, inner: Granule) -> None:
        self.inner, self.n_lines = inner, inner.n_lines

    def read(self, start, stop):
        return self.inner.read(start, stop)

    def read_tie_latitudes(self):
        return self.inner.read_tie_latitudes()

    def read_telemetry(self):
        return self.inner.read_telemetry()


@pytest.mark.parametrize("step", [1, 7, 8, 199, 500])
@pytest.mark.parametrize("kind", ["netcdf", "netcdf in pieces", "l1b", "default"])
def test_read_tie_lonlat_samples_every_step_th_line_and_the_last(
    kind, step, pacific, l1b, monkeypatch
):
    monkeypatch.setattr("nearline.swath._base.READ_LINES", 64)  # the default reads in blocks
    if kind == "netcdf in pieces":  # as an orbit's are read: a piece of lines at a time
        monkeypatch.setattr("nearline.swath.netcdf_granule.PIECE_BYTES", 64 * 51 * 4)
    with open_granule(l1b if kind == "l1b" else pacific) as opened:
        granule = BlocksOnly(opened) if kind == "default" else opened
        lon, lat = granule.read_tie_lonlat(step)
        block = opened.read(0, opened.n_lines)
    rows = sorted({*range(0, LINES, step), LINES - 1})
    assert lon.dtype == lat.dtype == np.float32
    assert lon.shape == lat.shape == (len(rows), 51)
    np.testing.assert_array_equal(lon, block.tie_lon[rows])
    np.testing.assert_array_equal(lat, block.tie_lat[rows])


def test_grids_and_settings_that_cannot_make_a_footprint_are_refused():
    grid = np.zeros((4, 51))
    with pytest.raises(ValueError, match="expected two equal"):
        swath_footprint(grid, np.zeros((4, 50)))
    with pytest.raises(ValueError, match="at least 3 columns"):
        swath_footprint(grid[:, :2], grid[:, :2])
    with pytest.raises(ValueError, match="tolerance"):
        swath_footprint(grid, grid, tolerance=0)
    with pytest.raises(ValueError, match="step"):
        tie_rows(10, 0)


def box(west: float, south: float, east: float, north: float) -> dict:
    return shapely.geometry.mapping(shapely.box(west, south, east, north))


def test_a_union_of_footprints_across_the_antimeridian_keeps_every_piece(across):
    """Outputs made from granules on both sides of ±180 get one footprint of every piece,
    and a bbox that wraps (west > east), not [-180, 180]."""
    pieces = [box(170, -10, 180, 10), box(-180, -10, -170, 10), box(175, 0, 180, 20)]
    granule = describe_granule(across).geometry
    union = union_footprints([*pieces, granule])
    assert union is not None
    geometry, bbox = union
    merged = shape(geometry)
    expected = shapely.union_all([shape(p) for p in [*pieces, granule]])
    assert merged.symmetric_difference(expected).area < 1e-6
    west, south, east, north = bbox
    assert west > east  # across the antimeridian
    assert (south, north) == pytest.approx(expected.bounds[1::2])
    assert union_footprints([]) is None
