"""The burst demo: a small model under MPI writes 3-D fields through burst, then directly.

Run it with ``nearline demo`` (which starts mpiexec), or by hand:
``mpiexec -n 5 python -m nearline.burst.demo OUT``. Compute rank 0 prints a JSON summary
line that the CLI turns into a table.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

GRID = (72, 361, 576)  # levels, latitudes, longitudes: GEOS-5 at 0.5 x 0.625 degrees
VARIABLES = ("u", "v", "t", "q")
STEPS = 4


def _compute(field: np.ndarray, step: int) -> None:
    """Stand-in for a model time step: some arithmetic over the local block."""
    field *= 0.999
    field += np.float32(step) * 1e-3


def _direct_write(root: Path, rank: int, step: int, fields: dict[str, np.ndarray]) -> None:
    """What the model did before burst: each rank writes its own netCDF file and fsyncs it."""
    import netCDF4

    path = root / f"direct.{step:06d}.{rank:05d}.nc"
    with netCDF4.Dataset(path, "w") as ds:
        for axis, size in enumerate(next(iter(fields.values())).shape):
            ds.createDimension(f"d{axis}", size)
        for name, data in fields.items():
            var = ds.createVariable(name, data.dtype, ("d0", "d1", "d2"), fill_value=False)
            var[...] = data
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def model(io, comm, root: Path) -> dict:
    """Run the demo model on this compute rank; return the timings (the same on every rank)."""
    from mpi4py import MPI

    levels, lats, lons = GRID
    rows = [lats // comm.size + (r < lats % comm.size) for r in range(comm.size)]
    begin = sum(rows[: comm.rank])
    rng = np.random.default_rng(comm.rank)
    fields = {
        name: rng.standard_normal((levels, rows[comm.rank], lons)).astype(np.float32)
        for name in VARIABLES
    }
    attrs = {"u": "m s-1", "v": "m s-1", "t": "K", "q": "kg kg-1"}
    burst_pause, direct_pause = [], []
    for step in range(STEPS):
        for field in fields.values():
            _compute(field, step)
        comm.Barrier()
        began = time.perf_counter()
        for name, field in fields.items():
            io.write(
                "dynamics",
                name,
                field,
                step=step,
                start=(0, begin, 0),
                shape=GRID,
                dims=("lev", "lat", "lon"),
                attrs={"units": attrs[name]},
            )
        io.flush("dynamics")
        burst_pause.append(comm.allreduce(time.perf_counter() - began, op=MPI.MAX))
    io.wait()
    direct_root = root / "direct"
    if comm.rank == 0:
        direct_root.mkdir(parents=True, exist_ok=True)
    comm.Barrier()
    for step in range(STEPS):
        comm.Barrier()
        began = time.perf_counter()
        _direct_write(direct_root, comm.rank, step, fields)
        direct_pause.append(comm.allreduce(time.perf_counter() - began, op=MPI.MAX))
    return {
        "ranks": comm.size,
        "grid": GRID,
        "variables": len(VARIABLES),
        "steps": STEPS,
        "bytes_per_step": int(np.prod(GRID)) * 4 * len(VARIABLES),
        "burst_pause": burst_pause,
        "direct_pause": direct_pause,
        "stats": io.stats().__dict__,
    }


def main(argv: list[str] | None = None) -> None:
    from nearline import burst

    root = Path((argv or sys.argv[1:])[0])

    def program(io, comm):
        summary = model(io, comm, root)
        if comm.rank == 0:
            print("NEARLINE-DEMO " + json.dumps(summary), flush=True)

    burst.run(program, io_ranks=1, memory="1GiB", sink="netcdf", root=root / "burst")


if __name__ == "__main__":
    main()
