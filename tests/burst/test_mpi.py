"""burst under real MPI ranks: assembly, per-rank files, overflow and faults."""

from __future__ import annotations

import json
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr
import zarr

from nearline.burst.sinks.raw import read_record_arrays
from nearline.layout import closed_sets, hds_path

from ..conftest import mpiexec
from .expected import block_rows, expected_array

PROGRAM = Path(__file__).parent / "programs" / "model.py"
pytestmark = pytest.mark.mpi


def run_model(root: Path, *, compute: int, recovery: bool = False, env=None, **config):
    settings = {"root": str(root), "file": "dynamics", "variables": ["t", "q"], **config}
    ranks = compute + settings["io_ranks"]
    return mpiexec(PROGRAM, json.dumps(settings), ranks=ranks, recovery=recovery, env=env)


def read_netcdf(path: Path) -> dict[str, np.ndarray]:
    with xr.open_dataset(path, mask_and_scale=False, decode_times=False) as ds:
        return {name: ds[name].values for name in ds.variables}


def leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if ".partial" in p.name]


@pytest.mark.parametrize(("io_ranks", "transport"), [(1, "auto"), (2, "auto"), (2, "message")])
def test_uneven_blocks_from_three_ranks_assemble(tmp_path, io_ranks, transport):
    shape = (11, 6, 5)
    result = run_model(
        tmp_path,
        compute=3,
        io_ranks=io_ranks,
        shape=list(shape),
        dtype="float64",
        steps=2,
        env={"NEARLINE_BURST_TRANSPORT": transport},
    )
    assert result.returncode == 0, result.stderr
    for step in range(2):
        data = read_netcdf(hds_path(tmp_path, step=step, file="dynamics", ext="nc"))
        for name in ("t", "q"):
            np.testing.assert_array_equal(data[name], expected_array(name, step, shape, "f8"))
        assert int(data["step"]) == step
        for rank in range(3):
            diag = read_netcdf(hds_path(tmp_path, step=step, file="diag", rank=rank, ext="nc"))
            assert int(diag["rank_step"]) == rank * 100 + step
    assert leftovers(tmp_path) == []
    marked = {(s.step, s.file): [m.path for m in s.members] for s in closed_sets(tmp_path)}
    assert marked == {
        **{(step, "dynamics"): [f"dynamics.{step:06d}.nc"] for step in range(2)},
        **{
            (step, "diag"): [f"diag/diag.{step:06d}.{rank:05d}.nc" for rank in range(3)]
            for step in range(2)
        },
    }


def test_per_rank_files_hold_each_ranks_rows(tmp_path):
    shape = (10, 4)
    result = run_model(tmp_path, compute=4, io_ranks=1, shape=list(shape), steps=2, assembled=False)
    assert result.returncode == 0, result.stderr
    rows = block_rows(shape[0], 4, uneven=True)
    for rank in range(4):
        begin = sum(rows[:rank])
        path = hds_path(tmp_path, step=1, file="dynamics", rank=rank, ext="nc")
        with xr.open_dataset(path) as ds:
            want = expected_array("q", 1, shape, "f4")[begin : begin + rows[rank]]
            np.testing.assert_array_equal(ds["q"].values, want)
            assert ds["q"].attrs["units"] == "K"


@pytest.mark.parametrize("overflow", ["block", "spill", "sync"])
def test_overflow_with_memory_smaller_than_one_step(tmp_path, overflow):
    shape = (64, 40)  # 20 KiB per variable, two variables: 40 KiB a step against 8 KiB
    result = run_model(
        tmp_path,
        compute=3,
        io_ranks=1,
        shape=list(shape),
        dtype="float64",
        steps=3,
        memory="8KiB",
        overflow=overflow,
    )
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout.split("STATS ", 1)[1].splitlines()[0])
    for step in range(3):
        data = read_netcdf(hds_path(tmp_path, step=step, file="dynamics", ext="nc"))
        np.testing.assert_array_equal(data["t"], expected_array("t", step, shape, "f8"))
    assert stats["bytes_queued"] == 0
    assert (stats["bytes_spilled"] > 0) == (overflow == "spill")


def test_failing_sink_reaches_every_compute_rank(tmp_path):
    began = time.monotonic()
    result = run_model(tmp_path, compute=3, io_ranks=1, shape=[6, 3], steps=2, sink="failing")
    assert result.returncode != 0
    assert time.monotonic() - began < 60
    reports = [line for line in result.stderr.splitlines() if "BurstError" in line]
    assert reports
    assert all("file 'dynamics' step 0" in line and "No space left" in line for line in reports)
    assert not list(tmp_path.rglob("dynamics*"))  # no file that looks complete
    for visible in tmp_path.rglob("diag.*.dat"):  # the abort may cut writes short, but
        assert np.load(visible)["rank_step"] >= 0  # only finished files have final names


def test_a_consuming_callable_sink_creates_nothing_and_the_marker_says_so(tmp_path):
    root, seen = tmp_path / "out", tmp_path / "seen"
    seen.mkdir()
    shape, steps = (9, 4), 2
    settings = {"root": str(root), "seen": str(seen), "io_ranks": 2, "shape": shape}
    program = PROGRAM.with_name("consume.py")
    result = mpiexec(program, json.dumps({**settings, "steps": steps}), ranks=5)
    assert result.returncode == 0, result.stderr
    assert [p for p in root.rglob("*") if p.is_file() and p.name != ".complete"] == []
    notes = {p.name: json.loads(p.read_text()) for p in seen.iterdir()}
    for step in range(steps):
        total = float(expected_array("t", step, shape, "f8").sum())
        assert notes.pop(f".dynamics.{step:06d}.dat.partial.json") == {"t": total}
        for rank in range(3):
            note = notes.pop(f".diag.{step:06d}.{rank:05d}.dat.partial.json")
            assert note == {"rank_step": rank * 100 + step}
    assert notes == {}
    sets = {(s.step, s.file): s for s in closed_sets(root)}
    assert sorted(sets) == [(s, f) for s in range(steps) for f in ("diag", "dynamics")]
    marker = json.loads((root / "000001" / "dynamics" / ".complete").read_text())
    assert marker == {
        "step": 1,
        "file": "dynamics",
        "members": [],
        "consumed": [
            {"path": "dynamics.000001.dat", "created": False, "consumed_by": "__main__.analyse"}
        ],
    }
    diag = sets[(0, "diag")]
    assert diag.members == ()
    assert [(c.path, c.consumed_by) for c in diag.consumed] == [
        (f"diag/diag.000000.{rank:05d}.dat", "__main__.analyse") for rank in range(3)
    ]


@pytest.mark.parametrize(
    ("memory", "overflow", "transport"),
    [
        ("64MiB", "block", "auto"),
        ("64MiB", "block", "message"),
        ("4KiB", "block", "auto"),
        ("4KiB", "spill", "auto"),
        ("4KiB", "sync", "auto"),
    ],
)
def test_buffer_hands_blocks_over_bit_exact(tmp_path, memory, overflow, transport):
    """io.buffer under MPI: lent queue memory on the node, ordinary memory sent as a message
    across nodes or when the 4 KiB queue is full; every assembled byte arrives."""
    shape = (11, 6, 5)
    result = run_model(
        tmp_path, compute=3, io_ranks=2, shape=list(shape), dtype="float64", steps=2,
        buffer=True, memory=memory, overflow=overflow,
        env={"NEARLINE_BURST_TRANSPORT": transport},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    for step in range(2):
        data = read_netcdf(hds_path(tmp_path, step=step, file="dynamics", ext="nc"))
        for name in ("t", "q"):
            np.testing.assert_array_equal(data[name], expected_array(name, step, shape, "f8"))
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("recovery", [False, True])
def test_killed_io_rank_is_reported_not_hung(tmp_path, recovery):
    """By default mpiexec ends the job when a rank dies; with --enable-recovery the compute
    ranks live on, notice the dead I/O rank and raise BurstError naming the files at risk."""
    began = time.monotonic()
    result = run_model(
        tmp_path, compute=2, io_ranks=1, shape=[8, 3], steps=50, kill_io_at=1, recovery=recovery
    )
    assert time.monotonic() - began < 60
    assert not (tmp_path / "000049").exists()  # the run did not go on as if nothing happened
    if not recovery:
        assert result.returncode != 0
        return
    reports = [line for line in result.stderr.splitlines() if "BurstError" in line]
    assert reports
    assert all("died" in line and "'dynamics'" in line for line in reports), reports


@pytest.mark.parametrize(("sink", "ext"), [("hdf5", "h5"), ("zarr", "zarr"), ("raw", "dat")])
def test_assembled_variables_through_every_format(tmp_path, sink, ext):
    shape = (9, 4, 3)
    result = run_model(
        tmp_path, compute=3, io_ranks=2, shape=list(shape), dtype="int16", steps=1, sink=sink
    )
    assert result.returncode == 0, result.stderr
    path = hds_path(tmp_path, step=0, file="dynamics", ext=ext)
    want = {name: expected_array(name, 0, shape, "i2") for name in ("t", "q")}
    if sink == "hdf5":
        with h5py.File(path, "r") as f:
            got = {name: f[name][()] for name in want}
    elif sink == "zarr":
        group = zarr.open_group(path, mode="r")
        got = {name: group[name][...] for name in want}
    else:  # Fortran records in the order the model first wrote the variables
        got = dict(zip(want, read_record_arrays(path, [("i2", shape)] * 2), strict=True))
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
        assert got[name].dtype == np.int16


def test_a_lease_held_across_a_barrier_does_not_hang_a_write_waiting_for_room(tmp_path):
    """Rank 0 holds half the queue as a lease while in a barrier; rank 1's 40 KB block does
    not fit in the other half, so the I/O rank writes it through instead of waiting."""
    program = PROGRAM.parent / "lease_holder.py"
    result = mpiexec(program, str(tmp_path), ranks=3, timeout=60)
    assert result.returncode == 0, result.stderr
    for step in range(2):
        small = read_netcdf(hds_path(tmp_path, step=step, file="small", rank=0, ext="nc"))
        np.testing.assert_array_equal(small["s"], np.arange(16) + step)
        big = read_netcdf(hds_path(tmp_path, step=step, file="big", rank=1, ext="nc"))
        np.testing.assert_array_equal(big["b"], np.arange(5000, dtype="f8") * (step + 1))
    reports = [json.loads(line[6:]) for line in result.stdout.splitlines() if "STATS " in line]
    stats = {report["rank"]: report for report in reports}
    assert stats[1]["seconds_blocked"] > 0  # rank 1 waited for its block to be written
    assert stats[0]["bytes_written"] == 2 * (16 + 5000) * 8
