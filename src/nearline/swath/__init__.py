"""swath: satellite granules in (readers found by sniffing), synthetic orbits with real
geometry, granule footprints for the catalogue, and the input data servers that ship scan
lines to the band owners.

The heavier parts are imported on first use: footprints need shapely (the compositor does
not), geolocation and the ancillary maps compile with numba and the synthesis loads pyorbital
(the catalogue's ingest needs none of them). ``from nearline.swath import describe_granule``
works as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nearline.swath.base import Granule, Reader
from nearline.swath.block import (
    CH3A,
    CH3B,
    CHANNELS,
    N_PIXELS,
    TIE_COLUMNS,
    SwathBlock,
    Telemetry,
)
from nearline.swath.modis_products import PRODUCTS as MODIS_PRODUCTS
from nearline.swath.netcdf_granule import HDF5_MAGIC
from nearline.swath.orbit import gac_scan_angles, glint_angle, sun_distance_squared
from nearline.swath.registry import available_readers, get_reader, granule_paths, open_granule
from nearline.swath.truth import Truth, read_truth
from nearline.swath.wire import BlockHeader, block_nbytes, pack_block, unpack_block

if TYPE_CHECKING:  # what __getattr__ imports on first use, visible to type checkers and griffe
    from nearline.swath.footprint import (
        GranuleSummary,
        describe_granule,
        granule_footprint,
        swath_footprint,
        union_footprints,
    )
    from nearline.swath.geolocation import interpolate_tiepoints, lonlat
    from nearline.swath.maps import (
        cache_folder,
        height,
        height_at,
        height_codes,
        is_land,
        land_at,
        land_bits,
        package_folder,
    )
    from nearline.swath.modis_synth import synthesize_modis_day
    from nearline.swath.synth import synthesize_day

_LAZY = {
    "GranuleSummary": "footprint",
    "describe_granule": "footprint",
    "granule_footprint": "footprint",
    "swath_footprint": "footprint",
    "union_footprints": "footprint",
    "interpolate_tiepoints": "geolocation",
    "lonlat": "geolocation",
    "cache_folder": "maps",
    "height": "maps",
    "height_at": "maps",
    "height_codes": "maps",
    "is_land": "maps",
    "land_at": "maps",
    "land_bits": "maps",
    "package_folder": "maps",
    "synthesize_day": "synth",
    "synthesize_modis_day": "modis_synth",
}

__all__ = [
    "CH3A",
    "CH3B",
    "CHANNELS",
    "HDF5_MAGIC",
    "MODIS_PRODUCTS",
    "N_PIXELS",
    "TIE_COLUMNS",
    "BlockHeader",
    "Granule",
    "GranuleSummary",
    "Reader",
    "SwathBlock",
    "Telemetry",
    "Truth",
    "available_readers",
    "block_nbytes",
    "cache_folder",
    "describe_granule",
    "gac_scan_angles",
    "get_reader",
    "glint_angle",
    "granule_footprint",
    "granule_paths",
    "height",
    "height_at",
    "height_codes",
    "interpolate_tiepoints",
    "is_land",
    "land_at",
    "land_bits",
    "lonlat",
    "open_granule",
    "pack_block",
    "package_folder",
    "read_truth",
    "sun_distance_squared",
    "swath_footprint",
    "synthesize_day",
    "synthesize_modis_day",
    "union_footprints",
    "unpack_block",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f"nearline.swath.{_LAZY[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
