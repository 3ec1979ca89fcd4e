"""nearline's calibration and geolocation of KLM GAC files it wrote, against pygac's own
(``get_calibrated_channels``, ``get_lonlat`` with ``interpolate_coords=True``) for the same
files: NOAA-19 (3b on every line) and MetOp-A (3a by day).

Measured (``pytest tests/swath/test_gac_pygac.py -s`` prints them): the calibrations agree
to float32 rounding, 1.5e-5 K at most in 3b, 4 and 5 and 5e-6 % in 1, 2 and 3a, NaN on the
same pixels. Geolocation: nearline puts a file's 51 tie points at pixels 4, 12, ..., 404;
pygac 1.8 puts a KLM file's at 4.5, 12.5, ..., 404.5 (pytroll/pygac#88, a half-pixel shift
SST CCI found in MetOp files), so its pixels lie half a pixel from nearline's, 2.8 km at the
median and 14 km at the swath's edge. With the tie points where nearline puts them, pygac's
own interpolator lands within 11 m (median) and 0.6 km of nearline between the outermost tie
points, 3 km at the four extrapolated pixels of each edge.
"""

from __future__ import annotations

import numpy as np
import pytest

from nearline.swath import TIE_COLUMNS, open_granule
from nearline.swath._orbit import METOPA_TLE, NOAA19_TLE
from nearline.swath._synth import synthesize_day

from ..gac_reference import (
    differences,
    ground_km,
    nearline_channels,
    pygac_interpolated,
    pygac_reference,
)

FLOAT32_AT_300K = 3.05e-5  # K: one float32 step between 256 and 512
ELEMENTS = {"noaa19": NOAA19_TLE, "metopa": METOPA_TLE}


@pytest.fixture(scope="module", params=[("noaa19", 300), ("metopa", 2000)], ids=str)
def compared(request, tmp_path_factory):
    """A KLM file nearline wrote, and both libraries' channels and pixel positions of it."""
    platform, lines = request.param
    folder = tmp_path_factory.mktemp(platform)
    (path,) = synthesize_day(
        "2012-12-12", 1, folder, satellite=platform, lines_per_orbit=lines, seed=2,
        file_format="l1b",
    )  # fmt: skip
    (folder / f"TLE_{platform}.txt").write_text("\n".join(ELEMENTS[platform]) + "\n")
    return path, nearline_channels(path), pygac_reference(path, folder)


@pytest.mark.parametrize("channel", ["1", "2", "3a", "3b", "4", "5"])
def test_the_calibrations_agree_to_float32_rounding(compared, channel):
    path, (ours, _, _), (theirs, _, _) = compared
    diff, disagree = differences(ours[channel], theirs[channel])
    print(f"{path.name[:11]} channel {channel}: {diff.size} pixels, max {diff.max(initial=0):.2g}")
    assert not disagree.any()  # NaN on the same pixels
    limit = 1e-5 if channel in ("1", "2", "3a") else FLOAT32_AT_300K
    assert diff.max(initial=0) < limit


def test_metopa_carries_3a_by_day_and_noaa19_never(compared):
    path, (ours, _, _), _ = compared
    with open_granule(path) as granule:
        select = granule.read_telemetry().ch3_select
    carries = np.isfinite(ours["3a"]).any(axis=1)
    if granule.platform == "metopa":
        assert carries.all()  # 00:00-00:16 UTC is sunlit for it
        assert (select == 1).all()
    else:
        assert not carries.any()
        assert (select == 0).all()


def test_pixels_lie_half_a_pixel_from_pygacs_which_puts_klm_tie_points_at_4_5(compared):
    _, (_, lon, lat), (_, pygac_lon, pygac_lat) = compared
    apart = ground_km(lon, lat, pygac_lon, pygac_lat)
    print(f"half-pixel convention: median {np.median(apart):.2f} km, max {apart.max():.1f} km")
    assert 2.0 < np.median(apart) < 4.0


def test_geolocation_agrees_with_pygacs_interpolator_at_nearlines_tie_points(compared):
    path, (_, lon, lat), _ = compared
    with open_granule(path) as granule:
        block = granule.read(0, granule.n_lines)
    pygac_lon, pygac_lat = pygac_interpolated(block.tie_lon, block.tie_lat, TIE_COLUMNS)
    apart = ground_km(lon, lat, pygac_lon, pygac_lat)
    inner = apart[:, TIE_COLUMNS[0] : TIE_COLUMNS[-1] + 1]
    print(
        f"median {np.median(apart) * 1000:.0f} m, max {inner.max():.2f} km inside the tie "
        f"points, {apart.max():.2f} km at the edges"
    )
    assert np.median(apart) < 0.03
    assert inner.max() < 0.75
    assert apart.max() < 3.5
