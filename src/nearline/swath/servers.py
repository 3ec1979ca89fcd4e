"""Input data servers (the Jovian-2 role): read granules in large contiguous pieces and ship
each worker the scan lines it owns.

A server is given, per pass, the line runs every worker needs from each of its granules. It
merges them, reads each merged run in blocks of at most ``max_lines`` lines (one request of
about 2 MiB per variable at 1024 lines, never a few bytes at a time), reads the next block
in a background thread while it ships the current one (read-ahead), and hands every worker
the part of the block inside that worker's runs through an :class:`Outbox`. How bytes travel
(shared memory between local processes, MPI messages between ranks) is the outbox's business.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from nearline.swath.base import Granule, SwathBlock
from nearline.swath.wire import BlockHeader

Runs = list[tuple[int, int]]


@dataclass(frozen=True)
class ReadTask:
    """One granule of one pass: which lines each worker needs from it."""

    granule: int
    runs: dict[int, Runs]


@dataclass
class ServerStats:
    """Where an input data server's time went."""

    read_seconds: float = 0.0  # inside granule reads (in the read-ahead thread)
    wait_seconds: float = 0.0  # waiting for a read the read-ahead had not finished
    ship_seconds: float = 0.0  # waiting for workers to free a buffer, and copying into it
    bytes_read: int = 0
    lines_read: int = 0
    lines_shipped: int = 0
    requests: int = 0


@dataclass(frozen=True)
class Delivery:
    """A block a worker received: views into transport memory until released."""

    granule: int
    block: SwathBlock
    token: object = field(default=None, compare=False)


class Outbox(ABC):
    """A server's way of handing lines to workers."""

    @abstractmethod
    def ship(self, worker: int, header: BlockHeader, block: SwathBlock) -> None:
        """Give ``block`` (lines of granule ``header.granule``) to ``worker``; may wait."""

    @abstractmethod
    def end_pass(self) -> None:
        """Tell every worker this server has shipped everything for the current pass."""


class Inbox(ABC):
    """A worker's way of receiving lines."""

    @abstractmethod
    def get(self) -> Delivery | None:
        """The next block, or None once every server has ended the current pass."""

    @abstractmethod
    def release(self, delivery: Delivery) -> None:
        """Say the worker is done with ``delivery`` (its memory may be reused)."""


def merge_runs(runs: Sequence[tuple[int, int]]) -> Runs:
    """Union of line runs as sorted, disjoint runs."""
    merged: Runs = []
    for start, stop in sorted(runs):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], stop))
        else:
            merged.append((start, stop))
    return merged


def _pieces(runs: Runs, max_lines: int) -> Iterator[tuple[int, int]]:
    for start, stop in runs:
        for first in range(start, stop, max_lines):
            yield first, min(first + max_lines, stop)


def serve_pass(
    tasks: Sequence[ReadTask],
    open_granule: Callable[[int], Granule],
    outbox: Outbox,
    *,
    max_lines: int,
    stats: ServerStats,
    on_block: Callable[[int], None] | None = None,
) -> None:
    """Read and ship every task of one pass, then end the pass on the outbox."""
    pieces = [
        (task, first, stop)
        for task in tasks
        for first, stop in _pieces(
            merge_runs([r for rs in task.runs.values() for r in rs]), max_lines
        )
    ]
    granules: dict[int, Granule] = {}

    def read(task: ReadTask, first: int, stop: int) -> SwathBlock:
        started = time.perf_counter()
        granule = granules.get(task.granule)
        if granule is None:
            granule = granules[task.granule] = open_granule(task.granule)
        block = granule.read(first, stop)
        stats.read_seconds += time.perf_counter() - started
        stats.bytes_read += block.counts.nbytes
        stats.lines_read += stop - first
        stats.requests += 1
        return block

    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="nearline-readahead") as pool:
            pending: Future[SwathBlock] | None = None
            for index, (task, first, stop) in enumerate(pieces):
                if pending is None:
                    pending = pool.submit(read, task, first, stop)
                started = time.perf_counter()
                block = pending.result()
                stats.wait_seconds += time.perf_counter() - started
                pending = pool.submit(read, *pieces[index + 1]) if index + 1 < len(pieces) else None
                started = time.perf_counter()
                for worker, runs in task.runs.items():
                    for run_start, run_stop in runs:
                        lo, hi = max(run_start, first), min(run_stop, stop)
                        if lo < hi:
                            part = block.slice(lo - first, hi - first)
                            outbox.ship(worker, BlockHeader(task.granule, lo, hi - lo), part)
                            stats.lines_shipped += hi - lo
                stats.ship_seconds += time.perf_counter() - started
                if on_block is not None:
                    on_block(stop - first)
    finally:
        for granule in granules.values():
            granule.close()
    outbox.end_pass()
