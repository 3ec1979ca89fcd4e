"""An MPI model whose burst sink consumes the data in place (an in-situ analysis): the
callable writes no output file, only a note of what it was given to ``seen``, outside the
output tree, for the test to check. Settings come as one JSON argument."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from expected import block_rows, expected_array

from nearline import burst

config = json.loads(sys.argv[1])


def analyse(path, variables):
    """Sums each variable and notes them; creates nothing at ``path``."""
    note = {name: float(np.sum(array, dtype=np.float64)) for name, array in variables.items()}
    (Path(config["seen"]) / f"{path.name}.json").write_text(json.dumps(note))


def main(io, comm):
    shape = tuple(config["shape"])
    rows = block_rows(shape[0], comm.size, uneven=True)
    begin = sum(rows[: comm.rank])
    for step in range(config["steps"]):
        full = expected_array("t", step, shape, "f8")
        start = (begin,) + (0,) * (len(shape) - 1)
        part = full[begin : begin + rows[comm.rank]]
        io.write("dynamics", "t", part, step=step, start=start, shape=shape)
        io.write("diag", "rank_step", np.int64(comm.rank * 100 + step), step=step)
        io.flush()
    io.wait()


burst.run(main, io_ranks=config["io_ranks"], memory="16MiB", sink=analyse, root=config["root"])
