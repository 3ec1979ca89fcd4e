"""Two compute ranks and one I/O rank: rank 0 lends itself a small block (io.buffer, so it
holds a lease of half the queue) and then waits in a barrier while rank 1 writes a block
larger than the half left. The I/O rank must not wait for the lease: rank 0 gives it back
only after the barrier, which waits for rank 1."""

from __future__ import annotations

import json
import sys

import numpy as np

from nearline import burst

root = sys.argv[1]


def main(io, comm):
    for step in range(2):
        if comm.rank == 0:
            with io.buffer("small", "s", (16,), "f8", step=step) as lent:
                lent[...] = np.arange(16) + step
        comm.Barrier()  # from here rank 0 holds what is left of its lease
        if comm.rank == 1:
            io.write("big", "b", np.arange(5000, dtype="f8") * (step + 1), step=step)
        comm.Barrier()
        io.flush()
    io.wait()
    print("STATS " + json.dumps({"rank": comm.rank, **io.stats().__dict__}), flush=True)


burst.run(main, io_ranks=1, memory="64KiB", overflow="block", root=root)
