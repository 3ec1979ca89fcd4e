"""swath: satellite granules in (readers found by sniffing), synthetic orbits with real
geometry, and the input data servers that ship scan lines to the band owners."""

from __future__ import annotations

from nearline.swath.base import (
    CHANNELS,
    N_PIXELS,
    TIE_COLUMNS,
    Granule,
    Reader,
    SwathBlock,
    Telemetry,
    interpolate_tiepoints,
    lonlat,
)
from nearline.swath.registry import available_readers, get_reader, open_granule
from nearline.swath.synth import synthesize_day

__all__ = [
    "CHANNELS",
    "N_PIXELS",
    "TIE_COLUMNS",
    "Granule",
    "Reader",
    "SwathBlock",
    "Telemetry",
    "available_readers",
    "get_reader",
    "interpolate_tiepoints",
    "lonlat",
    "open_granule",
    "synthesize_day",
]
