"""A model-like MPI program for the burst tests; its settings come as one JSON argument.

Every value written is a function of (variable, step, global index), so the test can
recompute what each file must hold (see tests/burst/expected.py).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from expected import block_rows, expected_array

from nearline import burst

config = json.loads(sys.argv[1])
# only where this model kills a server: beside C ranks or MPMD servers nobody else would call it
pids = MPI.COMM_WORLD.allgather(os.getpid()) if "kill_io_at" in config else []


def failing_sink(path, variables):
    """Fails for the 'dynamics' files only, as a full disk would for the biggest file."""
    if path.name.startswith(".dynamics"):
        raise OSError(28, "No space left on device (injected)")
    with open(path, "wb") as target:
        np.savez(target, **variables)


def main(io, comm):
    shape = tuple(config["shape"])
    dtype = np.dtype(config.get("dtype", "float32"))
    rows = block_rows(shape[0], comm.size, uneven=True)
    begin = sum(rows[: comm.rank])
    buffer = np.empty((rows[comm.rank], *shape[1:]), dtype=dtype)
    for step in range(config["steps"]):
        if config.get("kill_io_at") == step:
            comm.Barrier()  # every compute rank has written a step, so each has files at risk
            if comm.rank == 0:
                os.kill(pids[-1], 9)
        for name in config["variables"]:
            full = expected_array(name, step, shape, dtype)
            if config.get("buffer"):  # zero-copy: compute into the server's queue memory
                assert config.get("assembled", True)
                start = (begin,) + (0,) * (len(shape) - 1)
                with io.buffer(
                    config["file"], name, buffer.shape, dtype, step=step, start=start,
                    global_shape=shape,
                ) as lent:  # fmt: skip
                    lent[...] = full[begin : begin + rows[comm.rank]]
                continue
            buffer[...] = full[begin : begin + rows[comm.rank]]
            if config.get("assembled", True):
                start = (begin,) + (0,) * (len(shape) - 1)
                io.write(config["file"], name, buffer, step=step, start=start, shape=shape)
            else:
                io.write(config["file"], name, buffer, step=step, attrs={"units": "K"})
            buffer[...] = -1  # the model reuses its buffer at once
        io.write("diag", "rank_step", np.int64(comm.rank * 100 + step), step=step)
        io.flush()
    io.wait()
    stats = io.stats()
    if comm.rank == 0:
        print("STATS " + json.dumps(stats.__dict__), flush=True)


burst.run(
    main,
    io_ranks=config["io_ranks"],
    memory=config.get("memory", "64MiB"),
    overflow=config.get("overflow", "block"),
    sink=failing_sink if config.get("sink") == "failing" else config.get("sink", "netcdf"),
    root=config["root"],
)
