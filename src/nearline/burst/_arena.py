"""The I/O server's queue memory: one pre-touched buffer handed out in aligned pieces.

Memory on a fresh VM page is slow to touch the first time, so the whole buffer is touched
once when the server starts and reused for every write after that. Pieces are freed in any
order (files flush independently), so free space is a sorted list of (offset, size) runs that
are merged with their neighbours on release.
"""

from __future__ import annotations

import bisect

import numpy as np

ALIGN = 64
PAGE = 4096


def rounded(n: int) -> int:
    """``n`` bytes as the arena hands them out (a multiple of ALIGN)."""
    return max(ALIGN, (n + ALIGN - 1) // ALIGN * ALIGN)


class Arena:
    """First-fit allocator over ``buffer`` (a 1-D uint8 array, shared or private)."""

    def __init__(self, buffer: np.ndarray) -> None:
        self.buffer = buffer
        self.capacity = buffer.size
        self._starts: list[int] = [0]
        self._sizes: list[int] = [buffer.size]
        self.used = 0

    def touch(self) -> None:
        """Write one byte per page so that later copies run at memory speed."""
        self.buffer[::PAGE] = 0

    def fits_ever(self, nbytes: int) -> bool:
        return rounded(nbytes) <= self.capacity

    def allocate(self, nbytes: int) -> int | None:
        """Return the offset of ``nbytes`` of free memory, or None when no run is big enough."""
        size = rounded(nbytes)
        for i, run in enumerate(self._sizes):
            if run >= size:
                offset = self._starts[i]
                if run == size:
                    del self._starts[i], self._sizes[i]
                else:
                    self._starts[i] += size
                    self._sizes[i] -= size
                self.used += size
                return offset
        return None

    def release(self, offset: int, nbytes: int) -> None:
        """Give back a piece returned by :meth:`allocate`."""
        size = rounded(nbytes)
        self.used -= size
        i = bisect.bisect_left(self._starts, offset)
        self._starts.insert(i, offset)
        self._sizes.insert(i, size)
        if i + 1 < len(self._starts) and offset + size == self._starts[i + 1]:
            self._sizes[i] += self._sizes.pop(i + 1)
            self._starts.pop(i + 1)
        if i > 0 and self._starts[i - 1] + self._sizes[i - 1] == offset:
            self._sizes[i - 1] += self._sizes.pop(i)
            self._starts.pop(i)

    def view(self, offset: int, nbytes: int, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
        """The piece at ``offset`` as an array of ``dtype`` and ``shape`` (no copy)."""
        return self.buffer[offset : offset + nbytes].view(dtype).reshape(shape)
