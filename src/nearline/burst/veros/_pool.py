"""Arrays the I/O rank keeps from one Veros record to the next.

Memory these machines hand out is slow to touch the first time (0.3-0.7 GB/s, against ~11
GB/s once touched), and each record of a file needs arrays of the same shapes as the one
before: the assembled blocks of a step, the chunk buffers it is deflated from. Taken from
the pool and given back after the step, they are touched once per run, not once per record.
"""

from __future__ import annotations

import numpy as np

LIMIT = 512 * 1024 * 1024  # bytes kept at most; a larger array given back is dropped


class ArrayPool:
    """Free arrays by shape and dtype; used by one thread at a time (an I/O server's writer)."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self.kept = 0
        self._free: dict[tuple[tuple[int, ...], str], list[np.ndarray]] = {}

    def take(self, shape: tuple[int, ...], dtype: np.dtype | str) -> np.ndarray:
        """An array of ``shape`` and ``dtype`` whose contents are left over from before.

        Parameters
        ----------
        shape
            The array's shape.
        dtype
            The array's dtype.

        Returns
        -------
        numpy.ndarray
            A kept array if one is free, else a new one.
        """
        free = self._free.get((tuple(shape), np.dtype(dtype).str))
        if free:
            array = free.pop()
            self.kept -= array.nbytes
            return array
        return np.empty(shape, dtype=dtype)

    def give(self, array: np.ndarray) -> None:
        """Keep ``array`` for a later :meth:`take`, while the pool holds under its limit.

        Parameters
        ----------
        array
            An array from :meth:`take`, no longer used by its taker.
        """
        if self.kept + array.nbytes > self.limit:
            return
        self._free.setdefault((array.shape, array.dtype.str), []).append(array)
        self.kept += array.nbytes
