"""Copying a block into queue memory with more than one core.

One core copies at roughly half the memory bandwidth of this kind of machine; during an
output burst the model's other cores are idle, so large blocks are split across a few
threads (numpy releases the GIL while it copies). The threads start at the first large copy,
never at import, and stop with the client.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np

PARALLEL_FROM = 16 * 1024 * 1024


class Copier:
    """``copy(dst, src)`` for C-contiguous arrays of equal shape and dtype."""

    def __init__(self, threads: int) -> None:
        self.threads = max(1, int(threads))
        self._pool: ThreadPoolExecutor | None = None

    def copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        if self.threads == 1 or src.nbytes < PARALLEL_FROM or not src.flags.c_contiguous:
            np.copyto(dst, src, casting="no")
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="burst-copy")
        flat_dst, flat_src = dst.reshape(-1), src.reshape(-1)
        bounds = np.linspace(0, flat_src.size, self.threads + 1).astype(int)
        parts = [
            self._pool.submit(np.copyto, flat_dst[a:b], flat_src[a:b], casting="no")
            for a, b in itertools.pairwise(bounds)
        ]
        for part in parts:
            part.result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
