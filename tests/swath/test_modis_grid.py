"""MODIS HDF-EOS2 grid products (the modis-grid reader): the real MOD09GA tile h14v17 by the
south pole, and tiles written here with only their StructMetadata.0 and CoreMetadata.0,
whose footprints are checked against an independent computation: the tile's rectangle
intersected, in projected metres, with the sinusoidal world's outline, then taken to
longitude and latitude point by point with PROJ's own inverse (pyproj)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyproj
import pytest
import shapely
from pyhdf.SD import SD, SDC
from shapely.geometry import shape

from nearline.errors import GranuleError
from nearline.swath import describe_granule, open_granule
from nearline.swath._modis_grid import ModisGridReader, decode_land
from nearline.swath._modis_outline import ACCURACY, packed_dms

REAL = Path(__file__).parents[1] / "data" / "real"
MOD09GA = REAL / "MOD09GA.A2008296.h14v17.006.2015181011753.hdf"
RADIUS = 6371007.181
TILE = 1111950.5197665  # metres: a MODIS land tile's side (2 pi R / 36)
HALF = math.pi * RADIUS  # x of ±180 at the equator
# the independent outline's samples are 200 m apart; on the curve that is within 1e-5 degrees
HAUSDORFF = 2e-4  # degrees
AREA = 1e-4  # relative


def tile_corners(h: int, v: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """Upper left and lower right corners (metres) of MODIS land tile hHHvVV."""
    west, north = -HALF + h * TILE, HALF / 2 - v * TILE
    return (west, north), (west + TILE, north - TILE)


def independent_footprint(upper_left, lower_right) -> shapely.Geometry:
    """The tile's valid part by another route: in projected metres, the tile's rectangle
    intersected with the world's outline (|x| <= pi R cos(y / R), a hair inside so that
    PROJ's inverse stays within ±180), densified every 200 m and inverted by PROJ."""
    y = np.linspace(-HALF / 2, HALF / 2, 200_001) * (1 - 1e-7)  # to 1e-5 degrees of a pole
    edge = HALF * np.cos(y / RADIUS) * (1 - 1e-7)
    world = shapely.Polygon(np.column_stack([np.r_[edge, -edge[::-1]], np.r_[y, y[::-1]]]))
    (west, north), (east, south) = upper_left, lower_right
    part = shapely.intersection(shapely.box(west, south, east, north), world)
    part = shapely.segmentize(part, 200.0)
    proj = pyproj.Proj(f"+proj=sinu +R={RADIUS}")
    xy = shapely.get_coordinates(part.exterior)
    lon, lat = proj(xy[:, 0], xy[:, 1], inverse=True)
    return shapely.Polygon(np.column_stack([lon, lat]))


def write_tile(path: Path, short_name: str, grid: str, *, fields: dict | None = None) -> Path:
    """An HDF4 file holding a tile's StructMetadata.0 and CoreMetadata.0 (and ``fields``)."""
    sd = SD(str(path), SDC.WRITE | SDC.CREATE | SDC.TRUNC)
    try:
        struct = "GROUP=SwathStructure\nEND_GROUP=SwathStructure\nGROUP=GridStructure\n"
        struct += (
            grid + "END_GROUP=GridStructure\nGROUP=PointStructure\nEND_GROUP=PointStructure\nEND\n"
        )
        core = (
            "GROUP = INVENTORYMETADATA\n"
            f'OBJECT = SHORTNAME\nNUM_VAL = 1\nVALUE = "{short_name}"\nEND_OBJECT = SHORTNAME\n'
            'OBJECT = RANGEBEGINNINGDATE\nNUM_VAL = 1\nVALUE = "2012-12-12"\n'
            "END_OBJECT = RANGEBEGINNINGDATE\n"
            'OBJECT = RANGEBEGINNINGTIME\nNUM_VAL = 1\nVALUE = "00:00:00.000000"\n'
            "END_OBJECT = RANGEBEGINNINGTIME\n"
            'OBJECT = RANGEENDINGDATE\nNUM_VAL = 1\nVALUE = "2012-12-12"\n'
            "END_OBJECT = RANGEENDINGDATE\n"
            'OBJECT = RANGEENDINGTIME\nNUM_VAL = 1\nVALUE = "23:59:59.000000"\n'
            "END_OBJECT = RANGEENDINGTIME\nEND_GROUP = INVENTORYMETADATA\nEND\n"
        )
        for name, text in (("StructMetadata.0", struct), ("CoreMetadata.0", core)):
            sd.attr(name).set(SDC.CHAR8, text)
        for name, (values, attrs) in (fields or {}).items():
            kinds = {np.dtype("int16"): SDC.INT16, np.dtype("uint8"): SDC.UINT8}
            sds = sd.create(name, kinds[values.dtype], values.shape)
            sds[:] = values
            for key, (kind, value) in attrs.items():
                sds.attr(key).set(kind, value)
            sds.endaccess()
    finally:
        sd.end()
    return path


def sinusoidal_grid(upper_left, lower_right, fields: tuple[str, ...] = ()) -> str:
    data = "".join(
        f'\t\tOBJECT=DataField_{n}\n\t\t\tDataFieldName="{name}"\n\t\t\tDataType=DFNT_INT16\n'
        f'\t\t\tDimList=("YDim","XDim")\n\t\tEND_OBJECT=DataField_{n}\n'
        for n, name in enumerate(fields, 1)
    )
    return (
        '\tGROUP=GRID_1\n\t\tGridName="MOD_Grid_Test"\n\t\tXDim=2\n\t\tYDim=2\n'
        f"\t\tUpperLeftPointMtrs=({upper_left[0]:.6f},{upper_left[1]:.6f})\n"
        f"\t\tLowerRightMtrs=({lower_right[0]:.6f},{lower_right[1]:.6f})\n"
        "\t\tProjection=GCTP_SNSOID\n\t\tProjParams=(6371007.181000,0,0,0,0,0,0,0,0,0,0,0,0)\n"
        "\t\tSphereCode=-1\n\t\tGridOrigin=HDFE_GD_UL\n\t\tGROUP=Dimension\n\t\tEND_GROUP=Dimension\n"
        f"\t\tGROUP=DataField\n{data}\t\tEND_GROUP=DataField\n"
        "\t\tGROUP=MergedFields\n\t\tEND_GROUP=MergedFields\n\tEND_GROUP=GRID_1\n"
    )


def test_the_real_mod09ga_tile_is_read_from_its_own_metadata():
    with open_granule(MOD09GA) as granule:
        assert (granule.reader, granule.product, granule.platform) == (
            "modis-grid",
            "MOD09GA",
            "terra",
        )
        assert granule.n_lines is None
        assert (granule.start_time.isoformat(), granule.end_time.isoformat()) == (
            "2008-10-22T11:55:00+00:00", "2008-10-22T23:25:00+00:00")  # fmt: skip
        assert "sur_refl_b01_1" in granule.fields
        assert "Range_1" in granule.fields
    summary = describe_granule(MOD09GA)
    assert (summary.reader, summary.n_lines, summary.media_type) == (
        "modis-grid", None, "application/x-hdf")  # fmt: skip
    # a sliver: the tile's corner that lies on the Earth, from -180 to the eastern curve
    assert summary.bbox == pytest.approx((-180.0, -80.405932, -172.763114, -80.0), abs=2e-6)


def test_the_real_tiles_footprint_is_the_independent_one_and_near_its_gring():
    summary = describe_granule(MOD09GA)
    mine = shape(summary.geometry)
    theirs = independent_footprint(*tile_corners(14, 17))
    assert mine.hausdorff_distance(theirs) < HAUSDORFF
    assert abs(mine.area - theirs.area) / theirs.area < AREA
    # the file's own GRING: a quadrilateral ECS drew round the tile (one corner at 179.848,
    # just west of -180), holding the footprint; their corners agree within 0.05 degree
    gring = shapely.Polygon([(179.847966 - 360, -80.406721), (-179.993019, -79.980503),
                             (-172.725395, -79.980021), (-172.564431, -80.406197)])  # fmt: skip
    assert gring.buffer(1e-3).contains(mine)
    (_, south), _, (east, north), _ = gring.exterior.coords[:4]  # its south-west, north-east
    assert np.abs(np.array(mine.bounds) - [-180, south, east, north]).max() < 0.05


@pytest.mark.parametrize(
    ("h", "v", "what"),
    [(18, 4, "ordinary"), (17, 0, "north pole"), (18, 17, "south pole"),
     (0, 8, "western edge"), (35, 9, "eastern edge"), (14, 17, "the real tile's")],
)  # fmt: skip
def test_a_tiles_footprint_is_its_exact_shape(tmp_path, h, v, what):
    upper_left, lower_right = tile_corners(h, v)
    path = write_tile(tmp_path / f"MOD11A1.h{h:02d}v{v:02d}.hdf", "MOD11A1",
                      sinusoidal_grid(upper_left, lower_right))  # fmt: skip
    summary = describe_granule(path)
    mine = shape(summary.geometry)
    theirs = independent_footprint(upper_left, lower_right)
    assert mine.hausdorff_distance(theirs) < HAUSDORFF, what
    assert abs(mine.area - theirs.area) / theirs.area < AREA, what
    west, south, east, north = summary.bbox
    if v == 0:
        assert (west, north) == (-180.0, 90.0)  # h17v00 holds the pole, west of Greenwich
        assert east == pytest.approx(0.0, abs=1e-6)
    if v == 17:
        assert south == -90.0 if h == 18 else south > -80.5
    if h in (0, 35):
        assert (west if h == 0 else east) == (-180.0 if h == 0 else 180.0)
        assert 7.0 < east - west <= 10.0 + 1e-6  # a sliver: 10 degrees wide at the equator
    if (h, v) == (18, 4):
        assert (south, north) == pytest.approx((40.0, 50.0), abs=1e-6)
        assert west == 0.0
        assert east == pytest.approx(
            math.degrees(TILE / (RADIUS * math.cos(math.radians(50)))), abs=1e-6
        )


def test_the_outline_is_sampled_within_its_accuracy():
    """Between its vertices the outline's straight chords stray at most ACCURACY degrees."""
    from nearline.swath._modis_outline import sinusoidal_outline

    (ring,) = sinusoidal_outline(*tile_corners(17, 0), radius=RADIUS)
    lon, lat = ring[:, 0], ring[:, 1]
    up = np.flatnonzero(np.diff(lat) > 0)  # the western boundary runs north, the eastern south
    middle = (lat[up] + lat[up + 1]) / 2
    truth = np.clip(np.degrees(-TILE / (RADIUS * np.cos(np.radians(middle)))), -180, 180)
    stray = np.abs((lon[up] + lon[up + 1]) / 2 - truth)
    assert up.size > 10
    assert stray.max() <= ACCURACY
    assert len(ring) < 1000  # sampled where the curve bends (909 vertices)


def test_geographic_corners_are_packed_degrees_minutes_seconds(tmp_path):
    assert packed_dms(-180000000.0) == -180.0
    assert packed_dms(45030000.0) == 45.5  # 45 degrees 30 minutes
    assert packed_dms(-10001030.5) == pytest.approx(-(10 + 1 / 60 + 30.5 / 3600))
    grid = sinusoidal_grid((-180000000.0, 90000000.0), (180000000.0, -90000000.0))
    grid = grid.replace("GCTP_SNSOID", "GCTP_GEO")
    summary = describe_granule(write_tile(tmp_path / "MOD11C1.hdf", "MOD11C1", grid))
    assert summary.bbox == (-180.0, -90.0, 180.0, 90.0)


def test_land_fields_are_decoded_as_the_land_products_define_them(tmp_path):
    with open_granule(MOD09GA) as granule:
        reflectance = granule.read_field("sur_refl_b01_1")  # scale_factor 10000, a divisor
        metres = granule.read_field("Range_1")  # scale_factor 25, a multiplier
        cover = granule.read_field("obscov_500m_1")  # percent, 0.01: a fraction
        flags = granule.read_field("state_1km_1")
    sd = SD(str(MOD09GA), SDC.READ)
    stored = sd.select("sur_refl_b01_1").get()
    stored_range = sd.select("Range_1").get()
    sd.end()
    good = (stored != -28672) & (stored >= -100) & (stored <= 16000)
    np.testing.assert_array_equal(np.isfinite(reflectance), good)
    np.testing.assert_allclose(reflectance[good], stored[good] / 10000.0, rtol=1e-6)
    assert 0 < np.nanmin(reflectance) < np.nanmax(reflectance) < 1.6
    kept = stored_range != 0
    np.testing.assert_allclose(metres[kept], stored_range[kept] * 25.0, rtol=1e-6)
    assert 700e3 < np.nanmin(metres) < np.nanmax(metres) < 1.7e6  # Terra is 705 km up
    assert 0 <= np.nanmin(cover) <= np.nanmax(cover) <= 1
    assert flags.dtype == np.uint16  # a bit field, as stored
    emissivity = np.array([[0, 1], [200, 255]], np.uint8)  # MOD11: 0.002 and 0.49, fill 0
    attrs = {"scale_factor": 0.002, "add_offset": 0.49, "_FillValue": np.uint8(0),
             "valid_range": [1, 255]}  # fmt: skip
    got = decode_land(emissivity, attrs)
    np.testing.assert_allclose(got, [[np.nan, 0.492], [0.89, 1.0]], rtol=1e-6)


def test_products_out_of_scope_are_refused_in_one_line(tmp_path):
    swath = (
        'GROUP=SwathStructure\n\tGROUP=SWATH_1\n\t\tSwathName="MODIS_SWATH_Type_L1B"\n'
        '\t\tGROUP=GeoField\n\t\t\tOBJECT=GeoField_1\n\t\t\t\tGeoFieldName="Latitude"\n'
        '\t\t\tEND_OBJECT=GeoField_1\n\t\t\tOBJECT=GeoField_2\n\t\t\t\tGeoFieldName="Longitude"\n'
        "\t\t\tEND_OBJECT=GeoField_2\n\t\tEND_GROUP=GeoField\n\tEND_GROUP=SWATH_1\nEND_GROUP=SwathStructure\n"
    )
    for short_name, what in (
        ("MOD021KM", "a Level-1B product"),
        ("MYD03", "a geolocation product"),
    ):
        path = write_tile(tmp_path / f"{short_name}.hdf", short_name, "")
        sd = SD(str(path), SDC.WRITE)
        sd.attr("StructMetadata.0").set(SDC.CHAR8, swath + "END\n")
        sd.end()
        with pytest.raises(GranuleError) as refused:
            open_granule(path)
        message = str(refused.value)
        assert "\n" not in message
        assert str(path) in message
        assert (
            f"modis-l2 (CoreMetadata.0 names '{short_name}', {what} nearline does not read "
            "(docs/realdata.md lists what it does))"
        ) in message
    polar = sinusoidal_grid(*tile_corners(18, 4)).replace("GCTP_SNSOID", "GCTP_LAMAZ")
    path = write_tile(tmp_path / "MOD10A1.hdf", "MOD10A1", polar)
    assert (
        ModisGridReader.why_not(path)
        == "'MOD10A1' is a grid in GCTP_LAMAZ, which nearline does not read"
    )
