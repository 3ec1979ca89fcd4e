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

from nearline.swath._base import FieldGranule, Granule, Reader
from nearline.swath._block import (
    CH3A,
    CH3B,
    CHANNELS,
    N_PIXELS,
    TIE_COLUMNS,
    ChannelPacking,
    StoredScaling,
    SwathBlock,
    Telemetry,
)
from nearline.swath._companions import companion_kind
from nearline.swath._modis_products import PRODUCTS as MODIS_PRODUCTS
from nearline.swath._orbit import gac_scan_angles, glint_angle, sun_distance_squared
from nearline.swath._registry import available_readers, get_reader, granule_paths, open_granule
from nearline.swath._tle import is_tle_file
from nearline.swath._truth import Truth, read_truth
from nearline.swath._wire import BlockHeader, block_nbytes, pack_block, unpack_block
from nearline.swath.netcdf_granule import HDF5_MAGIC

if TYPE_CHECKING:  # what __getattr__ imports on first use, visible to type checkers and griffe
    from nearline.swath._footprint import (
        GranuleSummary,
        describe_granule,
        describe_stream,
        granule_footprint,
        swath_footprint,
        union_footprints,
    )
    from nearline.swath._geolocation import interpolate_tiepoints, lonlat
    from nearline.swath._maps import (
        cache_folder,
        height,
        height_at,
        height_codes,
        is_land,
        land_at,
        land_bits,
        package_folder,
    )
    from nearline.swath._modis_synth import synthesize_modis_day
    from nearline.swath._subset import SubsetRequest, SubsetResult, subset_granule
    from nearline.swath._synth import synthesize_day

_LAZY = {
    "GranuleSummary": "_footprint",
    "describe_granule": "_footprint",
    "describe_stream": "_footprint",
    "granule_footprint": "_footprint",
    "swath_footprint": "_footprint",
    "union_footprints": "_footprint",
    "interpolate_tiepoints": "_geolocation",
    "lonlat": "_geolocation",
    "cache_folder": "_maps",
    "height": "_maps",
    "height_at": "_maps",
    "height_codes": "_maps",
    "is_land": "_maps",
    "land_at": "_maps",
    "land_bits": "_maps",
    "package_folder": "_maps",
    "synthesize_day": "_synth",
    "synthesize_modis_day": "_modis_synth",
    "SubsetRequest": "_subset",
    "SubsetResult": "_subset",
    "subset_granule": "_subset",
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
    "ChannelPacking",
    "FieldGranule",
    "Granule",
    "GranuleSummary",
    "Reader",
    "StoredScaling",
    "SubsetRequest",
    "SubsetResult",
    "SwathBlock",
    "Telemetry",
    "Truth",
    "available_readers",
    "block_nbytes",
    "cache_folder",
    "companion_kind",
    "describe_granule",
    "describe_stream",
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
    "is_tle_file",
    "land_at",
    "land_bits",
    "lonlat",
    "open_granule",
    "pack_block",
    "package_folder",
    "read_truth",
    "subset_granule",
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
