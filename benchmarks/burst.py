"""AsyncIO's output pattern (Zhou et al., section 3.1): how long does a model pause for output?

Ten float32 arrays of 1440 x 720 x 70 (about 290 MB each, 2.9 GB in all) are written once per
repeat by: netCDF4, h5py and ADIOS2 BP5 directly (each "default" and "tuned"), and through
nearline burst to 1 or 2 I/O ranks. The limits are measured in the same run: a numpy copy into
pre-touched memory, MPI Send/Recv between two ranks, and os.write + fsync to the same disk.

Every method runs in its own process (its own mpiexec for MPI methods), so peak RSS is per
method and one method's memory or page cache does not distort another's. Source arrays are
pre-touched, one untimed warm-up precedes the timed repeats, and medians are reported.

    PYTHONPATH=src .venv/bin/python benchmarks/burst.py [--scale 0.1] [--repeats 3]
        [--out bench-output] [--update-docs] [--skip-burst]

``main(argv)`` is what ``nearline bench burst`` calls.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from _common import (
    GB,
    MB,
    MPI_ENV,
    Result,
    Sample,
    command_line,
    current_rss,
    end_session,
    filesystem,
    fmt,
    machine_summary,
    markdown_table,
    memory_status,
    now_stamp,
    peak_rss,
    pretouched,
    remove_path,
    replace_section,
    time_write,
    timed_repeats,
)

PROJECT = Path(__file__).resolve().parents[1]
SCRIPT = Path(__file__).resolve()
DOCS = PROJECT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- burst:begin -->", "<!-- burst:end -->"
DOCS_HEADER = (
    "# Benchmarks\n\n"
    "Measured with `make bench`; each section is rewritten by its script's `--update-docs`\n"
    "between its markers. Edit the text outside the markers only.\n"
)

FULL_SHAPE = (1440, 720, 70)  # AsyncIO section 3.1: 10 single-precision arrays, ~290 MB each
COUNT = 10
DIMS = ("x", "y", "z")
BURST_FILE = "bench"


# -- the data --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ArraySet:
    """The burst: ``count`` float32 arrays of ``shape``, named var0, var1, ..."""

    shape: tuple[int, int, int]
    count: int = COUNT
    dtype: str = "float32"

    @classmethod
    def scaled(cls, scale: float) -> ArraySet:
        """The full burst with its last axis (70) multiplied by ``scale``."""
        levels = max(1, round(FULL_SHAPE[2] * scale))
        return cls((FULL_SHAPE[0], FULL_SHAPE[1], levels))

    @property
    def names(self) -> list[str]:
        return [f"var{i}" for i in range(self.count)]

    @property
    def array_bytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize

    @property
    def nbytes(self) -> int:
        return self.array_bytes * self.count

    def build(self, names: list[str] | None = None) -> dict[str, np.ndarray]:
        """The named arrays (all by default), every page already touched."""
        names = self.names if names is None else names
        return dict(zip(names, pretouched(self.shape, len(names), self.dtype), strict=True))


# -- direct writers: write(path, arrays, tuned) then close; fsync is timed by the caller -----
def write_netcdf(path: Path, arrays: dict[str, np.ndarray], tuned: bool) -> None:
    """netCDF4-python; tuned: contiguous storage, no fill pass, no auto mask/scale."""
    import netCDF4

    with netCDF4.Dataset(path, "w", format="NETCDF4") as dataset:
        for dim, size in zip(DIMS, next(iter(arrays.values())).shape, strict=True):
            dataset.createDimension(dim, size)
        for name, array in arrays.items():
            if tuned:
                variable = dataset.createVariable(
                    name, array.dtype, DIMS, contiguous=True, fill_value=False
                )
                variable.set_auto_maskandscale(False)
            else:
                variable = dataset.createVariable(name, array.dtype, DIMS)
            variable[:] = array


def write_h5py(path: Path, arrays: dict[str, np.ndarray], tuned: bool) -> None:
    """h5py; tuned: latest file format, contiguous, never fill, write_direct from the array."""
    import h5py

    with h5py.File(path, "w", libver="latest" if tuned else None) as file:
        for name, array in arrays.items():
            if tuned:
                dataset = file.create_dataset(
                    name, shape=array.shape, dtype=array.dtype, chunks=None, fill_time="never"
                )
                dataset.write_direct(array)
            else:
                file.create_dataset(name, data=array)


# What ADIOS2's BP5 documentation advises for large writes from one process: deferred Puts
# (written from the user's buffer, no copy), no min/max statistics, and the largest buffer
# chunks; one writer needs no shared-memory aggregation.
ADIOS2_TUNED = {
    "StatsLevel": "0",
    "AggregationType": "EveryoneWritesSerial",
    "BufferChunkSize": "2000MB",
    "MinDeferredSize": "4MB",
}


def write_adios2(path: Path, arrays: dict[str, np.ndarray], tuned: bool) -> None:
    """ADIOS2 BP5; default: the high-level Stream (synchronous Puts); tuned: see ADIOS2_TUNED."""
    import adios2

    if not tuned:
        with adios2.Stream(str(path), "w") as stream:
            for _ in stream.steps(1):
                for name, array in arrays.items():
                    stream.write(name, array)
        return
    adios = adios2.Adios()
    io = adios.declare_io("burst")
    io.set_engine("BP5")
    io.set_parameters(ADIOS2_TUNED)
    engine = io.open(str(path), adios2.bindings.Mode.Write)
    engine.begin_step()
    for name, array in arrays.items():
        shape = list(array.shape)
        variable = io.define_variable(name, array, shape, [0] * array.ndim, shape, True)
        engine.put(variable, array, adios2.bindings.Mode.Deferred)
    engine.end_step()
    engine.close()


def write_raw(path: Path, arrays: dict[str, np.ndarray], tuned: bool = True) -> None:
    """The disk limit: os.write of each array's bytes, nothing else."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for array in arrays.values():
            view = memoryview(array.reshape(-1).view(np.uint8))
            while view:
                view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


# -- the methods -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Method:
    """One row of the report and how its worker process is started."""

    name: str
    label: str
    kind: str  # "limit", "direct" or "burst"
    worker: str  # the --worker value
    writer: Callable[[Path, dict[str, np.ndarray], bool], None] | None = None
    tuned: bool = False
    suffix: str = ""
    ranks: int = 0  # MPI ranks; 0 runs a plain process
    io_ranks: int = 0
    env: tuple[tuple[str, str], ...] = ()  # NEARLINE_* settings for this row
    scale: float = 1.0  # this row's burst is --scale times this (0.01: the 29 MB burst)


def _direct(name: str, label: str, writer, suffix: str, tuned: bool) -> Method:
    return Method(name, label, "direct", name, writer, tuned, suffix)


LIMITS = [
    Method("numpy-copy", "numpy copy into pre-touched memory (np.copyto)", "limit", "numpy-copy"),
    Method(
        "numpy-copy-threads",
        f"the same copy split over {os.cpu_count()} threads",
        "limit",
        "numpy-copy-threads",
    ),
    Method("mpi-limit", "MPI Send/Recv, 2 ranks", "limit", "mpi-limit", ranks=2),
    Method("disk-raw", "disk: os.write + fsync", "limit", "disk-raw", write_raw, True, ".bin"),
]
DIRECT = [
    _direct(f"{lib}-{variant}", f"{label} {variant}", writer, suffix, variant == "tuned")
    for lib, label, writer, suffix in (
        ("netcdf4", "netCDF4", write_netcdf, ".nc"),
        ("h5py", "h5py", write_h5py, ".h5"),
        ("adios2", "ADIOS2 BP5", write_adios2, ".bp"),
    )
    for variant in ("default", "tuned")
]


BURST_VARIANTS = {
    "": ("", ()),
    "message": (", blocks sent as MPI messages", (("NEARLINE_BURST_TRANSPORT", "message"),)),
    "write-behind": (", write-behind", (("NEARLINE_BURST_WRITE_BEHIND", "1"),)),
    "buffer": (", zero-copy `io.buffer`", (("BENCH_BURST_BUFFER", "1"),)),
}
SMALL = 0.01  # the burst x0.01 the zero-copy pause is compared with (flat in size): one level
# of 70, so 41 MB rather than 29


def native_method(mode: str, scale: float = 1.0) -> Method:
    """The C model (benchmarks/burst_native.c), 1 compute + 1 I/O rank (Python, MPMD)."""
    call = "nlb_write" if mode == "write" else "zero-copy nlb_buffer/nlb_commit"
    small = "" if scale == 1.0 else "-small"
    return Method(
        f"burst-c-1-{mode}{small}",
        f"nearline burst from C ({call}), 1 compute + 1 I/O rank"
        + ("" if scale == 1.0 else f", the burst x{scale:g}"),
        "burst",
        "burst-native",
        ranks=2,
        io_ranks=1,
        env=(("BENCH_NATIVE_MODE", mode),),
        scale=scale,
    )


def small(method: Method) -> Method:
    """``method`` on the burst x SMALL, for the flat-in-size comparison."""
    return Method(
        f"{method.name}-small", f"{method.label}, the burst x{SMALL:g}", method.kind,
        method.worker, ranks=method.ranks, io_ranks=method.io_ranks, env=method.env, scale=SMALL,
    )  # fmt: skip


def burst_method(io_ranks: int, variant: str = "") -> Method:
    """nearline burst with ``io_ranks`` I/O ranks and as many compute ranks."""
    plural = "s" if io_ranks > 1 else ""
    suffix, env = BURST_VARIANTS[variant]
    return Method(
        f"burst-{io_ranks}" + (f"-{variant}" if variant else ""),
        f"nearline burst, {io_ranks} compute + {io_ranks} I/O rank{plural}{suffix}",
        "burst",
        "burst",
        ranks=2 * io_ranks,
        io_ranks=io_ranks,
        env=env,
    )


# ==== nearline burst: the method under test ==================================================
# Written against the nearline.burst API of docs/burst.md; the lead validates it against the
# implementation. Assumed interface:
#   nearline.burst.run(main, *, io_ranks: int, memory: str, sink: str, root) runs
#       main(io, comm) on the first (size - io_ranks) ranks of COMM_WORLD and serves I/O on
#       the last io_ranks; returns main's value on compute ranks, None on I/O ranks, and
#       returns on every rank once all data is durable (COMM_WORLD is usable afterwards).
#   io.write(file, name, array, *, step, dims=None) copies the array into queue memory and
#       returns when the caller may reuse it; without start/shape the variable goes to this
#       rank's own file <root>/<step>/<file>/<file>.<step>.<rank>.nc, served by I/O rank
#       (compute rank mod io_ranks).
#   io.flush(file) returns at once (collective over compute ranks); io.wait(file) blocks
#       until every flush so far is fsync'd and renamed into place.
#   io.stats() -> BurstStats dataclass (bytes_queued, bytes_spilled, bytes_written,
#       files_written, seconds_blocked, seconds_in_write, writes).
#   nearline.layout._paths.hds_path(root, step=, file=, rank=, ext=) -> that file's path.
def run_burst(
    arrays: ArraySet, out_dir: Path, io_ranks: int, *, repeats: int = 3, memory: str = "4GiB"
) -> Result | None:
    """Time ``arrays`` through nearline burst; call on every rank of ``mpiexec -n 2*io_ranks``.

    Compute rank r (of io_ranks compute ranks) writes variables r, r+k, ... into its own file,
    so each I/O rank serves one compute rank. Step 0 is the warm-up; steps 1..repeats are
    timed. Returns the Result on COMM_WORLD rank 0 (compute rank 0), None on other ranks.
    """
    from mpi4py import MPI

    from nearline import burst as nearline_burst
    from nearline.layout._paths import hds_path

    def step_files(step: int, ranks: int) -> list[Path]:
        return [
            hds_path(out_dir, step=step, file=BURST_FILE, rank=rank, ext="nc")
            for rank in range(ranks)
        ]

    lend = os.environ.get("BENCH_BURST_BUFFER") == "1"

    def main(io, comm) -> dict:
        names = arrays.names[comm.rank :: comm.size]
        data = arrays.build(names)
        base = current_rss()
        samples = []
        for step in range(repeats + 1):
            comm.Barrier()
            began = time.perf_counter()
            computing = 0.0  # filling lent blocks: the model's compute, not a pause
            for name, array in data.items():
                if lend:
                    with io.buffer(BURST_FILE, name, array.shape, array.dtype, step=step,
                                   dims=DIMS) as into:  # fmt: skip
                        filling = time.perf_counter()
                        np.copyto(into, array)
                        computing += time.perf_counter() - filling
                else:
                    io.write(BURST_FILE, name, array, step=step, dims=DIMS)
            io.flush(BURST_FILE)
            paused = time.perf_counter() - began - computing
            io.wait(BURST_FILE)
            durable = time.perf_counter() - began - computing
            sample = Sample(comm.allreduce(paused, op=MPI.MAX), comm.allreduce(durable, op=MPI.MAX))
            comm.Barrier()
            if comm.rank == 0:  # check the data is there, then clear the step's folder
                files = step_files(step, comm.size)
                written = sum(f.stat().st_size for f in files if f.exists())
                if written < arrays.nbytes:
                    raise RuntimeError(
                        f"after io.wait, step {step} has {written} bytes in {files}, "
                        f"expected at least {arrays.nbytes}"
                    )
                remove_path(files[0].parents[1])
            if step > 0:
                samples.append(sample)
        shared = memory_status().get("RssShmem", 0)  # the I/O ranks' queue pages it mapped
        return {
            "samples": samples,
            "base_rss": comm.allreduce(base, op=MPI.MAX),
            "shared_rss": comm.allreduce(shared, op=MPI.MAX),
            "stats": asdict(io.stats()),
        }

    outcome = nearline_burst.run(
        main, io_ranks=io_ranks, memory=memory, sink="netcdf", root=out_dir
    )
    world = MPI.COMM_WORLD
    compute = world.size - io_ranks
    rss = world.gather(peak_rss(), root=0)
    if world.rank != 0:
        return None
    return Result(
        name=f"burst-{io_ranks}",
        nbytes=arrays.nbytes,
        samples=outcome["samples"],
        peak_rss=max(rss[:compute]),
        base_rss=outcome["base_rss"],
        extra={
            "stats": outcome["stats"],
            "io_rank_peak_rss": max(rss[compute:]),
            "compute_shared_rss": outcome["shared_rss"],
            "compute_ranks": compute,
            "io_ranks": io_ranks,
            "memory": memory,
        },
    )


# ==== end of the nearline burst method =======================================================


# -- workers (each runs in its own process) --------------------------------------------------
def work_direct(method: Method, arrays: ArraySet, out_dir: Path, repeats: int) -> Result:
    """A library (or os.write) writing the whole burst into one file, then fsync."""
    data = arrays.build()
    base = current_rss()
    target = out_dir / f"burst{method.suffix}"

    def write(path: Path) -> None:
        method.writer(path, data, method.tuned)

    samples = timed_repeats(lambda: time_write(write, target), repeats)
    return Result(method.name, arrays.nbytes, samples, peak_rss(), base)


def work_numpy_copy(arrays: ArraySet, repeats: int, threads: int = 1) -> Result:
    """np.copyto of every array into a pre-touched destination, each split over ``threads``."""
    from concurrent.futures import ThreadPoolExecutor

    source, target = arrays.build(), arrays.build()
    pairs = [
        pair
        for name, array in source.items()
        for pair in zip(
            np.array_split(target[name].reshape(-1), threads),
            np.array_split(array.reshape(-1), threads),
            strict=True,
        )
    ]
    base = current_rss()
    with ThreadPoolExecutor(threads) as pool:  # numpy releases the GIL while it copies

        def once() -> Sample:
            began = time.perf_counter()
            if threads == 1:
                for dst, src in pairs:
                    np.copyto(dst, src)
            else:
                list(pool.map(lambda pair: np.copyto(*pair), pairs))
            return Sample(time.perf_counter() - began)

        samples = timed_repeats(once, repeats)
    name = "numpy-copy" if threads == 1 else "numpy-copy-threads"
    return Result(name, arrays.nbytes, samples, peak_rss(), base, extra={"threads": threads})


def work_mpi_limit(arrays: ArraySet, repeats: int) -> Result | None:
    """Rank 0 sends every array to rank 1, which receives into pre-touched arrays."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.size != 2:
        raise RuntimeError(f"the MPI limit needs 2 ranks, got {comm.size}")
    data = list(arrays.build().values())  # rank 0: sources; rank 1: receive buffers
    ack = np.zeros(1, dtype=np.uint8)
    base = current_rss()

    def once() -> Sample:
        comm.Barrier()
        began = time.perf_counter()
        if comm.rank == 0:
            for array in data:
                comm.Send(array, dest=1, tag=1)
            comm.Recv(ack, source=1, tag=2)
        else:
            for array in data:
                comm.Recv(array, source=0, tag=1)
            comm.Send(ack, dest=0, tag=2)
        return Sample(time.perf_counter() - began)

    samples = timed_repeats(once, repeats)
    rss = comm.gather(peak_rss(), root=0)
    if comm.rank != 0:
        return None
    extra = {"mpi": MPI.Get_library_version().split(",")[0].strip()}
    return Result("mpi-limit", arrays.nbytes, samples, max(rss), base, extra=extra)


def run_worker(args: argparse.Namespace) -> int:
    """Run one method in this process and write its Result as JSON to ``--result``."""
    arrays = ArraySet.scaled(args.scale)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    by_worker = {m.worker: m for m in LIMITS + DIRECT}
    try:
        if args.worker == "burst":
            result = run_burst(
                arrays, out_dir, args.io_ranks, repeats=args.repeats, memory=args.burst_memory
            )
        elif args.worker == "numpy-copy":
            result = work_numpy_copy(arrays, args.repeats)
        elif args.worker == "numpy-copy-threads":
            result = work_numpy_copy(arrays, args.repeats, threads=os.cpu_count() or 1)
        elif args.worker == "mpi-limit":
            result = work_mpi_limit(arrays, args.repeats)
        else:
            result = work_direct(by_worker[args.worker], arrays, out_dir, args.repeats)
    except Exception as error:  # reported in the table, not dropped
        failed = Result(args.worker, arrays.nbytes, error=f"{type(error).__name__}: {error}")
        if args.result and os.environ.get("OMPI_COMM_WORLD_RANK", "0") == "0":
            failed.dump(Path(args.result))
        if "mpi4py.MPI" in sys.modules:  # the other ranks would wait forever
            import traceback

            traceback.print_exc()
            sys.modules["mpi4py.MPI"].COMM_WORLD.Abort(1)
        raise
    if result is not None and args.result:
        result.dump(Path(args.result))
    return 0


# -- the parent: one process per method --------------------------------------------------------
def _failure(process: subprocess.CompletedProcess[str] | None, timeout: float) -> str:
    if process is None:
        return f"timed out after {timeout:g} s"
    if process.returncode < 0:
        name = signal.Signals(-process.returncode).name
        hint = " (out of memory?)" if name == "SIGKILL" else ""
        return f"killed by {name}{hint}"
    lines = [line.strip() for line in process.stderr.splitlines() if line.strip()]
    useful = (
        [line for line in lines if line.startswith("nearline burst:")]  # burst.run's one line
        or [line for line in lines if "Error" in line or "error" in line]
        or lines
    )
    return useful[-1][:300] if useful else f"exit status {process.returncode}, no output"


def launch(method: Method, args: argparse.Namespace, scratch: Path) -> Result:
    """Run ``method``'s worker in a fresh process (under mpiexec if MPI) and read its Result."""
    result_path = scratch / f"{method.name}.json"
    out_dir = Path(args.out) / method.name
    scale = args.scale * method.scale
    if method.worker == "burst-native":
        return _launch_native(method, args, scale, result_path, out_dir, scratch)
    command = [
        sys.executable,
        str(SCRIPT),
        "--worker",
        method.worker,
        "--result",
        str(result_path),
        f"--scale={scale}",
        f"--repeats={args.repeats}",
        f"--out={out_dir}",
        f"--io-ranks={method.io_ranks}",
        f"--burst-memory={args.burst_memory}",
    ]
    if method.ranks:
        mpiexec = Path(sys.executable).parent / "mpiexec"
        # --bind-to none: Open MPI binds 2-rank jobs to one core each, which would keep a
        # compute rank's copy threads (and the direct methods' peers) off the other core.
        command = [str(mpiexec), "-n", str(method.ranks), "--bind-to", "none", *command]
    return _run_method(command, method, args, result_path, out_dir)


def _launch_native(
    method: Method, args: argparse.Namespace, scale: float, result_path: Path, out_dir: Path,
    scratch: Path,
) -> Result:  # fmt: skip
    """The C model beside a Python I/O server, one MPMD job: `nearline burst-config`'s
    launcher, the same burst, the same queue memory."""
    program = scratch / "burst_native"
    if not program.exists():
        config = [sys.executable, "-m", "nearline", "burst-config"]
        cc = subprocess.run([*config, "--cc"], capture_output=True, text=True, check=True)
        flags = subprocess.run(
            [*config, "--cflags", "--libs"], capture_output=True, text=True, check=True
        )
        subprocess.run(
            [cc.stdout.strip(), "-O2", str(SCRIPT.parent / "burst_native.c"),
             *flags.stdout.split(), "-o", str(program)],
            check=True,
        )  # fmt: skip
    arrays = ArraySet.scaled(scale)
    mpiexec = Path(sys.executable).parent / "mpiexec"
    compute = method.ranks - method.io_ranks
    command = [
        str(mpiexec), "--bind-to", "none",
        "-n", str(compute), str(program), str(result_path), dict(method.env)["BENCH_NATIVE_MODE"],
        *map(str, arrays.shape), str(arrays.count), str(args.repeats), str(out_dir), ":",
        "-n", str(method.io_ranks), sys.executable, "-m", "nearline.burst.server",
        "--root", str(out_dir), "--memory", args.burst_memory,
    ]  # fmt: skip
    return _run_method(command, method, args, result_path, out_dir)


def _run_method(
    command: list[str], method: Method, args: argparse.Namespace, result_path: Path,
    out_dir: Path,
) -> Result:  # fmt: skip
    """Run one method's command in a session of its own and read the Result it wrote."""
    path = os.pathsep.join(p for p in (str(PROJECT / "src"), os.environ.get("PYTHONPATH")) if p)
    env = {**MPI_ENV, **os.environ, "PYTHONPATH": path, **dict(method.env)}
    started = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    process: subprocess.CompletedProcess[str] | None
    try:
        stdout, stderr = started.communicate(timeout=args.timeout)
        process = subprocess.CompletedProcess(command, started.returncode, stdout, stderr)
    except subprocess.TimeoutExpired:
        end_session(started)  # the worker's own session: it and every rank mpiexec started
        process = None
    except BaseException:  # Ctrl-C: leave no ranks behind
        end_session(started)
        raise
    finally:
        remove_path(out_dir)
    result = Result.load(result_path) if result_path.exists() else None
    if result is None or (process is not None and process.returncode != 0 and result.ok):
        result = Result(method.name, error=_failure(process, args.timeout))
    elif process is None:
        result.error = _failure(None, args.timeout)
    return result


# -- the report --------------------------------------------------------------------------------
def _seconds(result: Result, attribute: str) -> str:
    value, spread = getattr(result, attribute), result.spread(attribute)
    if value is None or spread is None:
        return "—"
    digits = 2 if value >= 0.1 else 4  # a zero-copy pause is milliseconds: show them
    return f"{value:.{digits}f} [{spread[0]:.{digits}f}–{spread[1]:.{digits}f}]"


def _mb(value: int | None) -> str:
    return "—" if value is None else f"{value / MB:,.0f}"


def _ratio(a: float | None, b: float | None, percent: bool = False) -> str:
    if a is None or not b:
        return "—"
    return f"{100 * a / b:.0f}%" if percent else f"{a / b:.2f}"


def _unavailable(result: Result | None) -> str | None:
    if result is None:
        return "not run"
    if not result.ok:
        return f"failed: {result.error or 'no samples'}".replace("|", "/")
    return None


def limits_table(methods: list[Method], results: dict[str, Result | None]) -> str:
    headers = ["limit", "time (s), median [min–max]", "GB/s", "with fsync (s)", "peak RSS (MB)"]
    rows = []
    for method in methods:
        result = results.get(method.name)
        problem = _unavailable(result)
        if problem:
            rows.append([method.label, problem, "—", "—", "—"])
            continue
        bandwidth = result.bandwidth()
        durable = _seconds(result, "durable")
        if result.durable:
            durable += f" = {result.nbytes / result.durable / GB:.2f} GB/s"
        rows.append(
            [method.label, _seconds(result, "pause"), fmt(bandwidth and bandwidth / GB),
             durable, _mb(result.peak_rss)]
        )  # fmt: skip
    return markdown_table(headers, rows)


def methods_table(methods: list[Method], results: dict[str, Result | None], skipped: str) -> str:
    headers = [
        "method",
        "pause (s), median [min–max]",
        "until durable (s)",
        "GB/s (bytes ÷ pause)",
        "peak RSS (MB)",
        "pause ÷ best tuned direct (write + fsync)",
        "pause ÷ best tuned direct (write only)",
        "% of numpy copy",
        "% of MPI Send/Recv",
        "durable ÷ netCDF4 tuned",
    ]

    def ok(name: str) -> Result | None:
        result = results.get(name)
        return result if result is not None and result.ok else None

    tuned = [r for m in DIRECT if m.tuned and (r := ok(m.name))]
    best_durable = min((r.durable for r in tuned if r.durable), default=None)
    best_write = min((r.pause for r in tuned), default=None)
    numpy_bw = (r := ok("numpy-copy")) and r.bandwidth()
    mpi_bw = (r := ok("mpi-limit")) and r.bandwidth()
    baseline = (r := ok("netcdf4-tuned")) and r.durable
    rows = []
    for method in methods:
        result = results.get(method.name)
        problem = skipped if method.kind == "burst" and skipped else _unavailable(result)
        if problem:
            rows.append([method.label, problem, *["—"] * (len(headers) - 2)])
            continue
        bandwidth = result.bandwidth()
        rows.append(
            [
                method.label,
                _seconds(result, "pause"),
                _seconds(result, "durable"),
                fmt(bandwidth and bandwidth / GB),
                _mb(result.peak_rss),
                _ratio(result.pause, best_durable),
                _ratio(result.pause, best_write),
                _ratio(bandwidth, numpy_bw, percent=True),
                _ratio(bandwidth, mpi_bw, percent=True),
                _ratio(result.durable, baseline),
            ]
        )
    return markdown_table(headers, rows)


def _burst_notes(methods: list[Method], results: dict[str, Result | None]) -> list[str]:
    lines = []
    for method in methods:
        result = results.get(method.name)
        if method.kind != "burst" or result is None or not result.ok:
            continue
        stats, extra = result.extra.get("stats", {}), result.extra
        lines.append(
            f"- {method.label}: memory={extra.get('memory')} per I/O rank; compute rank peak RSS "
            f"{_mb(result.peak_rss)} MB, of which {_mb(extra.get('compute_shared_rss'))} MB "
            f"are the I/O ranks' shared queue pages it maps; I/O rank peak RSS "
            f"{_mb(extra.get('io_rank_peak_rss'))} MB; io.stats() after the run: "
            + ", ".join(
                f"{key}={value:.3f}" if isinstance(value, float) else f"{key}={value}"
                for key, value in stats.items()
            )
        )
    return lines


def _zero_copy_notes(results: dict[str, Result | None]) -> list[str]:
    """The issue's targets for the C client and the zero-copy hand-off, as ratios of medians."""

    def pause(name: str) -> float | None:
        result = results.get(name)
        return result.pause if result is not None and result.ok else None

    def ratio(a: str, b: str) -> str:
        top, bottom = pause(a), pause(b)
        return f"{top / bottom:.3g}" if top and bottom else "—"

    return [
        "- Targets (median pauses): C `nlb_write` ÷ Python `io.write` (1 + 1 ranks) = "
        f"{ratio('burst-c-1-write', 'burst-1')} (target ≤ 1.2); zero-copy ÷ copy: Python "
        f"`io.buffer` ÷ `io.write` = {ratio('burst-1-buffer', 'burst-1')}, C `nlb_buffer` ÷ "
        f"`nlb_write` = {ratio('burst-c-1-buffer', 'burst-c-1-write')} (target ≤ 0.01); flat in "
        f"size, the full burst ÷ the burst x{SMALL:g}: Python "
        f"{ratio('burst-1-buffer', 'burst-1-buffer-small')}, C "
        f"{ratio('burst-c-1-buffer', 'burst-c-1-buffer-small')} (target ≤ 2). The zero-copy "
        "pause leaves out the time the model spends filling the lent block (np.copyto / memcpy "
        "from the same pre-touched arrays, standing for its compute).",
    ]


def report(
    args: argparse.Namespace,
    methods: list[Method],
    results: dict[str, Result | None],
    command: str,
) -> str:
    """The markdown section: header, the limits, the methods, and what the numbers mean."""
    arrays = ArraySet.scaled(args.scale)
    fstype, _ = filesystem(Path(args.out))
    limits = [m for m in methods if m.kind == "limit"]
    others = [m for m in methods if m.kind != "limit"]
    skipped = "skipped (--skip-burst)" if args.skip_burst else ""
    shape = "×".join(map(str, arrays.shape))
    adios_tuned = ", ".join(f"{k}={v}" for k, v in ADIOS2_TUNED.items())
    warn = []
    if fstype in ("tmpfs", "ramfs", "devtmpfs"):
        warn = [f"- **Warning**: --out is on {fstype}, so 'durable' measures memory, not disk."]
    mpi = (results.get("mpi-limit") or Result("")).extra.get("mpi", "")
    mpi = f" ({mpi})" if mpi else ""
    notes = [
        f"- Data: {arrays.count} float32 arrays of {shape} ({arrays.array_bytes / MB:,.0f} MB "
        f"each, {arrays.nbytes / GB:.2f} GB in all; --scale {args.scale} of 1440×720×70). "
        f"GB = 10⁹ bytes, MB = 10⁶ bytes.",
        f"- Each method in its own process; source arrays pre-touched; one untimed warm-up "
        f"burst, then {args.repeats} timed repeats: median [min–max]. Output files are "
        "deleted after each repeat, outside the timed region.",
        "- Pause: direct methods from opening the file until close returns (data in the page "
        "cache); burst from the first `io.write` until `io.flush` returns. Until durable: "
        "direct methods add an fsync of every file written and of its folder; burst adds "
        "`io.wait` (the I/O ranks fsync and rename the files).",
        "- Peak RSS: ru_maxrss of the writing process, including the source arrays "
        f"({arrays.nbytes / MB:,.0f} MB, or the rank's share under burst); for burst the max over "
        "compute ranks, which counts the pages of the I/O ranks' shared queue memory that "
        "the compute rank mapped.",
        "- Ratios: burst's pause ÷ the best tuned netCDF4/h5py/ADIOS2 row, both as the issue "
        "defines the direct methods (the compute rank writes and fsyncs: its 'until durable') "
        "and, stricter, against the write alone without fsync; GB/s as % of the numpy copy "
        "and MPI Send/Recv limits; durable time ÷ tuned netCDF4's.",
        "- netCDF4 default: `createVariable(name, 'f4', dims)`, `var[:] = a`; tuned: "
        "`contiguous=True, fill_value=False`, `set_auto_maskandscale(False)`.",
        "- h5py default: `create_dataset(name, data=a)`; tuned: `libver='latest'`, contiguous, "
        "`fill_time='never'`, `write_direct(a)`.",
        "- ADIOS2 BP5 default: `adios2.Stream(path, 'w')`, one step, `stream.write` (a "
        f"synchronous Put that copies into ADIOS buffers, min/max computed); tuned: `Put(..., "
        f"Mode.Deferred)` (written from the user's buffer), parameters {adios_tuned}.",
        "- nearline burst with k I/O ranks: k compute ranks (`mpiexec -n 2k --bind-to none`), "
        "compute rank r holds and writes variables r, r+k, … into its own per-rank file "
        f"`{BURST_FILE}` (no start/shape); per-rank files are served by I/O rank r mod k, so "
        "each I/O rank serves one compute rank. One compute rank writing `bench_a`/`bench_b` "
        "would not spread: one rank's per-rank files all go to one I/O rank, and assembled "
        "files are placed by crc32(name) mod k, which is 1 for both names. Sink: netCDF "
        f"(contiguous, no fill); memory={args.burst_memory} per I/O rank; warm-up = one full "
        "burst at step 0.",
        "- Variants of the 1 + 1 row: 'blocks sent as MPI messages' "
        "(`NEARLINE_BURST_TRANSPORT=message`) takes the path burst uses for compute ranks on "
        "another node, compared with the MPI Send/Recv limit; 'write-behind' "
        "(`NEARLINE_BURST_WRITE_BEHIND=1`) lets the idle I/O rank write queued blocks into the "
        "temporary file before `flush`, so less is left to write when the model flushes.",
        "- Limits: np.copyto on one thread is the reference for '% of numpy copy' (burst's "
        "copier splits large blocks over the cores per compute rank, like the threaded row); "
        f"MPI: blocking Send/Recv of each array between 2 ranks{mpi}; "
        "disk: os.write of each array into one file, then fsync.",
        *_burst_notes(methods, results),
        *_zero_copy_notes(results),
        *warn,
    ]
    parts = [
        "## burst: AsyncIO's output pattern (the AsyncIO paper, section 3.1)",
        "",
        f"- Machine: {machine_summary(Path(args.out))}",
        f"- Date: {now_stamp()}",
        f"- Command: `{command}`",
        "",
        "Limits, measured in the same run:",
        "",
        limits_table(limits, results),
        "",
        "How long the writing process paused, and until the data was durable:",
        "",
        methods_table(others, results, skipped),
        "",
        *notes,
    ]
    return "\n".join(parts) + "\n"


# -- the command line --------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="burst.py", description=__doc__.split("\n\n")[0].replace("\n", " ")
    )
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of 1440x720x70")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats (default 3)")
    parser.add_argument("--out", default=str(PROJECT / "bench-output"), help="a disk folder")
    parser.add_argument("--update-docs", action="store_true", help=f"rewrite {DOCS.name}")
    parser.add_argument("--skip-burst", action="store_true", help="only the peers and limits")
    parser.add_argument(
        "--burst-io-ranks", default="1,2", help="I/O rank counts to run (default 1,2)"
    )
    parser.add_argument("--burst-memory", default="4GiB", help="queue memory per I/O rank")
    parser.add_argument(
        "--methods", default="", help="comma-separated method names to run (default: all)"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per method")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--io-ranks", type=int, default=1, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run every method, print the markdown report, optionally rewrite docs/benchmarks.md."""
    args = build_parser().parse_args(argv)
    if args.scale <= 0 or args.repeats < 1:
        print("burst.py: --scale must be > 0 and --repeats >= 1", file=sys.stderr)
        return 2
    if args.worker:
        return run_worker(args)
    command = command_line()
    io_ranks = [int(k) for k in args.burst_io_ranks.split(",") if k.strip()]
    variants = [burst_method(1, "message"), burst_method(1, "write-behind")]
    lend = burst_method(1, "buffer")
    native = [native_method("write"), native_method("buffer"), native_method("buffer", SMALL)]
    zero_copy = [lend, small(lend), *native]
    methods = LIMITS + DIRECT + [burst_method(k) for k in io_ranks] + variants + zero_copy
    wanted = {name.strip() for name in args.methods.split(",") if name.strip()}
    if wanted - {m.name for m in methods}:
        known = ", ".join(m.name for m in methods)
        print(f"burst.py: unknown --methods {sorted(wanted)}; known: {known}", file=sys.stderr)
        return 2
    results: dict[str, Result | None] = {}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nearline-bench-") as scratch:
        for method in methods:
            if (wanted and method.name not in wanted) or (
                method.kind == "burst" and args.skip_burst
            ):
                continue
            print(f"burst.py: running {method.name} ...", file=sys.stderr, flush=True)
            result = results[method.name] = launch(method, args, Path(scratch))
            summary = _unavailable(result) or (
                f"pause {fmt(result.pause)} s, durable {fmt(result.durable)} s"
            )
            print(f"burst.py:   {method.name}: {summary}", file=sys.stderr, flush=True)
    text = report(args, [m for m in methods if not wanted or m.name in wanted], results, command)
    print(text)
    if args.update_docs:
        replace_section(DOCS, BEGIN, END, text, DOCS_HEADER)
        print(f"burst.py: wrote {DOCS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
