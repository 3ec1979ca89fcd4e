"""swath: satellite granules in (readers found by sniffing), synthetic orbits with real
geometry, and the input data servers that ship scan lines to the band owners."""

from __future__ import annotations

from nearline.swath.base import Granule, Reader
from nearline.swath.block import CHANNELS, N_PIXELS, TIE_COLUMNS, SwathBlock, Telemetry
from nearline.swath.geolocation import interpolate_tiepoints, lonlat
from nearline.swath.registry import available_readers, get_reader, granule_paths, open_granule
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
    "granule_paths",
    "interpolate_tiepoints",
    "lonlat",
    "open_granule",
    "synthesize_day",
]
