"""The `nearline` command as a user runs it: a real process, real MPI ranks for the demo."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import xarray as xr

from nearline.burst.demo import GRID, VARIABLES
from nearline.layout import hds_path
from nearline.mpirun import MPI_ENV


def nearline(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "nearline"), *args]
    env = {**os.environ, **MPI_ENV, "COLUMNS": "120"}
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


@pytest.fixture(scope="module")
def synthesized_day(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A day of one AVHRR orbit made by `nearline synth` once for the tests here (9 s of
    work); each test links it into its own folder as ``day`` and only reads it."""
    folder = tmp_path_factory.mktemp("synth")
    made = nearline(
        "synth", "avhrr", "--date", "2012-12-12", "--orbits", "1", "--lines", "400",
        "--out", "day", cwd=folder,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "wrote 1 granules" in made.stdout
    return folder / "day"


def test_demo_compares_burst_with_direct_writes_and_leaves_readable_output(tmp_path):
    result = nearline(
        "demo", "--only", "burst", "--out", "out", "--compute-ranks", "2", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.strip().startswith("│")]
    assert len(rows) == 5  # four steps and the total
    assert "all" in rows[-1]
    with xr.open_dataset(
        hds_path(tmp_path / "out" / "burst", step=3, file="dynamics", ext="nc")
    ) as ds:
        assert set(VARIABLES) <= set(ds.data_vars)
        assert ds["t"].shape == GRID
        assert ds["t"].attrs["units"] == "K"
        assert int(ds["step"]) == 3


def test_demo_composites_a_small_synthetic_day_into_a_netcdf_and_a_png(tmp_path):
    from PIL import Image

    result = nearline(
        "demo", "--only", "composite", "--out", "out", "--orbits", "3", "--lines", "600",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "composite demo: 3 orbits, 0.7 M pixels to igh-8km" in result.stdout
    folder = tmp_path / "out" / "composite"
    assert len(list((folder / "granules").glob("NSS.GHRR.NP.D12347.*.nc"))) == 3
    with xr.open_dataset(folder / "composite-igh-8km.nc") as ds:
        assert ds["ndvi"].shape == (2168, 5004)
        assert int(ds["ndvi"].count()) > 10_000
    with Image.open(folder / "ndvi.png") as image:
        assert image.size[0] == 2502
        assert image.size[1] > 1084  # the map, then its legend


def test_demo_orders_the_composite_through_the_service_and_shows_its_results(tmp_path):
    result = nearline(
        "demo", "--only", "service", "--out", "out", "--orbits", "2", "--lines", "600",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    said = result.stdout
    assert "ingested 2 granules" in said
    assert "STAC search of 2012-12-12: 2 granules on the first page" in said
    assert "successful: 2 granules in one run" in said
    links = [line.strip() for line in said.splitlines() if "/assets/data" in line]
    assert len(links) == 2  # the composite and its quicklook, each a download link
    data = tmp_path / "out" / "service" / "data"
    (netcdf,) = (data / "archive" / "outputs" / "pathfinder").rglob("*.nc")
    with xr.open_dataset(netcdf) as ds:
        assert ds["ndvi"].shape == (2168, 5004)
        assert ds.attrs["input_granules"].split() == sorted(
            p.name for p in (tmp_path / "out" / "composite" / "granules").iterdir()
        )
    assert "nearline serving" in (tmp_path / "out" / "service" / "serve.log").read_text()
    servers = [
        process
        for process in psutil.process_iter(["cmdline", "environ"])
        if "serve" in (process.info["cmdline"] or [])
        and (process.info["environ"] or {}).get("NEARLINE_DATA") == str(data)
    ]
    assert servers == []  # the demo stopped the server it started


def test_composite_names_a_missing_input_in_one_line(tmp_path):
    result = nearline("composite", "nowhere.nc", "--out", "x.nc", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["nearline: error: input nowhere.nc does not exist"]


def test_composite_to_a_folder_it_cannot_write_is_one_line_naming_path_and_fix(
    tmp_path, synthesized_day
):
    (tmp_path / "day").symlink_to(synthesized_day)
    (tmp_path / "taken").write_text("a file, not a folder")
    cases = [
        (["--out", "/proc/x.nc"], "cannot write --out /proc/x.nc: its folder /proc takes no "
         "new files (No such file or directory); name a netCDF file in a folder you can write"),
        (["--out", "taken/x.nc"], "cannot write --out taken/x.nc: taken is a file, not a "
         "folder; name a netCDF file in a folder you can write"),
        (["--out", "c.nc", "--png", "/proc/q.png"], "cannot write --png /proc/q.png: its folder "
         "/proc takes no new files (No such file or directory); name a PNG file in a folder "
         "you can write"),
    ]  # fmt: skip
    for args, message in cases:
        result = nearline("composite", "day", "--workers", "1", *args, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr + result.stdout
        assert result.stderr.splitlines() == [f"nearline: error: {message}"]
    assert not (tmp_path / "c.nc").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day", "taken"]  # no scratch left


def test_synth_and_composite_from_the_command_line(tmp_path, synthesized_day):
    (tmp_path / "day").symlink_to(synthesized_day)
    done = nearline(
        "composite", "day", "--grid", "latlon-0.25", "--reducer", "count", "--out", "c.nc",
        "--workers", "1", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with xr.open_dataset(tmp_path / "c.nc") as ds:
        assert ds["count"].shape == (720, 1440)
        assert int(ds["count"].sum()) > 1000
    assert not list(tmp_path.glob(".c.nc*"))


def test_errors_print_one_line_without_a_traceback(tmp_path):
    (tmp_path / "taken").write_text("a file, not a folder")
    result = nearline("demo", "--out", "taken", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "nearline: error: --out taken is a file; name a folder for the demo's output"
    ]


def test_sinks_lists_the_builtin_formats(tmp_path):
    result = nearline("sinks", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.split() == ["hdf5", "netcdf", "raw", "zarr"]
