"""What the burst test programs write, recomputed by the tests."""

from __future__ import annotations

import zlib

import numpy as np


def block_rows(total: int, ranks: int, *, uneven: bool) -> list[int]:
    """Rows per rank; uneven splits give rank r about (r + 1) shares, all non-empty."""
    if not uneven:
        base, extra = divmod(total, ranks)
        return [base + (r < extra) for r in range(ranks)]
    weights = [r + 1 for r in range(ranks)]
    rows = [max(1, total * w // sum(weights)) for w in weights]
    rows[-1] = total - sum(rows[:-1])
    return rows


def expected_array(name: str, step: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A deterministic array for (name, step): distinct per variable, step and element."""
    seed = zlib.crc32(name.encode()) % 1000
    values = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) % 251
    return (values + seed + 7 * step).astype(dtype)
