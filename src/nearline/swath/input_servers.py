"""Input data servers (the Jovian-2 role): read granules in large contiguous pieces and ship
each worker the scan lines it owns.

A server is given, per pass, the line runs every worker needs from each of its granules. It
reads them in blocks of at most ``max_lines`` lines with large contiguous requests (818 KiB per
channel at 1024 lines, never a few bytes at a time), straight into the buffer that will carry
them, the workers taking turns, while the kernel is told to read the next block ahead. How
buffers travel (shared memory between local processes, MPI messages between ranks) is the
:class:`Outbox`'s business.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from nearline.swath._base import Granule
from nearline.swath._block import SwathBlock
from nearline.swath._wire import BlockHeader, pack_block

Runs = list[tuple[int, int]]


@dataclass(frozen=True)
class ReadTask:
    """One granule of one pass: which lines each worker needs from it."""

    granule: int
    runs: dict[int, Runs]


@dataclass
class ServerStats:
    """Where an input data server's time went."""

    read_seconds: float = 0.0  # reading lines into shipping buffers
    wait_seconds: float = 0.0  # waiting for workers to free a buffer (back-pressure)
    ship_seconds: float = 0.0  # handing filled buffers over
    bytes_read: int = 0
    lines_shipped: int = 0
    requests: int = 0


@dataclass(frozen=True)
class Delivery:
    """A block a worker received: views into transport memory until released."""

    granule: int
    block: SwathBlock
    token: object = field(default=None, compare=False)


class Outbox(ABC):
    """A server's way of handing lines to workers: fill a buffer, then send it."""

    @abstractmethod
    def buffer(self, worker: int) -> np.ndarray:
        """A free uint8 buffer for a block to ``worker`` (may wait until one is freed)."""

    @abstractmethod
    def send(self, worker: int, header: BlockHeader, buffer: np.ndarray) -> None:
        """Hand the filled ``buffer`` to ``worker``."""

    @abstractmethod
    def end_pass(self) -> None:
        """Tell every worker this server has shipped everything for the current pass."""

    def ready(self, worker: int) -> bool:
        """Whether :meth:`buffer` would give a buffer for ``worker`` without waiting."""
        return True

    def wait(self) -> None:  # noqa: B027 - an outbox whose buffers never run out never waits
        """Wait until a buffer is freed (for whichever worker)."""

    def ship(self, worker: int, header: BlockHeader, block: SwathBlock) -> None:
        """Copy a block already in memory into a buffer and send it."""
        buffer = self.buffer(worker)
        pack_block(block, buffer)
        self.send(worker, header, buffer)


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


def _requests(tasks: Sequence[ReadTask], max_lines: int) -> list[tuple[int, int, int, int]]:
    """(worker, granule, first, stop) reads of at most ``max_lines``, the workers interleaved.

    Runs are cut at the granule's multiples of ``max_lines``, wherever they start, so a
    line's neighbours are in its block however the output is partitioned (registration
    draws each pixel's footprint from its neighbours). Each worker's lines come in granule
    and line order; the workers take turns, so an orbit that stays in one worker's band for
    a while does not leave the others waiting.
    """
    queues: dict[int, list[tuple[int, int, int, int]]] = {}
    for task in tasks:
        for worker, runs in task.runs.items():
            for start, stop in runs:
                first = start
                while first < stop:
                    end = min((first // max_lines + 1) * max_lines, stop)
                    queues.setdefault(worker, []).append((worker, task.granule, first, end))
                    first = end
    order = []
    for turn in range(max((len(q) for q in queues.values()), default=0)):
        order += [queue[turn] for queue in queues.values() if turn < len(queue)]
    return order


def _in_turns(
    requests: list[tuple[int, int, int, int]], outbox: Outbox
) -> Iterator[tuple[int, int, int, int]]:
    """``requests`` with the workers taking turns, each worker's in order, skipping a worker
    whose buffers are all still in use while another's are free: a worker busy with a
    costly block does not leave the others waiting (blocks differ tenfold in cost: most of a
    night block is left out). When every worker's buffers are in use, wait for one."""
    queues: dict[int, deque[tuple[int, int, int, int]]] = {}
    for request in requests:
        queues.setdefault(request[0], deque()).append(request)
    turn = deque(queues)
    while turn:
        for _ in range(len(turn)):
            if outbox.ready(turn[0]):
                break
            turn.rotate(-1)
        else:
            outbox.wait()
            continue
        worker = turn.popleft()
        yield queues[worker].popleft()
        if queues[worker]:
            turn.append(worker)


def serve_pass(
    tasks: Sequence[ReadTask],
    open_granule: Callable[[int], Granule],
    outbox: Outbox,
    *,
    max_lines: int,
    stats: ServerStats,
    on_block: Callable[[int], None] | None = None,
) -> None:
    """Read and ship every task of one pass, then end the pass on the outbox.

    Each read goes straight into the buffer that carries it to its worker
    (``Granule.read_into``), and the kernel is told about the next read before this one
    is shipped (read-ahead). Workers take turns, skipping one with no free buffer
    (:func:`_in_turns`).
    """
    requests = _requests(tasks, max_lines)
    granules: dict[int, Granule] = {}

    def granule_of(index: int) -> Granule:
        if index not in granules:
            granules[index] = open_granule(index)
        return granules[index]

    turns = _in_turns(requests, outbox)
    try:
        for number in range(len(requests)):
            began = time.perf_counter()
            worker, granule, first, stop = next(turns)  # may wait for a free buffer
            if number + 1 < len(requests):  # the next in plain turns: a good guess
                _, upcoming, next_first, next_stop = requests[number + 1]
                granule_of(upcoming).prefetch(next_first, next_stop)
            buffer = outbox.buffer(worker)
            read = time.perf_counter()
            stats.bytes_read += granule_of(granule).read_into(first, stop, buffer)
            sent = time.perf_counter()
            outbox.send(worker, BlockHeader(granule, first, stop - first), buffer)
            stats.wait_seconds += read - began
            stats.read_seconds += sent - read
            stats.ship_seconds += time.perf_counter() - sent
            stats.lines_shipped += stop - first
            stats.requests += 1
            if on_block is not None:
                on_block(stop - first)
    finally:
        for granule in granules.values():
            granule.close()
    outbox.end_pass()
