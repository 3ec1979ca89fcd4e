"""10-day and monthly composites of small hand-made daily files."""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np
import pytest

from nearline.composite._base import INT16_FILL
from nearline.composite._climate import temporal_composite
from nearline.composite._reducers import get_reducer
from nearline.errors import CompositeError, ConfigError

HEIGHT, WIDTH = 10, 7


def write_daily(path: Path, day: str, bands: dict[str, np.ndarray], reducer: str) -> Path:
    """A daily file as the driver writes it: (y, x) variables, CF packing, the attributes."""
    with netCDF4.Dataset(path, "w") as dataset:
        dataset.setncatts({"reducer": reducer, "time_coverage_start": day,
                           "time_coverage_end": day, "grid": "tiny"})  # fmt: skip
        dataset.createDimension("y", HEIGHT)
        dataset.createDimension("x", WIDTH)
        for name, size in (("y", HEIGHT), ("x", WIDTH)):
            axis = dataset.createVariable(name, "f8", (name,))
            axis[:] = np.arange(size) * 8000.0
        dataset.createVariable("crs", "i4").setncattr("grid_mapping_name", "sinusoidal")
        for variable in get_reducer(reducer).variables():
            handle = dataset.createVariable(
                variable.name, variable.dtype, ("y", "x"), fill_value=variable.fill
            )
            handle.setncatts(dict(variable.attrs))
            handle.set_auto_maskandscale(False)
            handle[...] = bands[variable.name].reshape(HEIGHT, WIDTH)
    return path


def max_ndvi_day(seed: int, day_of_year: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = HEIGHT * WIDTH
    bands = {
        name: rng.integers(-3000, 3000, n).astype(np.int16)
        for name in (
            "scan_angle",
            "sun_zenith",
            "rel_azimuth",
            "refl1",
            "refl2",
            "bt3",
            "bt4",
            "bt5",
        )
    }
    bands["ndvi"] = rng.integers(-2000, 9000, n).astype(np.int16)
    bands["ndvi"][rng.random(n) < 0.2] = INT16_FILL  # not seen that day
    bands["cloud"] = np.where(rng.random(n) < 0.3, 4, 0).astype(np.uint8)
    bands["qc"] = np.zeros(n, np.uint8)
    bands["day"] = np.full(n, day_of_year, np.int16)
    unseen = bands["ndvi"] == INT16_FILL
    for name in bands:
        if name in ("cloud", "qc"):
            bands[name][unseen] = 255
        elif name == "day":
            bands[name][unseen] = -1
        elif name != "ndvi":
            bands[name][unseen] = INT16_FILL
    return bands


def read(path: Path) -> dict[str, np.ndarray]:
    with netCDF4.Dataset(path) as dataset:
        dataset.set_auto_maskandscale(False)
        return {name: dataset[name][...] for name in dataset.variables}


@pytest.fixture
def december(tmp_path) -> list[tuple[Path, dict[str, np.ndarray]]]:
    days = []
    for seed, dom in enumerate((1, 4, 10, 15, 31)):
        bands = max_ndvi_day(seed, 335 + dom)
        path = write_daily(tmp_path / f"day-{dom:02d}.nc", f"2012-12-{dom:02d}", bands, "max-ndvi")
        days.append((path, bands))
    return days


def winners(days: list[dict[str, np.ndarray]]) -> np.ndarray:
    """Index of the winning day per cell: clear first, then the highest NDVI."""
    scores = []
    for d in days:
        score = d["ndvi"].astype(np.int64) + (d["cloud"] == 0) * 10**5
        scores.append(np.where(d["ndvi"] == INT16_FILL, -(10**6), score))
    score = np.stack(scores)
    return score.argmax(axis=0)


def test_a_ten_day_composite_keeps_each_cells_clear_maximum_ndvi_day(december, tmp_path):
    first_ten = december[:3]
    out = temporal_composite([p for p, _ in first_ten], tmp_path / "dec-01.nc", period="10day",
                             block_rows=3)  # fmt: skip
    got = read(out)
    days = [bands for _, bands in first_ten]
    win = winners(days)
    for name in days[0]:
        want = np.choose(win, [d[name] for d in days])
        np.testing.assert_array_equal(got[name].ravel(), want, err_msg=name)
    assert got["x"][1] == 8000.0
    with netCDF4.Dataset(out) as dataset:
        assert dataset.time_coverage_start == "2012-12-01"
        assert dataset.time_coverage_end == "2012-12-10"
        assert dataset.period == "10day"
        assert dataset["ndvi"].scale_factor == pytest.approx(1e-4)
        assert dataset["ndvi"]._FillValue == INT16_FILL
    assert not list(tmp_path.glob(".*"))


def test_a_monthly_composite_streams_any_block_height_to_the_same_file(december, tmp_path):
    paths = [p for p, _ in december]
    one = read(temporal_composite(paths, tmp_path / "a.nc", period="month", block_rows=1))
    all_rows = read(
        temporal_composite(paths[::-1], tmp_path / "b.nc", period="month", block_rows=64)
    )
    for name in one:
        np.testing.assert_array_equal(one[name], all_rows[name], err_msg=name)
    days = [bands for _, bands in december]
    np.testing.assert_array_equal(
        one["day"].ravel(), np.choose(winners(days), [d["day"] for d in days])
    )
    assert set(np.unique(one["day"])) <= {-1, 336, 339, 345, 350, 366}


def test_a_file_outside_the_period_is_refused_by_name(december, tmp_path):
    paths = [p for p, _ in december]
    with pytest.raises(CompositeError, match=r"day-15\.nc"):
        temporal_composite(paths[:4], tmp_path / "x.nc", period="10day")
    assert not (tmp_path / "x.nc").exists()


def test_files_of_another_reducer_are_refused(december, tmp_path):
    bands = {"count": np.ones(HEIGHT * WIDTH, np.uint16)}
    other = write_daily(tmp_path / "count.nc", "2012-12-02", bands, "count")
    with pytest.raises(CompositeError, match=r"count\.nc"):
        temporal_composite([december[0][0], other], tmp_path / "x.nc", period="month")


def test_counts_add_up_over_a_month(tmp_path):
    paths = [
        write_daily(
            tmp_path / f"c{d}.nc",
            f"2013-02-{d:02d}",
            {"count": np.full(HEIGHT * WIDTH, d, np.uint16)},
            "count",
        )
        for d in (1, 14, 28)
    ]
    got = read(temporal_composite(paths, tmp_path / "feb.nc", period="month", block_rows=4))
    assert (got["count"] == 43).all()


def test_a_daily_period_is_not_a_temporal_composite(december, tmp_path):
    with pytest.raises(ConfigError, match="10day or month"):
        temporal_composite([december[0][0]], tmp_path / "x.nc", period="day")
