"""The plan balances the band owners' work: a line they do not observe (no daylight near it)
weighs little, so the sunlit hemisphere is split into more bands."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np

from nearline.composite._plan import (
    UNOBSERVED_WEIGHT,
    GranuleInfo,
    make_plan,
    observed_lines,
)
from nearline.grid import get_grid


def test_lines_with_daylight_and_their_neighbours_are_observed():
    sun = np.full((10, 51), 120.0, np.float32)
    sun[4, 50] = 84.0  # one sunlit tie point
    sun[8] = np.nan  # no angles at all: not observed
    want = np.full(10, UNOBSERVED_WEIGHT)
    want[3:6] = 1.0
    np.testing.assert_array_equal(observed_lines(sun), want)


def test_the_night_hemisphere_gets_the_taller_band():
    grid = get_grid("igh-8km")
    lines = 2000
    latitude = np.linspace(80.0, -80.0, lines)  # one pass from north to south
    tie_latitudes = np.repeat(latitude[:, None], 51, axis=1).astype(np.float32)
    sun = np.where(latitude[:, None] > 0, 120.0, 40.0) * np.ones((1, 51))  # southern summer
    info = GranuleInfo(0, Path("g.nc"), "noaa19", lines, datetime(2012, 12, 12))

    def boundary(line_weights: list[np.ndarray] | None) -> int:
        plan = make_plan(
            grid, [info], [tie_latitudes], workers=2, state_bytes_per_cell=30,
            memory_per_worker=2**30, line_weights=line_weights,
        )  # fmt: skip
        return plan.bands[0].rows[1]

    equator = grid.height // 2
    assert abs(boundary(None) - equator) <= 128  # every line weighs the same
    assert boundary([observed_lines(sun)]) > equator + 256  # the north is dark
