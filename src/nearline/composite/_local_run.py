"""Running the servers and band owners as local processes (the embedded default).

The driver (this process) forks ``readers`` input data servers and ``workers`` band owners
after the plan, the calibration tables and the ancillary maps are ready, so every child
inherits them without a copy, and after the numba kernels are compiled. Lines travel through
shared-memory slots; finished bands come back through local disk, and the driver writes each
into the output file as soon as it is finished. A child that fails or dies stops the run.
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import queue
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from nearline.composite._context import RunContext
from nearline.composite._worker import work
from nearline.errors import CompositeError
from nearline.swath import block_nbytes
from nearline.swath.shm import SharedSlots

SLOTS_PER_WORKER = 3
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
_POLL_SECONDS = 0.2


def keep_freed_memory() -> None:
    """Keep memory freed by this process for its next allocations (glibc only).

    glibc gives freed blocks back to the kernel (past 128 KiB, or at the heap's top), so a
    band owner's arrays for the next block fault in every page again, zeroed by the kernel:
    about 280,000 faults and a second of system time over a 14-orbit day, a tenth of the
    run's processor time. Called in the forked children, never in the caller's process.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)  # glibc's largest: blocks of up to 32 MiB
    libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)


def _child(results: Any, role: str, index: int, body: Callable[[], Any]) -> None:
    keep_freed_memory()
    try:
        stats = body()
        results.put(("stats", role, index, asdict(stats)))
    except BaseException as error:  # report, then let the driver stop everyone
        detail = traceback.format_exc(limit=4)
        results.put(("error", role, index, f"{error}", detail))
        raise SystemExit(1) from None
    finally:
        results.close()
        results.join_thread()


def run_local(context: RunContext, scratch: Path, write_band: Callable[[int], None]) -> dict:
    """Serve, composite and collect every band; return the children's stats by role."""
    plan, settings = context.plan, context.settings
    servers, workers = settings.readers, settings.workers
    ctx = mp.get_context("fork")
    shared = SharedSlots(
        servers=servers,
        workers=workers,
        slots_per_server=SLOTS_PER_WORKER * workers,
        slot_bytes=block_nbytes(settings.max_lines),
        context=ctx,
    )
    barrier = ctx.Barrier(servers + workers)
    results = ctx.Queue()
    names = context.granule_names()

    def server_body(server: int) -> Any:
        return context.serve(
            server,
            shared.outbox(server),
            barrier=barrier.wait,
            on_block=lambda lines: results.put(("lines", "server", server, lines)),
        )

    def worker_body(worker: int) -> Any:
        return work(
            worker,
            plan,
            shared.inbox(worker, names),
            reducer=context.reducer,
            observe=context.observe,
            stage_seconds=context.stage_seconds,
            scratch=scratch,
            barrier=barrier.wait,
            band_done=lambda band: results.put(("band", "worker", worker, band)),
        )

    children = [
        ctx.Process(target=_child, args=(results, "server", i, lambda i=i: server_body(i)))
        for i in range(servers)
    ] + [
        ctx.Process(target=_child, args=(results, "worker", i, lambda i=i: worker_body(i)))
        for i in range(workers)
    ]
    for child in children:
        child.start()
    stats: dict[str, list[dict]] = {"server": [], "worker": []}
    try:
        while len(stats["server"]) + len(stats["worker"]) < len(children):
            try:
                message = results.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                _check_alive(children)
                continue
            kind, role, index, payload, *rest = message
            if kind == "error":
                raise CompositeError(f"{role} {index} failed: {payload}\n{rest[0]}".strip())
            if kind == "lines":
                context.advance(payload)
            elif kind == "band":
                write_band(payload)
            elif kind == "stats":
                stats[role].append(payload)
    except BaseException:
        for child in children:
            child.terminate()
        raise
    finally:
        deadline = time.monotonic() + 10
        for child in children:
            child.join(timeout=max(0.1, deadline - time.monotonic()))
    return stats


def _check_alive(children: list[Any]) -> None:
    for child in children:
        if child.exitcode not in (None, 0):
            raise CompositeError(
                f"a compositing process ({child.name}) died with exit code {child.exitcode}; "
                "see the log above for its last words"
            )
