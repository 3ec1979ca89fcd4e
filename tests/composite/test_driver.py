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
from nearline.composite.reducers import MaxNDVI
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


def test_out_of_core_passes_give_the_same_composite_as_in_memory(in_memory, day, tmp_path):
    out = tmp_path / "ooc.nc"
    result = run(day, out=out, grid="igh-8km", workers=2, readers=2, memory="420MiB")
    assert result.passes > 1
    want, got = read(in_memory), read(out)
    assert want.keys() == got.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_leaving_out_the_night_changes_no_cell(in_memory, day, tmp_path, monkeypatch):
    """No reducer uses a pixel without daylight, so the band owners observe only the daylit
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


def test_the_quicklook_is_a_png_of_the_grid_shape_with_vegetation_green(day, tmp_path):
    from PIL import Image

    out, png = tmp_path / "day.nc", tmp_path / "ndvi.png"
    run(day[:2], out=out, workers=1, png=png)
    with Image.open(png) as opened:
        image = np.asarray(opened)
    assert image.shape == (1084, 2502, 3)
    grey = (image == (225, 225, 225)).all(axis=2)
    assert 0.3 < grey.mean() < 0.999
    green = (image[..., 1] > image[..., 0] + 30) & (image[..., 1] > image[..., 2])
    assert green.sum() > 100


def test_daily_composites_given_as_inputs_make_a_ten_day_composite(in_memory, tmp_path):
    out = tmp_path / "10day.nc"
    result = run([in_memory], out=out, period="10day")
    assert result.out == out
    with xr.open_dataset(out) as dataset:
        assert dataset.attrs["time_coverage_start"] == "2012-12-11"
        assert dataset.attrs["time_coverage_end"] == "2012-12-20"
    want, got = read(in_memory), read(out)
    np.testing.assert_array_equal(got["ndvi"], want["ndvi"])  # one day: its own maximum
