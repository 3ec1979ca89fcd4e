"""Arrays the I/O rank keeps from one Veros record to the next.

Memory these machines hand out is slow to touch the first time (0.3-0.7 GB/s, against ~11
GB/s once touched), and each record of a file needs arrays of the same shapes as the one
before: the assembled blocks of a step, the chunk buffers it is deflated from. Taken from
the pool and given back after the step, they are touched once per run, not once per record.

The first record of each shape would still pay for fresh pages, and the first records come
while the model waits on nothing else (the snapshot at set-up, the first averages). So the
pool also holds a reserve: memory a background thread touches while the model sets itself
up, from which arrays of a shape not seen before are carved.
"""

from __future__ import annotations

import threading

import numpy as np

from nearline.burst._arena import PAGE, rounded

LIMIT = 1024 * 1024 * 1024  # bytes kept at most; a larger array given back is dropped
TOUCH_STEP = 64 * 1024 * 1024  # the reserve is touched this much at a time


class Reserve:
    """``size`` bytes touched page by page in a daemon thread and carved out front to back.

    Carving never waits for the toucher: a piece past the touched part is refused, and its
    taker makes a fresh array as before. Carved pieces are not given back here (the pool
    keeps them by shape), so the reserve is spent once.
    """

    def __init__(self, size: int) -> None:
        self._buffer = np.empty(size, dtype=np.uint8)
        self.touched = 0
        self.carved = 0
        self._thread = threading.Thread(target=self._touch, name="veros-pool-touch", daemon=True)
        self._thread.start()

    def _touch(self) -> None:
        """Touch in steps, so that a carve can use the touched part before all is done."""
        size = self._buffer.size
        while self.touched < size:
            end = min(size, self.touched + TOUCH_STEP)
            self._buffer[self.touched : end : PAGE] = 0
            self.touched = end

    def carve(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray | None:
        """An array of ``shape`` and ``dtype`` from touched memory, or None if none is left.

        Parameters
        ----------
        shape, dtype
            Of the array, as :meth:`ArrayPool.take` is asked.

        Returns
        -------
        numpy.ndarray or None
            A view into the reserve, aligned as the queue's pieces are.
        """
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        end = self.carved + rounded(nbytes)
        if end > self.touched:
            return None
        piece = self._buffer[self.carved : self.carved + nbytes]
        self.carved = end
        return piece.view(dtype).reshape(shape)


class ArrayPool:
    """Free arrays by shape and dtype; used by one thread at a time (an I/O server's writer).

    Parameters
    ----------
    limit
        Bytes kept at most.
    reserve
        Bytes of the touched reserve (0: none; an I/O server's sink gives it ``LIMIT``).
    """

    def __init__(self, limit: int = LIMIT, reserve: int = 0) -> None:
        self.limit = limit
        self.kept = 0
        self._free: dict[tuple[tuple[int, ...], str], list[np.ndarray]] = {}
        self._reserve = Reserve(reserve) if reserve else None

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
            A kept array if one is free, else one carved from the reserve, else a new one.
        """
        dtype = np.dtype(dtype)
        free = self._free.get((tuple(shape), dtype.str))
        if free:
            array = free.pop()
            self.kept -= array.nbytes
            return array
        carved = self._reserve.carve(tuple(shape), dtype) if self._reserve else None
        return np.empty(shape, dtype=dtype) if carved is None else carved

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
