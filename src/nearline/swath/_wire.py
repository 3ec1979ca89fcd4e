"""Scan lines as one flat buffer, so an input data server ships a block in one copy or message.

A block of ``n`` lines is laid out as its arrays one after the other, each starting on a
64-byte boundary: counts (5, n, 409) uint16, the five tie-point arrays (n, 51) float32, the
line times (n,) int64 milliseconds, then the telemetry (prt (n,), ict (n, 3), space (n, 3))
as float64. The receiver gets views into the buffer, not copies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nearline.swath._block import N_PIXELS, SwathBlock

_TIE_FIELDS = ("tie_lat", "tie_lon", "tie_sat_zenith", "tie_sun_zenith", "tie_rel_azimuth")
_N_TIE = 51
_ALIGN = 64


def _aligned(size: int) -> int:
    return -(-size // _ALIGN) * _ALIGN


def field_offsets(n: int) -> dict[str, int]:
    """Byte offset of each field in the buffer of an ``n``-line block."""
    offsets, offset = {}, 0
    for name, dtype, shape in layout(n):
        offsets[name] = offset
        offset += _aligned(dtype.itemsize * int(np.prod(shape)))
    return offsets


def layout(n: int) -> list[tuple[str, np.dtype, tuple[int, ...]]]:
    """(field, dtype, shape) of each array of an ``n``-line block, in buffer order."""
    fields: list[tuple[str, np.dtype, tuple[int, ...]]] = [
        ("counts", np.dtype(np.uint16), (5, n, N_PIXELS))
    ]
    fields += [(name, np.dtype(np.float32), (n, _N_TIE)) for name in _TIE_FIELDS]
    fields += [
        ("times", np.dtype(np.int64), (n,)),
        ("prt_counts", np.dtype(np.float64), (n,)),
        ("ict_counts", np.dtype(np.float64), (n, 3)),
        ("space_counts", np.dtype(np.float64), (n, 3)),
    ]
    return fields


def block_nbytes(n_lines: int) -> int:
    """Bytes a block of ``n_lines`` scan lines takes on the wire."""
    return sum(
        _aligned(dtype.itemsize * int(np.prod(shape))) for _, dtype, shape in layout(n_lines)
    )


@dataclass(frozen=True)
class BlockHeader:
    """What travels beside the buffer: which granule, which lines."""

    granule: int
    first_line: int
    n_lines: int


def pack_block(block: SwathBlock, buffer: np.ndarray) -> int:
    """Copy ``block`` into ``buffer`` (uint8, at least ``block_nbytes``); return bytes used."""
    offset = 0
    for name, dtype, shape in layout(block.n_lines):
        size = dtype.itemsize * int(np.prod(shape))
        target = buffer[offset : offset + size].view(dtype).reshape(shape)
        source = getattr(block, name)
        if name == "times":
            source = source.astype("datetime64[ms]").view(np.int64)
        np.copyto(target, source, casting="unsafe")
        offset += _aligned(size)
    return offset


def unpack_block(
    buffer: np.ndarray, header: BlockHeader, *, granule: str, platform: str
) -> SwathBlock:
    """A :class:`SwathBlock` whose arrays are views into ``buffer``."""
    arrays = {}
    offset = 0
    for name, dtype, shape in layout(header.n_lines):
        size = dtype.itemsize * int(np.prod(shape))
        arrays[name] = buffer[offset : offset + size].view(dtype).reshape(shape)
        offset += _aligned(size)
    arrays["times"] = arrays["times"].view("datetime64[ms]")
    return SwathBlock(granule=granule, platform=platform, first_line=header.first_line, **arrays)
