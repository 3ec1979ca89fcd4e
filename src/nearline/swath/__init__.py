"""swath: satellite granules in (readers found by sniffing), synthetic orbits with real
geometry, granule footprints for the catalogue, and the input data servers that ship scan
lines to the band owners.

The footprint names are imported on first use (they need shapely, which the compositor does
not): ``from nearline.swath import describe_granule`` works as usual.
"""

from __future__ import annotations

from typing import Any

from nearline.swath.base import Granule, Reader
from nearline.swath.block import CHANNELS, N_PIXELS, TIE_COLUMNS, SwathBlock, Telemetry
from nearline.swath.geolocation import interpolate_tiepoints, lonlat
from nearline.swath.registry import available_readers, get_reader, granule_paths, open_granule
from nearline.swath.synth import synthesize_day

_FOOTPRINT = ("GranuleSummary", "describe_granule", "granule_footprint", "swath_footprint")

__all__ = [
    "CHANNELS",
    "N_PIXELS",
    "TIE_COLUMNS",
    "Granule",
    "GranuleSummary",
    "Reader",
    "SwathBlock",
    "Telemetry",
    "available_readers",
    "describe_granule",
    "get_reader",
    "granule_footprint",
    "granule_paths",
    "interpolate_tiepoints",
    "lonlat",
    "open_granule",
    "swath_footprint",
    "synthesize_day",
]


def __getattr__(name: str) -> Any:
    if name in _FOOTPRINT:
        from nearline.swath import footprint

        return getattr(footprint, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
