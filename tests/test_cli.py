"""The `nearline` command as a user runs it: a real process, real MPI ranks for the demo."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import xarray as xr

from nearline.burst.demo import GRID, VARIABLES
from nearline.layout import hds_path
from nearline.mpirun import MPI_ENV


def nearline(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "nearline"), *args]
    env = {**os.environ, **MPI_ENV, "COLUMNS": "120"}
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_demo_compares_burst_with_direct_writes_and_leaves_readable_output(tmp_path):
    result = nearline("demo", "--out", "out", "--compute-ranks", "2", cwd=tmp_path)
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
