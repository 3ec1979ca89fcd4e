"""A band owner: turn the scan lines it receives into observations and fold them into its
band, one band per pass; then leave the finished band on local disk for the final rewrite.

No two workers own the same cell, so updates need no locking or communication: the seed's
reason for partitioning the output by latitude.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from nearline.composite.base import Reducer

from nearline.composite.plan import Plan
from nearline.swath.servers import Inbox


@dataclass
class WorkerStats:
    """Where a worker's time went."""

    compute_seconds: float = 0.0  # calibrate, mask, correct, register, composite
    wait_seconds: float = 0.0  # waiting for the servers to deliver lines
    scratch_seconds: float = 0.0  # writing finished bands to local disk
    pixels: int = 0
    pixels_used: int = 0


def band_file(scratch: Path, band_index: int) -> Path:
    return scratch / f"band-{band_index:05d}.bin"


def write_band(path: Path, outputs: Mapping[str, np.ndarray]) -> None:
    """One large sequential write of every output variable of a band, in order."""
    with open(path, "wb") as handle:
        for array in outputs.values():
            handle.write(memoryview(np.ascontiguousarray(array)).cast("B"))


def read_band(path: Path, variables: list[Any], n_cells: int) -> dict[str, np.ndarray]:
    """The arrays :func:`write_band` wrote, as views of one read."""
    raw = np.fromfile(path, dtype=np.uint8)
    arrays, offset = {}, 0
    for variable in variables:
        size = np.dtype(variable.dtype).itemsize * n_cells
        arrays[variable.name] = raw[offset : offset + size].view(variable.dtype)
        offset += size
    return arrays


def work(
    worker: int,
    plan: Plan,
    inbox: Inbox,
    *,
    reducer: Reducer,
    observe: Callable[[int, Any], Any],
    scratch: Path,
    barrier: Callable[[], None],
    band_done: Callable[[int], None],
) -> WorkerStats:
    """Run every pass of ``worker``; ``observe(granule, block)`` gives a block's observations."""
    stats = WorkerStats()
    grid = plan.grid
    whole = reducer.new_state(plan.max_band_cells)
    for pass_index in range(plan.passes):
        band = plan.band(pass_index, worker)
        n_cells = (band.rows[1] - band.rows[0]) * grid.width
        state = {name: array[:n_cells] for name, array in whole.items()}
        reducer.reset(state)
        barrier()
        while True:
            waited = time.perf_counter()
            delivery = inbox.get()
            started = time.perf_counter()
            stats.wait_seconds += started - waited
            if delivery is None:
                break
            observations = observe(delivery.granule, delivery.block)
            inbox.release(delivery)
            cells = grid.cell_index(observations.lon, observations.lat, rows=band.rows)
            stats.pixels_used += reducer.update(state, cells.ravel(), observations)
            stats.pixels += cells.size
            stats.compute_seconds += time.perf_counter() - started
        started = time.perf_counter()
        outputs = reducer.finish(state)
        stats.compute_seconds += time.perf_counter() - started
        started = time.perf_counter()
        write_band(band_file(scratch, band.index), outputs)
        stats.scratch_seconds += time.perf_counter() - started
        band_done(band.index)
    return stats
