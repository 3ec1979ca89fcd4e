"""Shipping scan lines between MPI ranks: one message per block, received in place.

A server packs a block into one of a few send buffers and starts a non-blocking send; it
waits for the oldest send only when it needs that buffer again (bounded memory, and a slow
worker holds back only the server feeding it). The first 64 bytes of every message are the
header (kind, granule, first line, line count) as int64; a worker receives into one buffer
it keeps for the run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nearline.swath._wire import BlockHeader, block_nbytes, unpack_block
from nearline.swath.input_servers import Delivery, Inbox, Outbox

TAG_LINES = 7401
_HEADER = 64
_BLOCK, _END = 0, 1


class MPIOutbox(Outbox):
    """A server rank's side. ``workers[w]`` is the rank of worker ``w`` in ``comm``."""

    def __init__(self, comm: Any, workers: list[int], *, max_lines: int, buffers: int = 4) -> None:
        self._comm, self._workers = comm, workers
        size = _HEADER + block_nbytes(max_lines)
        self._buffers = [np.zeros(size, dtype=np.uint8) for _ in range(buffers)]
        self._requests: list[Any] = [None] * buffers
        self._next = 0
        self._current = 0

    def _buffer(self) -> tuple[int, np.ndarray]:
        index = self._next
        self._next = (self._next + 1) % len(self._buffers)
        if self._requests[index] is not None:
            self._requests[index].Wait()
            self._requests[index] = None
        return index, self._buffers[index]

    def _send(self, worker: int, index: int, nbytes: int) -> None:
        buffer = self._buffers[index]
        request = self._comm.Isend(buffer[:nbytes], dest=self._workers[worker], tag=TAG_LINES)
        self._requests[index] = request

    def buffer(self, worker: int) -> np.ndarray:
        self._current, buffer = self._buffer()
        return buffer[_HEADER:]

    def send(self, worker: int, header: BlockHeader, buffer: np.ndarray) -> None:
        whole = self._buffers[self._current]
        whole[:_HEADER].view(np.int64)[:4] = (
            _BLOCK,
            header.granule,
            header.first_line,
            header.n_lines,
        )
        self._send(worker, self._current, _HEADER + block_nbytes(header.n_lines))

    def end_pass(self) -> None:
        for worker in range(len(self._workers)):
            index, buffer = self._buffer()
            buffer[:_HEADER].view(np.int64)[:4] = (_END, -1, -1, -1)
            self._send(worker, index, _HEADER)
        for request in self._requests:
            if request is not None:
                request.Wait()
        self._requests = [None] * len(self._buffers)


class MPIInbox(Inbox):
    """A worker rank's side: one receive buffer, reused for every block."""

    def __init__(
        self, comm: Any, servers: int, names: list[tuple[str, str]], *, max_lines: int
    ) -> None:
        self._comm, self._servers, self._names = comm, servers, names
        self._buffer = np.zeros(_HEADER + block_nbytes(max_lines), dtype=np.uint8)
        self._ended = 0

    def get(self) -> Delivery | None:
        from mpi4py import MPI

        while True:
            self._comm.Recv(self._buffer, source=MPI.ANY_SOURCE, tag=TAG_LINES)
            kind, granule, first_line, n_lines = (
                int(v) for v in self._buffer[:_HEADER].view(np.int64)[:4]
            )
            if kind == _END:
                self._ended += 1
                if self._ended == self._servers:
                    self._ended = 0
                    return None
                continue
            name, platform = self._names[granule]
            block = unpack_block(
                self._buffer[_HEADER:],
                BlockHeader(granule, first_line, n_lines),
                granule=name,
                platform=platform,
            )
            return Delivery(granule, block)

    def release(self, delivery: Delivery) -> None:
        """Nothing to hand back: the next receive reuses the buffer."""
