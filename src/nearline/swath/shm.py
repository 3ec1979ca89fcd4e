"""Shipping scan lines between local processes through shared memory.

Each input data server owns a few fixed slots of anonymous shared memory, made before the
processes fork and touched once by their server (first touches are slow on these VMs; slots
are reused for the whole run). A server reads granule bytes straight into a free slot and
puts a short message on the worker's queue; the worker reads the block in place and hands
the slot back on the server's return queue. A server waits only when all its slots are
still in use: that wait is the back-pressure that bounds memory.
"""

from __future__ import annotations

import mmap
import multiprocessing as mp
from typing import Any

import numpy as np

from nearline.swath._wire import BlockHeader, unpack_block
from nearline.swath.input_servers import Delivery, Inbox, Outbox

_BLOCK, _END = 0, 1


class SharedSlots:
    """Everything the servers and workers of one local run share; make it before forking."""

    def __init__(
        self,
        *,
        servers: int,
        workers: int,
        slots_per_server: int,
        slot_bytes: int,
        context: Any = None,
    ) -> None:
        ctx = context or mp.get_context("fork")
        self.servers, self.workers = servers, workers
        self.slot_bytes = slot_bytes
        self._memory = [
            mmap.mmap(-1, slots_per_server * slot_bytes, flags=mmap.MAP_SHARED)
            for _ in range(servers)
        ]
        self.slots_per_server = slots_per_server
        self.to_worker = [ctx.SimpleQueue() for _ in range(workers)]
        self.to_server = [ctx.SimpleQueue() for _ in range(servers)]

    def slot(self, server: int, index: int) -> np.ndarray:
        """The bytes of one slot, as a uint8 array view."""
        whole = np.frombuffer(self._memory[server], dtype=np.uint8)
        return whole[index * self.slot_bytes : (index + 1) * self.slot_bytes]

    def outbox(self, server: int) -> SharedOutbox:
        return SharedOutbox(self, server)

    def inbox(self, worker: int, names: list[tuple[str, str]]) -> SharedInbox:
        """``names[g]`` is (granule file name, platform) of granule index ``g``."""
        return SharedInbox(self, worker, names)


class SharedOutbox(Outbox):
    """A server's side: copy into a free slot, tell the worker which one."""

    def __init__(self, shared: SharedSlots, server: int) -> None:
        self._shared, self._server = shared, server
        # each worker has its own slots, so a slow worker never holds up the others
        per_worker = max(1, shared.slots_per_server // shared.workers)
        self._free = {
            worker: list(range(worker * per_worker, (worker + 1) * per_worker))
            for worker in range(shared.workers)
        }
        self._owner = {slot: worker for worker, slots in self._free.items() for slot in slots}
        self._current = -1
        for index in self._owner:  # touch every page once, here, not on the hot path
            shared.slot(server, index).fill(0)

    def buffer(self, worker: int) -> np.ndarray:
        while not self._free[worker]:
            self.wait()
        self._current = self._free[worker].pop()
        return self._shared.slot(self._server, self._current)

    def ready(self, worker: int) -> bool:
        returns = self._shared.to_server[self._server]
        while not self._free[worker] and not returns.empty():
            self.wait()
        return bool(self._free[worker])

    def wait(self) -> None:
        returned = self._shared.to_server[self._server].get()
        self._free[self._owner[returned]].append(returned)

    def send(self, worker: int, header: BlockHeader, buffer: np.ndarray) -> None:
        message = (
            _BLOCK, self._server, self._current, header.granule, header.first_line,
            header.n_lines,
        )  # fmt: skip
        self._shared.to_worker[worker].put(message)

    def end_pass(self) -> None:
        for queue in self._shared.to_worker:
            queue.put((_END, self._server, -1, -1, -1, -1))
        # Take back every slot, so the next pass starts with all of them free.
        while sum(map(len, self._free.values())) < len(self._owner):
            returned = self._shared.to_server[self._server].get()
            self._free[self._owner[returned]].append(returned)


class SharedInbox(Inbox):
    """A worker's side: blocks are read in place, then their slots are handed back."""

    def __init__(self, shared: SharedSlots, worker: int, names: list[tuple[str, str]]) -> None:
        self._shared, self._worker, self._names = shared, worker, names
        self._ended = 0

    def get(self) -> Delivery | None:
        while True:
            kind, server, index, granule, first_line, n_lines = self._shared.to_worker[
                self._worker
            ].get()
            if kind == _END:
                self._ended += 1
                if self._ended == self._shared.servers:
                    self._ended = 0
                    return None
                continue
            name, platform = self._names[granule]
            block = unpack_block(
                self._shared.slot(server, index),
                BlockHeader(granule, first_line, n_lines),
                granule=name,
                platform=platform,
            )
            return Delivery(granule, block, token=(server, index))

    def release(self, delivery: Delivery) -> None:
        server, index = delivery.token  # type: ignore[misc]
        self._shared.to_server[server].put(index)
