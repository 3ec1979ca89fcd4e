"""Where a day's composite never saw the land clear, the edge is a cloud's, not a swath's.

Three consecutive afternoon orbits over Africa and Europe are composited twice: under the
day's one weather (what ``synthesize_day`` draws), and under a weather of its own for each
orbit (what it drew before: then the composite's never-clear areas were cut off along the
swaths' edges, in straight-edged wedges). The boundary between land never seen clear and
land seen clear is searched for straight runs: long ones in the second case only.
"""

from __future__ import annotations

import warnings
from datetime import UTC, date, datetime, timedelta

import netCDF4
import numpy as np
import pytest

from nearline.composite import run
from nearline.composite._ancillary import Ancillary
from nearline.grid import get_grid
from nearline.swath import _orbit as orbit
from nearline.swath._clouds import Weather
from nearline.swath._landcover import LandCover
from nearline.swath._maps import land_bits
from nearline.swath._synth import synthesize_orbit

DAY = date(2012, 12, 12)
ORBITS = (6, 7, 8)  # 10:12 to 15:18 UTC: Africa, Europe and the Atlantic by day
LINES = 4000  # each orbit's sunlit third, as the demo's


def longest_straight_edge(never: np.ndarray, clear: np.ndarray) -> float:
    """Length (cells) of the longest straight run of the boundary between ``never`` and
    ``clear`` cells: the ``never`` cells with a ``clear`` 4-neighbour, taken in bands 1.5
    cells wide along each direction (every quarter degree), a run broken by a gap over 2
    cells."""
    beside = np.zeros_like(clear)
    beside[1:] |= clear[:-1]
    beside[:-1] |= clear[1:]
    beside[:, 1:] |= clear[:, :-1]
    beside[:, :-1] |= clear[:, 1:]
    rows, columns = np.nonzero(never & beside)
    longest = 0.0
    for angle in np.radians(np.arange(0.0, 180.0, 0.25)):
        along = columns * np.cos(angle) + rows * np.sin(angle)
        across = rows * np.cos(angle) - columns * np.sin(angle)
        for offset in (0.0, 0.75):
            band = np.floor((across + offset) / 1.5)
            order = np.lexsort((along, band))
            band, position = band[order], along[order]
            breaks = np.flatnonzero((np.diff(band) != 0) | (np.diff(position) > 2.0)) + 1
            starts = np.concatenate([[0], breaks])
            ends = np.concatenate([breaks - 1, [position.size - 1]])
            longest = max(longest, float(np.max(position[ends] - position[starts])))
    return longest


def test_the_measure_finds_a_straight_edge_and_not_a_round_one():
    rows, columns = np.mgrid[0:300, 0:300]
    wedge = columns > 100 + 0.3 * rows  # a straight edge 300 rows long
    assert longest_straight_edge(wedge, ~wedge) > 290
    disc = np.hypot(rows - 150, columns - 150) < 100
    assert longest_straight_edge(disc, ~disc) < 45  # a chord 1.5 deep in it is 35 long


def _never_and_clear(composite):
    with netCDF4.Dataset(composite) as dataset:
        seen = ~np.ma.getmaskarray(dataset["ndvi"][:])
        cloudy = np.ma.filled(dataset["cloud"][:], 0) != 0
        grid = get_grid(dataset.getncattr("grid"))
    lon, lat = grid.centre_lonlat(step=1)
    land = np.zeros(seen.shape, bool)
    land[seen] = Ancillary.load().is_land(lon[seen], lat[seen])
    return seen & land & cloudy, seen & land & ~cloudy


@pytest.fixture(scope="module")
def composites(tmp_path_factory):
    land = land_bits()
    land_cover = LandCover.make(land, 0)
    period = timedelta(days=1 / orbit.mean_motion(orbit.element_set("noaa19")))
    midnight = datetime(DAY.year, DAY.month, DAY.day, tzinfo=UTC)
    made = {}
    for kind in ("one weather", "a weather per orbit"):
        folder = tmp_path_factory.mktemp(kind.replace(" ", "-"))
        paths = []
        for index in ORBITS:
            weather = Weather.make(0 if kind == "one weather" else index, DAY)
            with warnings.catch_warnings():  # pyorbital's legacy-convention notice
                warnings.simplefilter("ignore", DeprecationWarning)
                paths.append(
                    synthesize_orbit(midnight + index * period, LINES, folder, platform="noaa19",
                                     seed=0, land=land, weather=weather, land_cover=land_cover)
                )  # fmt: skip
        result = run(paths, out=folder / "ndvi.nc", grid="igh-8km", workers=1)
        made[kind] = _never_and_clear(result.out)
    return made


def test_never_clear_land_has_cloud_shaped_edges_under_one_weather(composites):
    never, clear = composites["one weather"]
    assert never.sum() > 50_000  # plenty of land never seen clear, and seen clear
    assert clear.sum() > 200_000
    assert longest_straight_edge(never, clear) < 60  # 480 km; it was over 100 per orbit


def test_a_weather_per_orbit_cuts_never_clear_land_along_the_swaths(composites):
    never, clear = composites["a weather per orbit"]
    assert longest_straight_edge(never, clear) > 100
