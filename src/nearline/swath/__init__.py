"""swath: satellite granules in (readers found by sniffing), synthetic orbits with real
geometry, granule footprints for the catalogue, and the input data servers that ship scan
lines to the band owners.

The heavier parts are imported on first use: footprints need shapely (the compositor does
not), geolocation compiles with numba and the synthesis loads pyorbital (the catalogue's
ingest needs neither). ``from nearline.swath import describe_granule`` works as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nearline.swath.base import Granule, Reader
from nearline.swath.block import CHANNELS, N_PIXELS, TIE_COLUMNS, SwathBlock, Telemetry
from nearline.swath.registry import available_readers, get_reader, granule_paths, open_granule

if TYPE_CHECKING:  # what __getattr__ imports on first use, visible to type checkers and griffe
    from nearline.swath.footprint import (
        GranuleSummary,
        describe_granule,
        describe_stream,
        granule_footprint,
        swath_footprint,
        union_footprints,
    )
    from nearline.swath.geolocation import interpolate_tiepoints, lonlat
    from nearline.swath.modis_synth import synthesize_modis_day
    from nearline.swath.synth import synthesize_day

_LAZY = {
    "GranuleSummary": "footprint",
    "describe_granule": "footprint",
    "describe_stream": "footprint",
    "granule_footprint": "footprint",
    "swath_footprint": "footprint",
    "union_footprints": "footprint",
    "interpolate_tiepoints": "geolocation",
    "lonlat": "geolocation",
    "synthesize_day": "synth",
    "synthesize_modis_day": "modis_synth",
}

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
    "describe_stream",
    "get_reader",
    "granule_footprint",
    "granule_paths",
    "interpolate_tiepoints",
    "lonlat",
    "open_granule",
    "swath_footprint",
    "synthesize_day",
    "synthesize_modis_day",
    "union_footprints",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f"nearline.swath.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
