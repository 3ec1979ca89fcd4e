"""MODIS gridded products in HDF-EOS2 grids (the land tiles MOD09GA, MOD09A1, MOD11A1,
MOD11B2, MOD13Q1, ... in GCTP_SNSOID, and the climate modelling grids in GCTP_GEO), HDF4.

The footprint is the tile's own shape: the ``UpperLeftPointMtrs`` and ``LowerRightMtrs`` of
each grid in ``StructMetadata.0`` (the outer edges of the corner pixels), in the grid's
projection, turned into longitude and latitude by :mod:`~nearline.swath._modis_outline`
(for a sinusoidal tile at the edge of the projection, a sliver bounded by curves and ±180;
for one touching a pole, a shape holding it). It is the part of the tile that lies on the
Earth, whether or not its pixels hold data. Short name, platform and time range come from
``CoreMetadata.0``. A tile has no scan lines: ``n_lines`` is None.

Fields are decoded as the MODIS land products define them, which is not the atmosphere's
rule: ``value = stored * scale_factor + add_offset`` (MOD11's emissivity: 0.002 and 0.49;
its view angle: 1 and -65), except that a ``scale_factor`` above 1 on an SDS calibrated with
HDF4's ``SDsetcal`` (it carries ``calibrated_nt``) is a divisor: MOD09's surface reflectance
(``10000.0``, documented as 0.0001; later files write 0.0001 itself) and MOD13's indices.
MOD09GA's ``Range_1`` (``25.0`` metres, no ``calibrated_nt``) is a multiplier.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from nearline.errors import GranuleError
from nearline.swath._base import Granule
from nearline.swath._modis_ecs import members, scale_and_offset, structures, valid_mask
from nearline.swath._modis_file import REALDATA, ModisFile, ModisReader
from nearline.swath._modis_outline import geographic_outline, packed_dms, sinusoidal_outline

READER = "modis-grid"
PROJECTIONS = ("GCTP_SNSOID", "GCTP_GEO")


def _grids(struct: dict[str, Any]) -> list[dict[str, Any]]:
    return [grid for grid in structures(struct, "Grid") if "Projection" in grid]


def _numbers(grid: dict[str, Any], key: str) -> list[float]:
    value = grid.get(key)
    if not isinstance(value, list):
        raise GranuleError(f"grid {grid.get('GridName')!r} has no {key}")
    return [float(v) for v in value if v != ""]


def grid_outline(grid: dict[str, Any]) -> list[np.ndarray]:
    """One HDF-EOS grid's outline in (lon, lat) rings."""
    upper_left = tuple(_numbers(grid, "UpperLeftPointMtrs")[:2])
    lower_right = tuple(_numbers(grid, "LowerRightMtrs")[:2])
    if grid["Projection"] == "GCTP_GEO":
        return geographic_outline(upper_left, lower_right)
    params = _numbers(grid, "ProjParams") + [0.0] * 13
    return sinusoidal_outline(
        upper_left,
        lower_right,
        radius=params[0] or 6370997.0,  # GCTP's default sphere when ProjParams[0] is 0
        lon0=packed_dms(params[4]),
        false_easting=params[6],
        false_northing=params[7],
    )


class ModisGridGranule(ModisFile):
    """An open MODIS HDF-EOS2 grid product (one tile, or one global CMG)."""

    reader = READER
    kind: ClassVar[str] = "gridded"
    n_lines = None  # type: ignore[assignment]  # a tile has no scan lines

    def _setup(self) -> None:
        grids = _grids(self.struct)
        if not grids:
            raise GranuleError(f"granule {self.path}: StructMetadata.0 declares no grid")
        unread = sorted({g["Projection"] for g in grids} - set(PROJECTIONS))
        if unread:
            raise GranuleError(
                f"granule {self.path}: a grid in {', '.join(unread)}, which nearline does not "
                f"read ({REALDATA})"
            )
        self.grids = grids
        datasets = set(self._sd.datasets())
        self.fields = tuple(
            obj["DataFieldName"]
            for grid in grids
            for obj in members(grid, "DataField", "DataFieldName")
            if obj["DataFieldName"] in datasets
        )

    def read_outline(self) -> list[np.ndarray]:
        """Each distinct grid's outline (MOD09GA's 1 km and 500 m grids share theirs); the
        file is verified whole first, so that nothing damaged is catalogued."""
        self.verify()
        seen, rings = set(), []
        for grid in self.grids:
            key = (str(grid.get("UpperLeftPointMtrs")), str(grid.get("LowerRightMtrs")),
                   grid["Projection"], str(grid.get("ProjParams")))  # fmt: skip
            if key not in seen:
                seen.add(key)
                rings += grid_outline(grid)
        return rings

    def _decode(self, stored: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
        return decode_land(stored, attrs)


def decode_land(stored: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """The MODIS land products' decoding (see the module's docstring), float32, NaN where
    ``stored`` is the fill value or outside ``valid_range``."""
    scale, offset = scale_and_offset(attrs)
    data = stored.astype(np.float64)
    if scale > 1 and "calibrated_nt" in attrs:
        values = (data - offset) / scale
    else:
        values = data * scale + offset
    values = values.astype(np.float32)
    values[~valid_mask(stored, attrs)] = np.nan
    return values


class ModisGridReader(ModisReader):
    """MODIS HDF-EOS2 grid products in HDF4 (sinusoidal tiles, geographic CMGs), recognised
    by the HDF4 signature, the short name in their ECS core metadata and a grid in
    StructMetadata.0."""

    name = READER

    @classmethod
    def refusal(cls, short_name: str, struct: dict[str, Any]) -> str | None:
        grids = _grids(struct)
        if not grids:
            return f"CoreMetadata.0 names {short_name!r}, but StructMetadata.0 declares no grid"
        unread = sorted({g["Projection"] for g in grids} - set(PROJECTIONS))
        if unread:
            return f"{short_name!r} is a grid in {', '.join(unread)}, which nearline does not read"
        return None

    def open(self, path: Path) -> Granule:
        return ModisGridGranule(Path(path))
