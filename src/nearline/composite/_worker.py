"""A band owner: turn the scan lines it receives into observations and fold them into its
band, one band per pass; then leave the finished band on local disk for the final rewrite.

No two workers own the same cell, so updates need no locking or communication: Saltz et al.'s
reason for partitioning the output by latitude.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nearline.composite._base import Reducer
from nearline.composite._chunks import write_chunks
from nearline.composite._plan import Plan
from nearline.grid import FootprintRegistrar
from nearline.swath.input_servers import Inbox


@dataclass
class WorkerStats:
    """Where a worker's time went."""

    compute_seconds: float = 0.0  # calibrate, mask, correct, register, composite
    wait_seconds: float = 0.0  # waiting for the servers to deliver lines
    tail_seconds: float = 0.0  # of which after the last block of a pass (others still busy)
    scratch_seconds: float = 0.0  # compressing finished bands' chunks onto local disk
    pixels_used: int = 0  # (cell, pixel) pairs composited
    cpu_seconds: float = 0.0  # processor time of the whole run of the worker
    # the chain's stages, processor seconds (RunContext.stage_seconds): of cpu_seconds, the
    # rest is registration and compositing, compressing, and taking deliveries
    stages: dict[str, float] = field(default_factory=dict)


def band_file(scratch: Path, band_index: int) -> Path:
    return scratch / f"band-{band_index:05d}.bin"


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
    stage_seconds: dict[str, float] | None = None,
) -> WorkerStats:
    """Run every pass of ``worker``; ``observe(granule, block)`` gives a block's observations
    and adds the seconds of its stages to ``stage_seconds``."""
    stats = WorkerStats()
    cpu_began = time.process_time()
    grid = plan.grid
    whole = reducer.new_state(plan.max_band_cells)
    registrar = FootprintRegistrar(grid)
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
                stats.tail_seconds += started - waited
                break
            observations = observe(delivery.granule, delivery.block)
            inbox.release(delivery)
            cells, pixels = registrar.register(observations.lon, observations.lat, rows=band.rows)
            stats.pixels_used += reducer.update(state, cells, observations, pixels=pixels)
            stats.compute_seconds += time.perf_counter() - started
        started = time.perf_counter()
        outputs = reducer.finish(state)
        stats.compute_seconds += time.perf_counter() - started
        started = time.perf_counter()
        write_chunks(
            band_file(scratch, band.index),
            outputs,
            reducer.variables(),
            first_row=band.rows[0],
            rows=band.rows[1] - band.rows[0],
            height=grid.height,
            width=grid.width,
            chunk_rows=plan.chunk_rows,
        )
        stats.scratch_seconds += time.perf_counter() - started
        band_done(band.index)
    stats.stages = dict(stage_seconds or {})
    stats.cpu_seconds = time.process_time() - cpu_began
    return stats
