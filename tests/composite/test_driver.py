"""composite.run end to end on small synthetic days: real granule files, real processes,
real MPI ranks, the output read back with xarray."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from nearline.composite import run
from nearline.composite._quality import composite_coverage
from nearline.composite._reducers import MaxNDVI
from nearline.errors import ConfigError, GranuleError
from nearline.mpirun import MPI_ENV
from nearline.swath import synthesize_day

LINES = 900  # per orbit: small, yet every orbit crosses many bands


@pytest.fixture(scope="module")
def day(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("day")
    return sorted(synthesize_day("2012-12-12", 4, folder, lines_per_orbit=LINES))


def read(path: Path) -> dict[str, np.ndarray]:
    with xr.open_dataset(path, mask_and_scale=False) as dataset:
        return {name: dataset[name].values for name in dataset.data_vars if name != "crs"}


@pytest.fixture(scope="module")
def in_memory(day, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("in-memory") / "day.nc"
    seen: dict[str, tuple[int, int]] = {}
    result = run(
        day,
        out=out,
        grid="igh-8km",
        workers=2,
        readers=1,
        memory="2GiB",
        progress=lambda phase, done, total: seen.__setitem__(phase, (done, total)),
    )
    # every progress bar ends full: the lines served add up to the total announced
    assert seen["plan"] == (len(day), len(day))
    assert seen["composite"][0] == seen["composite"][1] > LINES
    assert seen["write"] == (2, 2)
    assert result.passes == 1
    assert result.bands == 2
    return out


def test_the_composite_is_a_cf_file_with_twelve_bands_of_plausible_values(in_memory, day):
    with xr.open_dataset(in_memory) as dataset:
        assert dataset.sizes == {"y": 2168, "x": 5004}
        bands = [name for name in dataset.data_vars if name != "crs"]
        assert len(bands) == 12
        ndvi = dataset["ndvi"].values
        seen = np.isfinite(ndvi)
        assert 0.005 < seen.mean() < 0.6
        assert np.nanmin(ndvi) >= -1
        assert np.nanmax(ndvi) <= 1
        assert dataset.attrs["input_granules"].split() == [p.name for p in day]
        assert dataset["x"].values[0] == pytest.approx(-20016000 + 4000)
    assert not list(in_memory.parent.glob(".*"))  # no temporary or scratch left


@pytest.mark.parametrize(
    ("workers", "memory", "bands"),
    [(2, "420MiB", "many"), (1, "2GiB", "one")],  # out of core in passes; one band, one pass
)
def test_any_partition_gives_the_same_composite_as_in_memory(
    in_memory, day, tmp_path, workers, memory, bands
):
    """Footprints reach across band edges and never depend on how lines were cut up."""
    out = tmp_path / "other.nc"
    result = run(day, out=out, grid="igh-8km", workers=workers, readers=2, memory=memory)
    assert (result.bands == 1) if bands == "one" else (result.passes > 1)
    want, got = read(in_memory), read(out)
    assert want.keys() == got.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_leaving_out_the_night_changes_no_cell(in_memory, day, tmp_path, monkeypatch):
    """max-ndvi uses no pixel without daylight, so the band owners observe only the daylit
    span of each block: the composite is the one every line gives."""
    monkeypatch.setattr(MaxNDVI, "uses_night", True)  # observe every line and cloud-test it
    out = tmp_path / "every-line.nc"
    result = run(day, out=out, grid="igh-8km", workers=2, readers=1, memory="2GiB")
    want, got = read(out), read(in_memory)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    # the owners' chain stages are in the timings
    for stage in ("geolocation", "calibration", "reflectance_and_terrain", "cloud_mask"):
        assert 0 < result.timings[f"chain_{stage}"] < result.timings["worker_cpu_total"]


def test_a_truncated_granule_fails_the_run_and_leaves_no_output(day, tmp_path):
    broken = tmp_path / day[1].name
    broken.write_bytes(day[1].read_bytes()[: day[1].stat().st_size // 2])
    out = tmp_path / "day.nc"
    with pytest.raises(GranuleError, match=broken.name):
        run([day[0], broken], out=out, workers=1)
    assert list(tmp_path.iterdir()) == [broken]


def test_a_truncated_granule_is_skipped_and_named_when_asked(day, tmp_path):
    broken = tmp_path / day[1].name
    broken.write_bytes(day[1].read_bytes()[:4096])
    out = tmp_path / "day.nc"
    result = run([day[0], broken], out=out, workers=1, on_error="skip")
    assert [path.name for path, _ in result.skipped] == [broken.name]
    with xr.open_dataset(out) as dataset:
        assert dataset.attrs["skipped_granules"] == broken.name
        assert dataset.attrs["input_granules"] == day[0].name


def test_granules_outside_the_period_are_refused(day, tmp_path):
    other = tmp_path / "other"
    later = synthesize_day("2012-12-20", 1, other, lines_per_orbit=200)
    with pytest.raises(ConfigError, match="outside the day"):
        run([day[0], *later], out=tmp_path / "x.nc", workers=1)


@pytest.mark.mpi
@pytest.mark.timeout(240)
def test_an_mpi_run_gives_the_same_composite_as_a_local_run(in_memory, day, tmp_path):
    out = tmp_path / "mpi.nc"
    launcher = Path(sys.executable).parent / "mpiexec"
    command = [
        str(launcher),
        "-n",
        "3",
        sys.executable,
        "-m",
        "nearline",
        "composite",
        *map(str, day),
        "--out",
        str(out),
        "--readers",
        "1",
    ]
    done = subprocess.run(
        command,
        env={**os.environ, **MPI_ENV},
        capture_output=True,
        text=True,
        timeout=220,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    want, got = read(in_memory), read(out)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_the_quicklook_shows_ndvi_water_clouds_and_no_data_under_a_legend(day, tmp_path):
    from PIL import Image

    from nearline.composite._quicklook import CLOUDY, NO_DATA, OUTSIDE, WATER

    out, png = tmp_path / "day.nc", tmp_path / "ndvi.png"
    run(day[:2], out=out, workers=1, png=png)
    with Image.open(png) as opened:
        image = np.asarray(opened)
    assert image.shape[1] == 2502
    assert image.shape[0] > 1084  # the map (half the grid's rows), then the legend strip
    picture = image[:1084]

    def share(colour):
        return (picture == colour).all(axis=2).mean()

    assert 0.2 < share(NO_DATA) < 0.9  # two short orbits leave most of the world unseen
    assert 0.2 < share(OUTSIDE) < 0.35  # IGH's interruptions and the corners
    assert share(WATER) > 0.005
    assert share(CLOUDY) > 0  # land these short orbits saw only cloudy
    green = (picture[..., 1] > picture[..., 0] + 30) & (picture[..., 1] > picture[..., 2])
    assert green.sum() > 100
    legend = image[1084:]
    assert (legend == WATER).all(axis=2).any()  # the swatches
    assert (legend == CLOUDY).all(axis=2).any()
    assert (legend < 40).all(axis=2).sum() > 500  # black text and the colour bar's frame


def test_registration_leaves_no_pinholes(in_memory, day, tmp_path):
    """Cells inside a swath are never empty: at most 0.1 % of the filled cells are empty
    cells with 6 or more of their 8 neighbours filled (registering pixel centres alone left
    5 %, in rings where the swaths widen)."""
    result = composite_coverage(in_memory)
    assert result.filled > 400_000
    assert result.pinhole_fraction <= 0.001
    latlon = tmp_path / "latlon.nc"
    run(day[:2], out=latlon, grid="latlon-0.25", workers=1)
    result = composite_coverage(latlon)
    assert result.filled > 20_000
    assert result.pinhole_fraction <= 0.001


def test_daily_composites_given_as_inputs_make_a_ten_day_composite(in_memory, tmp_path):
    out = tmp_path / "10day.nc"
    result = run([in_memory], out=out, period="10day")
    assert result.out == out
    with xr.open_dataset(out) as dataset:
        assert dataset.attrs["time_coverage_start"] == "2012-12-11"
        assert dataset.attrs["time_coverage_end"] == "2012-12-20"
    want, got = read(in_memory), read(out)
    np.testing.assert_array_equal(got["ndvi"], want["ndvi"])  # one day: its own maximum
