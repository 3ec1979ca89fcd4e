"""burst's C client: a C model compiled with `nearline burst-config`, run MPMD beside Python
I/O servers (`python -m nearline.burst.server`), its files read back with netCDF4 and h5py."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import h5py
import netCDF4
import numpy as np
import pytest

from nearline.layout import hds_path
from nearline.mpirun import MPI_ENV

from .expected import block_rows, expected_array

pytestmark = pytest.mark.mpi
PROGRAMS = Path(__file__).parent / "programs"
BIN = Path(sys.executable).parent
DTYPES = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8"]
SHAPE = (11, 6, 5)  # model.c's global array; model.f90's t(5, 6, 11)
ROOT = Path(__file__).resolve().parents[2]
FORTRAN_PACKAGES = ("openmpi-bin", "libopenmpi-dev", "gfortran")


def burst_config(*items: str) -> list[str]:
    done = subprocess.run(
        [str(BIN / "nearline"), "burst-config", *items], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.fixture(scope="module")
def fortran_model(tmp_path_factory) -> Path:
    """tests/burst/programs/model.f90, built with Debian's Open MPI and gfortran, installed
    by scripts/system-packages (make test, as root)."""
    check = subprocess.run(
        ["sh", str(ROOT / "scripts" / "system-packages"), "--check", *FORTRAN_PACKAGES],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr
    program = tmp_path_factory.mktemp("fortran-model") / "model"
    (fc,) = burst_config("--fc")
    command = [fc, str(PROGRAMS / "model.f90"), *burst_config("--fflags", "--libs")]
    done = subprocess.run([*command, "-o", str(program)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return program


@pytest.fixture(scope="module")
def c_model(tmp_path_factory) -> Path:
    """tests/burst/programs/model.c, built as a user builds a model."""
    program = tmp_path_factory.mktemp("c-model") / "model"
    (cc,) = burst_config("--cc")
    command = [
        cc,
        str(PROGRAMS / "model.c"),
        *burst_config("--cflags", "--libs"),
        "-o",
        str(program),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return program


def servers(root: Path, count: int, *options: str) -> list[str]:
    return [
        "-n", str(count), sys.executable, "-m", "nearline.burst.server", "--root", str(root),
        *options,
    ]  # fmt: skip


def launch(*parts: list[str], recovery: bool = False, mpi: str = "wheel") -> list[str]:
    """An MPMD command line, with the launcher of toolchain ``mpi``: mpiexec A : B : C."""
    command = burst_config("--mpi", mpi, "--mpiexec")
    if recovery:
        command.append("--enable-recovery")
    for k, part in enumerate(parts):
        command += ([":"] if k else []) + part
    return command


def run(command: list[str], env=None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **MPI_ENV, **(env or {})}
    return subprocess.run(
        command, capture_output=True, text=True, env=full_env, timeout=timeout, check=False
    )


def check_c_output(root: Path, steps: int, ranks: int) -> None:
    """Every dtype assembled bit-exact (netCDF4), the physics file (h5py), per-rank files."""
    for step in range(steps):
        with netCDF4.Dataset(hds_path(root, step=step, file="dynamics", ext="nc")) as ds:
            ds.set_auto_maskandscale(False)
            for code in DTYPES:
                got = ds[f"v_{code}"][...]
                want = expected_array(f"v_{code}", step, SHAPE, np.dtype(code))
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got, want)
            assert ds["v_f4"].getncattr("units") == "K"
        path = hds_path(root, step=step, file="physics", ext="nc")
        with h5py.File(path, "r") as f:
            np.testing.assert_array_equal(f["p"][...], expected_array("p", step, (11, 4), "f4"))
        for rank in range(ranks):
            path = hds_path(root, step=step, file="diag", rank=rank, ext="nc")
            with netCDF4.Dataset(path) as ds:
                assert int(ds["rank_step"][...]) == rank * 100 + step
                local = np.arange((rank + 1) * 3).reshape(rank + 1, 3) + rank * 1000
                want = (local % 251 + zlib_seed("local") + 7 * step).astype("f8")
                np.testing.assert_array_equal(ds["local"][...], want)


def zlib_seed(name: str) -> int:
    import zlib

    return zlib.crc32(name.encode()) % 1000


@pytest.mark.parametrize(
    ("io_ranks", "memory", "overflow", "transport"),
    [
        (2, "64MiB", "block", "auto"),
        (2, "64MiB", "block", "message"),
        (1, "4KiB", "block", "auto"),
        (1, "4KiB", "spill", "auto"),
        (1, "4KiB", "sync", "auto"),
    ],
)
@pytest.mark.parametrize("lend", [False, True], ids=["nlb_write", "nlb_buffer"])
def test_c_model_writes_every_dtype_bit_exact(
    tmp_path, c_model, io_ranks, memory, overflow, transport, lend
):
    """Every dtype, through nlb_write (a copy) and nlb_buffer/nlb_commit (zero-copy; with a
    4 KiB queue most blocks find it full and are lent ordinary memory instead)."""
    env = {"NEARLINE_BURST_TRANSPORT": transport} | ({"MODEL_USES_BUFFER": "1"} if lend else {})
    result = run(
        launch(
            ["-n", "3", str(c_model), "3"],
            servers(tmp_path, io_ranks, "--memory", memory, "--overflow", overflow),
        ),
        env=env,
    )
    assert result.returncode == 0, result.stderr
    check_c_output(tmp_path, steps=3, ranks=3)
    assert not [p for p in tmp_path.rglob("*") if ".partial" in p.name or ".spill" in p.parts]


def test_python_and_c_models_share_the_servers(tmp_path, c_model):
    """Two C ranks and one Python rank, one set of servers: the C ranks' assembled files,
    and the Python rank's own files, in one job."""
    settings = {
        "root": str(tmp_path), "file": "ocean", "variables": ["t"], "shape": [4, 3],
        "steps": 3, "io_ranks": 2, "assembled": False, "dtype": "float64",
    }  # fmt: skip
    result = run(
        launch(
            ["-n", "2", str(c_model), "3", "-1", "none", "2"],
            ["-n", "1", sys.executable, str(PROGRAMS / "model.py"), json.dumps(settings)],
            servers(tmp_path, 2, "--memory", "16MiB"),
        )
    )
    assert result.returncode == 0, result.stderr
    for step in range(3):
        with netCDF4.Dataset(hds_path(tmp_path, step=step, file="dynamics", ext="nc")) as ds:
            ds.set_auto_maskandscale(False)
            want = expected_array("v_i2", step, SHAPE, "i2")  # from the two C ranks
            np.testing.assert_array_equal(ds["v_i2"][...], want)
        path = hds_path(tmp_path, step=step, file="ocean", rank=2, ext="nc")
        with netCDF4.Dataset(path) as ds:
            begin = sum(block_rows(4, 3, uneven=True)[:2])  # rank 2's rows of model.py's split
            want = expected_array("t", step, (4, 3), "f8")[begin:]
            np.testing.assert_array_equal(ds["t"][...], want)
            assert ds["t"].getncattr("units") == "K"
        with netCDF4.Dataset(hds_path(tmp_path, step=step, file="diag", rank=2, ext="nc")) as ds:
            assert int(ds["rank_step"][...]) == 200 + step


def command_lines() -> dict[int, list[bytes]]:
    """Every process's command line, by pid."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                found[int(entry.name)] = (entry / "cmdline").read_bytes().split(b"\0")
    return found


def server_pids(root: Path) -> list[int]:
    """The I/O servers of the job writing to ``root``, found by their command lines."""
    return [
        pid
        for pid, line in command_lines().items()
        if line[1:3] == [b"-m", b"nearline.burst.server"] and str(root).encode() in line
    ]


def processes_mentioning(text: str) -> list[int]:
    """Processes with ``text`` in an argument (a test's tmp_path: its job's ranks)."""
    return [
        pid
        for pid, line in command_lines().items()
        if pid != os.getpid() and any(text.encode() in arg for arg in line)
    ]


def killed_server_reports(tmp_path: Path, model: Path, *, mpi: str) -> tuple[list[str], int]:
    """Run ``model`` for 60 slow steps beside one server, kill the server at step 1, and
    return the model's error lines and the killed pid.

    The bound is on the model's report, not on the job's end: after the report the model
    calls MPI_Abort, and how long the launcher then takes to tear a job down under
    --enable-recovery is Open MPI's business (the job is killed once the reports are in).
    """
    marker = tmp_path / "reached"
    root = tmp_path / "out"
    command = launch(
        ["-n", "2", str(model), "60", "1", str(marker)],
        servers(root, 1, "--memory", "16MiB"),
        recovery=True,
        mpi=mpi,
    )
    job = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **MPI_ENV}, start_new_session=True,
    )  # fmt: skip
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(job.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the model never reached the step where a server is killed"
        (pid,) = server_pids(root)
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        while not any("code 3:" in line for line in lines) and job.poll() is None:
            assert time.monotonic() - killed < 30, f"no report of the dead server: {lines}"
            time.sleep(0.05)
        with contextlib.suppress(subprocess.TimeoutExpired):
            job.wait(timeout=2)  # time for the other rank's report too
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)  # the launcher, and the ranks in its group
        job.wait()
        for leftover in processes_mentioning(str(tmp_path)):  # ranks in groups of their own
            with contextlib.suppress(ProcessLookupError):
                os.kill(leftover, signal.SIGKILL)
        reader.join(timeout=10)
        job.stderr.close()
    assert not (root / "000059").exists()
    reports = [line.strip() for line in lines if "code 3:" in line]
    assert reports, "".join(lines)
    return reports, pid


def test_killed_io_rank_reaches_the_c_model_as_an_error(tmp_path, c_model):
    """With --enable-recovery the C ranks live on, and each call that waits on the dead
    server returns NLB_EDEAD (3) with the Python client's words, within seconds."""
    reports, pid = killed_server_reports(tmp_path, c_model, mpi="wheel")
    assert all(f"(pid {pid} on" in line and "died" in line for line in reports), reports
    assert all("'dynamics'" in line for line in reports), reports


def check_fortran_output(root: Path, steps: int, ranks: int) -> None:
    """t(nx, ny, nz) of every kind reads back (nz, ny, nx), bit-exact; ranks 0 to 4."""
    for step in range(steps):
        for file, codes in (("dynamics", ["f8", "f4", "i1", "i2"]), ("physics", ["i4", "i8"])):
            with netCDF4.Dataset(hds_path(root, step=step, file=file, ext="nc")) as ds:
                ds.set_auto_maskandscale(False)
                for code in codes:
                    want = expected_array(f"v_{code}", step, SHAPE, np.dtype(code))
                    assert ds[f"v_{code}"].dtype == want.dtype
                    np.testing.assert_array_equal(ds[f"v_{code}"][...], want)
                if file == "dynamics":
                    assert ds["v_f8"].getncattr("units") == "K"
        for rank in range(ranks):
            path = hds_path(root, step=step, file="diag", rank=rank, ext="nc")
            with netCDF4.Dataset(path) as ds:
                assert int(ds["rank_step"][...]) == rank * 100 + step  # rank 0
                local = np.arange((rank + 1) * 3).reshape(rank + 1, 3) + rank * 1000
                want = (local % 251 + zlib_seed("local") + 7 * step).astype("f4")
                np.testing.assert_array_equal(ds["local"][...], want)  # rank 2, reversed
                q4 = ds["q4"][...]  # rank 4: q4(2, 3, 2, rank + 1)
                assert q4.shape == (rank + 1, 2, 3, 2)
                assert (q4 == rank * 10 + step).all()


@pytest.mark.parametrize(
    ("io_ranks", "memory", "overflow", "lend"),
    [
        (2, "64MiB", "block", False),
        (1, "4KiB", "spill", False),
        (2, "64MiB", "block", True),
        (1, "4KiB", "block", True),
        (1, "4KiB", "spill", True),
        (1, "4KiB", "sync", True),
    ],
)
def test_fortran_model_writes_every_kind_bit_exact(
    tmp_path, fortran_model, io_ranks, memory, overflow, lend
):
    """Every kind through nlb_write; v_f8 through nlb_buffer/nlb_commit when ``lend``."""
    result = run(
        launch(
            ["-n", "3", str(fortran_model), "3"],
            servers(tmp_path, io_ranks, "--memory", memory, "--overflow", overflow),
            mpi="system",
        ),
        env={"MODEL_USES_BUFFER": "1"} if lend else None,
    )
    assert result.returncode == 0, result.stderr
    check_fortran_output(tmp_path, steps=3, ranks=3)


def test_killed_io_rank_reaches_the_fortran_model_as_an_error(tmp_path, fortran_model):
    """Debian's mpirun keeps the Fortran ranks alive with --enable-recovery; each gets ierr 3
    and the Python client's words. (That mpirun then exits 0 after the model's MPI_Abort, so
    the test reads the model's own report.)"""
    reports, pid = killed_server_reports(tmp_path, fortran_model, mpi="system")
    assert all(f"(pid {pid} on" in line and "died" in line for line in reports), reports
    assert all("'dynamics'" in line for line in reports), reports
