"""Reducers against numpy references on random observations; order independence; merge."""

from __future__ import annotations

import numpy as np
import pytest

from nearline.composite._base import INT16_FILL
from nearline.composite._observe import BAD_CALIBRATION, Observations
from nearline.composite._reducers import get_reducer
from nearline.errors import ConfigError

LINES, WIDTH, CELLS = 40, 409, 300
FLOATS = ("ndvi", "scan_angle", "sun_zenith", "rel_azimuth", "refl1", "refl2", "bt3", "bt4", "bt5")
PACKING = {  # name: (scale, offset), as _base.py declares
    "ndvi": (1e-4, 0.0), "scan_angle": (0.01, 0.0), "sun_zenith": (0.01, 0.0),
    "rel_azimuth": (0.01, 0.0), "refl1": (0.01, 0.0), "refl2": (0.01, 0.0),
    "bt3": (0.01, 200.0), "bt4": (0.01, 200.0), "bt5": (0.01, 200.0),
}  # fmt: skip


def observations(seed: int) -> Observations:
    rng = np.random.default_rng(seed)
    shape = (LINES, WIDTH)
    values = {
        "ndvi": rng.uniform(-0.3, 0.9, shape),
        "scan_angle": rng.uniform(-55, 55, shape),
        "sun_zenith": rng.uniform(10, 84, shape),
        "rel_azimuth": rng.uniform(0, 180, shape),
        "refl1": rng.uniform(2, 60, shape),
        "refl2": rng.uniform(2, 60, shape),
        "bt3": rng.uniform(220, 330, shape),
        "bt4": rng.uniform(220, 320, shape),
        "bt5": rng.uniform(220, 320, shape),
    }
    values = {k: v.astype(np.float32) for k, v in values.items()}
    values["ndvi"][rng.random(shape) < 0.1] = np.nan  # night or bad
    values["ndvi"][:, :5] = 0.5  # exact ties, broken by time and column
    cloud = np.where(rng.random(shape) < 0.4, 1 << rng.integers(0, 6, shape), 0).astype(np.uint8)
    qc = np.where(rng.random(shape) < 0.05, BAD_CALIBRATION, 0).astype(np.uint8)
    time_ms = 1_355_285_761_575 + seed * 10**8 + np.arange(LINES, dtype=np.int64) * 500
    day = np.full(shape, 347 + seed % 3, np.int16)
    lonlat = np.zeros(shape, np.float32)
    refl3a = np.full(shape, np.nan, np.float32)  # channel 3b on every line
    return Observations(lon=lonlat, lat=lonlat, cloud=cloud, qc=qc, day=day, time_ms=time_ms,
                        refl3a=refl3a, **values)  # fmt: skip


def cells_for(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 100)
    cells = rng.integers(0, CELLS, LINES * WIDTH).astype(np.int64)
    cells[rng.random(cells.size) < 0.2] = -1
    return cells


def pack(name: str, value: float) -> int:
    scale, offset = PACKING[name]
    return (
        INT16_FILL
        if np.isnan(value)
        else int(np.clip(np.round((value - offset) / scale), -32767, 32767))
    )


RANKED = {"max-ndvi": ("ndvi", 10000, 200), "max-bt4": ("bt4", 3000, 150)}  # band, shift, step


def preference(
    name: str, clear: bool, value: float, scan: float, time_ms: int, column: int
) -> tuple:
    """A max-value composite's order, written out: clear, the ranked band in steps (max-ndvi:
    NDVI by 0.02; max-bt4: channel 4 by 1.5 K from 170 K), nearer nadir (0.01 degree), then
    time (32 bits of milliseconds) and column."""
    band, shift, size = RANKED[name]
    step = (pack(band, value) + shift) // size
    return (bool(clear), step, -abs(pack("scan_angle", scan)), int(time_ms) % 2**32, column)


@pytest.mark.parametrize("name", ["max-ndvi", "max-bt4"])
def test_max_value_composites_keep_all_twelve_bands_of_the_winner(name):
    """max-bt4 takes night observations (NaN NDVI) as well."""
    obs, cells = observations(1), cells_for(1)
    obs.bt4[obs.bt4 > 310] = np.nan  # a thermal channel without a value
    reducer = get_reducer(name)
    state = reducer.new_state(CELLS)
    ranked = getattr(obs, RANKED[name][0]).ravel()
    used = reducer.update(state, cells, obs)
    assert used == ((cells >= 0) & np.isfinite(ranked)).sum()
    out = reducer.finish(state)
    assert list(out) == [v.name for v in reducer.variables()]
    assert len(out) == 12
    clear = (obs.cloud.ravel() == 0) & ((obs.qc.ravel() & BAD_CALIBRATION) == 0)
    line, column = np.divmod(np.arange(cells.size), WIDTH)
    for cell in range(CELLS):
        mine = np.flatnonzero((cells == cell) & np.isfinite(ranked))
        if mine.size == 0:
            assert out[RANKED[name][0]][cell] == INT16_FILL
            assert out["cloud"][cell] == 255
            continue
        scan = obs.scan_angle.ravel()
        keys = [
            preference(name, clear[k], ranked[k], scan[k], obs.time_ms[line[k]], column[k])
            for k in mine
        ]
        k = mine[max(range(mine.size), key=lambda i: keys[i])]
        for band in FLOATS:
            assert out[band][cell] == pack(band, getattr(obs, band).ravel()[k]), band
        assert out["cloud"][cell] == obs.cloud.ravel()[k]
        assert out["qc"][cell] == obs.qc.ravel()[k]
        assert out["day"][cell] == obs.day.ravel()[k]


def test_clear_observations_win_over_brighter_cloudy_ones():
    obs = observations(2)
    obs.cloud[...] = 0
    obs.cloud[0, 0] = 1
    obs.ndvi[...] = 0.2
    obs.ndvi[0, 0] = 0.9  # cloudy, higher NDVI
    cells = np.full(LINES * WIDTH, -1, np.int64)
    cells[[0, 1]] = 7
    reducer = get_reducer("max-ndvi")
    state = reducer.new_state(10)
    reducer.update(state, cells, obs)
    assert state["ndvi"][7] == 2000
    assert state["cloud"][7] == 0


def test_between_near_equal_ndvis_the_pixel_nearer_nadir_wins():
    obs = observations(2)
    obs.cloud[...] = 0
    obs.qc[...] = 0
    cells = np.full(LINES * WIDTH, -1, np.int64)
    cells[[0, 1]] = 3  # pixel 0 far off nadir, pixel 1 near it
    cells[[2, 3]] = 4
    obs.scan_angle[0, :4] = (50.0, -2.0, 50.0, -2.0)
    obs.ndvi[0, :4] = (0.415, 0.401, 0.43, 0.401)  # same 0.02 step; then a step higher
    reducer = get_reducer("max-ndvi")
    state = reducer.new_state(10)
    reducer.update(state, cells, obs)
    assert state["ndvi"][3] == 4010
    assert state["scan_angle"][3] == -200
    assert state["ndvi"][4] == 4300  # a clearly higher NDVI still wins, whatever the angle


@pytest.mark.parametrize("name", ["max-ndvi", "mean", "count"])
def test_a_pixel_reaches_every_cell_it_is_paired_with(name):
    obs = observations(5)
    obs.cloud[...] = 0
    obs.qc[...] = 0
    obs.ndvi[...] = 0.3
    obs.ndvi[2, 7] = 0.8
    pixel = 2 * WIDTH + 7
    cells = np.array([0, 1, 2, 2], np.int64)
    pixels = np.array([pixel, pixel, pixel, pixel + 1], np.int64)
    reducer = get_reducer(name)
    state = reducer.new_state(4)
    used = reducer.update(state, cells, obs, pixels=pixels)
    assert used == 4
    out = reducer.finish(state)
    if name == "count":
        assert out["count"].tolist() == [1, 1, 2, 0]
    elif name == "mean":
        assert out["ndvi"].tolist() == [8000, 8000, 5500, INT16_FILL]
    else:
        assert out["ndvi"].tolist() == [8000, 8000, 8000, INT16_FILL]
    with pytest.raises(ValueError, match="pair up"):
        reducer.update(state, cells, obs, pixels=pixels[:3])


@pytest.mark.parametrize("name", ["max-ndvi", "max-bt4", "mean", "min", "max", "count"])
def test_order_and_merge_do_not_change_the_result(name):
    reducer = get_reducer(name)
    blocks = [(observations(s), cells_for(s)) for s in (1, 2, 3)]
    forward, backward = reducer.new_state(CELLS), reducer.new_state(CELLS)
    for obs, cells in blocks:
        reducer.update(forward, cells, obs)
    for obs, cells in reversed(blocks):
        reducer.update(backward, cells, obs)
    parts = []
    for obs, cells in blocks:
        part = reducer.new_state(CELLS)
        reducer.update(part, cells, obs)
        parts.append(part)
    merged = reducer.new_state(CELLS)
    for part in reversed(parts):
        reducer.merge(merged, part)
    want = reducer.finish(forward)
    for other in (backward, merged):
        got = reducer.finish(other)
        for variable in want:
            np.testing.assert_array_equal(got[variable], want[variable], err_msg=variable)


@pytest.mark.parametrize("name", ["mean", "min", "max"])
def test_statistics_equal_numpy_over_clear_daytime_observations(name):
    obs, cells = observations(4), cells_for(4)
    reducer = get_reducer(name)
    state = reducer.new_state(CELLS)
    reducer.update(state, cells, obs)
    out = reducer.finish(state)
    usable = (
        (cells >= 0)
        & (obs.cloud.ravel() == 0)
        & np.isfinite(obs.ndvi.ravel())
        & ((obs.qc.ravel() & BAD_CALIBRATION) == 0)
    )
    np.testing.assert_array_equal(out["count"], np.bincount(cells[usable], minlength=CELLS))
    for band in ("ndvi", "refl1", "refl2", "bt3", "bt4", "bt5"):
        scale, offset = PACKING[band]
        packed = np.round((getattr(obs, band).ravel().astype(np.float64) - offset) / scale)
        for cell in range(0, CELLS, 7):
            values = packed[usable & (cells == cell)]
            if values.size == 0:
                assert out[band][cell] == INT16_FILL
                continue
            want = {"mean": np.round(values.sum() / values.size), "min": values.min(),
                    "max": values.max()}[name]  # fmt: skip
            assert out[band][cell] == want, (band, cell)


def test_count_counts_clear_daytime_observations():
    obs, cells = observations(5), cells_for(5)
    reducer = get_reducer("count")
    state = reducer.new_state(CELLS)
    used = reducer.update(state, cells, obs)
    out = reducer.finish(state)
    assert list(out) == ["count"]
    assert out["count"].sum() == used > 0


@pytest.mark.parametrize("name", ["max-ndvi", "max-bt4", "min", "max", "count"])
def test_restoring_a_finished_state_finishes_the_same(name):
    reducer = get_reducer(name)
    state = reducer.new_state(CELLS)
    reducer.update(state, cells_for(6), observations(6))
    out = reducer.finish(state)
    again = reducer.finish(reducer.restore({k: v.copy() for k, v in out.items()}))
    for variable in out:
        np.testing.assert_array_equal(again[variable], out[variable], err_msg=variable)


def test_a_restored_mean_is_the_count_weighted_mean():
    reducer = get_reducer("mean")
    day1 = {"count": np.array([2, 0, 1], np.uint16)}
    day2 = {"count": np.array([1, 3, 0], np.uint16)}
    for band in ("ndvi", "refl1", "refl2", "bt3", "bt4", "bt5"):
        day1[band] = np.array([1000, INT16_FILL, 40], np.int16)
        day2[band] = np.array([4000, 500, INT16_FILL], np.int16)
    state = reducer.restore(day1)
    reducer.merge(state, reducer.restore(day2))
    out = reducer.finish(state)
    np.testing.assert_array_equal(out["ndvi"], [2000, 500, 40])
    np.testing.assert_array_equal(out["count"], [3, 3, 1])


def test_an_unknown_reducer_names_the_known_ones():
    with pytest.raises(ConfigError, match="max-ndvi"):
        get_reducer("median")
