"""MODIS Level-2 swath granules (MOD04_L2, MOD05_L2, MOD06_L2, MOD11_L2, ..., and Aqua's MYD
twins), HDF4, whatever the product.

A file is one when its ECS ``CoreMetadata.0`` names a product that is not Level 0/1 or
geolocation and its HDF-EOS ``StructMetadata.0`` declares a swath whose geolocation fields
are ``Latitude`` and ``Longitude``. Everything is read from the file: short name, platform
and time range from ``CoreMetadata.0``; the swath's data fields from ``StructMetadata.0``;
where the geolocation sits on the 1 km lines and frames from the ``Cell_Along_Swath_Sampling``
and ``Cell_Across_Swath_Sampling`` attributes of ``Latitude`` (``[first, last, step]``,
1-based: MOD04_L2 ``[5, 2025, 10]``, 10 km; the others ``[3, 2028, 5]``, 5 km), else from
the swath's HDF-EOS dimension map (offset, increment), else every fifth line and frame from
the third (MOD11_L2 says nothing and is so); each field decoded by its own attributes
(:func:`~nearline.swath._modis_ecs.decode`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from nearline.errors import GranuleError
from nearline.swath._base import Granule, tie_rows
from nearline.swath._modis_ecs import decode, members, structures
from nearline.swath._modis_ecs import ecs_value as ecs_value
from nearline.swath._modis_file import ModisFile, ModisReader

# without a sampling attribute or a dimension map: every fifth 1 km line and frame from the
# third (0-based 2); FRAMES across a scan unless Maximum_Number_of_1km_Frames says
from nearline.swath._modis_products import FRAMES, GEO_FIRST, GEO_STEP

READER = "modis-l2"
GEOFIELDS = ("Latitude", "Longitude")


def geolocated_swath(struct: dict[str, Any]) -> dict[str, Any] | None:
    """The first swath of a StructMetadata whose geolocation fields include Latitude and
    Longitude, or None."""
    for swath in structures(struct, "Swath"):
        names = {obj["GeoFieldName"] for obj in members(swath, "GeoField", "GeoFieldName")}
        if set(GEOFIELDS) <= names:
            return swath
    return None


class ModisGranule(ModisFile):
    """An open MODIS Level-2 swath granule.

    ``n_lines`` counts 1 km lines (2030 for a full 5-minute granule): geolocation rows times
    their step. The geolocation has one row every step lines (``geo_pixels``), which is what
    the footprint samples.
    """

    reader = READER
    kind: ClassVar[str] = "Level-2"

    def _setup(self) -> None:
        swath = geolocated_swath(self.struct)
        if swath is None:
            raise GranuleError(
                f"granule {self.path}: StructMetadata.0 declares no swath with Latitude and "
                "Longitude geolocation fields"
            )
        self.swath = swath
        datasets = set(self._sd.datasets())
        declared = [obj["DataFieldName"] for obj in members(swath, "DataField", "DataFieldName")]
        fields = [name for name in declared if name in datasets and name not in GEOFIELDS]
        if not fields:  # a swath that declares none: every SDS but the geolocation
            fields = sorted(datasets - set(GEOFIELDS))
        self.fields = tuple(fields)
        shape = self._shape("Latitude")
        if len(shape) != 2 or self._shape("Longitude") != shape:
            raise GranuleError(
                f"granule {self.path}: Latitude {shape} and Longitude "
                f"{self._shape('Longitude')} are not one two-dimensional grid"
            )
        self.geo_rows, self.geo_columns = shape
        frames = self.attributes.get("Maximum_Number_of_1km_Frames", FRAMES)
        self.frames = int(np.ravel(frames)[0])
        self._sampling = self._geo_sampling()
        self.n_lines = self.geo_rows * self._sampling[0][1]
        self.edge_reach = self._edge_reach()
        self._check_geolocation()

    def _geo_sampling(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """(first, step) of the geolocation along and across track, in 0-based 1 km lines
        and frames."""
        attrs = self._attributes("Latitude")
        geo = next(
            obj for obj in members(self.swath, "GeoField", "GeoFieldName")
            if obj["GeoFieldName"] == "Latitude"
        )  # fmt: skip
        dims = list(geo.get("DimList", []))
        maps = {
            obj.get("GeoDimension"): (int(obj["Offset"]), int(obj["Increment"]))
            for obj in members(self.swath, "DimensionMap", "GeoDimension")
        }
        found = []
        for index, name in enumerate(("Cell_Along_Swath_Sampling", "Cell_Across_Swath_Sampling")):
            if name in attrs and len(np.ravel(attrs[name])) == 3:
                first, _, step = (int(v) for v in np.ravel(attrs[name]))
                found.append((first - 1, step))
            elif index < len(dims) and dims[index] in maps:
                found.append(maps[dims[index]])
            else:
                found.append((GEO_FIRST, GEO_STEP))
        for first, step in found:
            if step < 1 or first < 0:
                raise GranuleError(
                    f"granule {self.path}: geolocation sampling {found} is not a first line "
                    "and a step"
                )
        return found[0], found[1]

    def _edge_reach(self) -> float:
        """How far the swath's outermost frames lie beyond the outermost geolocation
        column, in geolocation steps (the footprint grows the swath by this much)."""
        _, frames = self.geo_pixels()
        step = self._sampling[1][1]
        return float(max(frames[0], self.frames - 1 - frames[-1], 0) / step)

    def read_lonlat(self, grid: str = "geo") -> tuple[np.ndarray, np.ndarray]:
        """Longitude and latitude, float32 degrees, NaN where the file holds its fill value.

        ``grid="geo"`` (or its resolution, ``"5km"``/``"10km"``): the file's own
        (``geo_rows``, ``geo_columns``), sitting on the 1 km lines and frames
        ``geo_pixels()``; ``"1km"``: every 1 km line and frame (``n_lines``, ``frames``),
        interpolated linearly on the unit sphere between them.
        """
        lon, lat = self._geolocation("Longitude"), self._geolocation("Latitude")
        if grid in ("geo", "5km", "10km"):
            return lon, lat
        if grid != "1km":
            raise GranuleError(f"grid: expected 'geo', '5km', '10km' or '1km', got {grid!r}")
        lines, frames = self.geo_pixels()
        phi, lam = np.radians(lat.astype(np.float64)), np.radians(lon.astype(np.float64))
        xyz = [np.cos(phi) * np.cos(lam), np.cos(phi) * np.sin(lam), np.sin(phi)]
        x, y, z = (interpolate(v, lines, frames, self.n_lines, self.frames) for v in xyz)
        lon1 = np.degrees(np.arctan2(y, x)).astype(np.float32)
        lat1 = np.degrees(np.arctan2(z, np.hypot(x, y))).astype(np.float32)
        return lon1, lat1

    def geo_pixels(self) -> tuple[np.ndarray, np.ndarray]:
        """The 1 km lines and frames (0-based) the geolocation rows and columns sit on."""
        (along, along_step), (across, across_step) = self._sampling
        lines = along + along_step * np.arange(self.geo_rows)
        frames = across + across_step * np.arange(self.geo_columns)
        return lines, frames

    def _geolocation(self, name: str) -> np.ndarray:
        values, attrs = self._get(name)
        decoded = decode(values.astype(np.float32), attrs)
        return averaged_across_antimeridian(decoded)[0] if name == "Longitude" else decoded

    def _check_geolocation(self) -> None:
        """Say in ``warnings`` how many longitudes had to be put back on the antimeridian."""
        lon, _ = self._get("Longitude")
        _, repaired = averaged_across_antimeridian(lon.astype(np.float32))
        if repaired:
            self.warnings = (
                f"{repaired} Longitude values averaged across ±180 (near 0 between neighbours "
                "at ±180) were put back on the antimeridian",
            )

    def read_tie_lonlat(self, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Geolocation rows ``0, step, 2 step, ...`` and the last (what the footprint is made
        of; the file is verified whole first, so that nothing damaged is catalogued)."""
        self.verify()
        rows = tie_rows(self.geo_rows, step)
        lon, lat = self.read_lonlat()
        return lon[rows], lat[rows]


def averaged_across_antimeridian(lon: np.ndarray) -> tuple[np.ndarray, int]:
    """Longitudes with those the product averaged as plain numbers across ±180 put back,
    and how many there were.

    A coarse geolocation point is the mean of the 1 km points of its cell; where the cell
    straddles the antimeridian, Collection 4 MOD04_L2 averaged +179.9 and -179.9 to about 0
    (7 points of the real 2001-03-07 00:00 granule, 0.003 degrees between neighbours at
    179.8 and -179.8). Such a point, more than 90 degrees from both its across-track
    neighbours while they lie within 20 degrees of each other across ±180, is given their
    mean on the circle (the cell's true place, within a tenth of a degree)."""
    lon = np.array(lon, copy=True)
    if lon.ndim != 2 or lon.shape[1] < 3:
        return lon, 0
    left, middle, right = lon[:, :-2], lon[:, 1:-1], lon[:, 2:]
    with np.errstate(invalid="ignore"):
        across = np.abs(_wrapped(right - left)) < 20
        straddle = across & (np.abs(left) > 160) & (np.abs(right) > 160)
        mean = left + _wrapped(right - left) / 2
        wrong = straddle & (np.abs(_wrapped(middle - mean)) > 90)
    middle[wrong] = _wrapped(mean[wrong])
    return lon, int(wrong.sum())


def _wrapped(degrees: np.ndarray) -> np.ndarray:
    return (degrees + 180.0) % 360.0 - 180.0


def interpolate(
    values: np.ndarray, lines: np.ndarray, frames: np.ndarray, n_lines: int, n_frames: int
) -> np.ndarray:
    """A field given on 1 km ``lines`` x ``frames`` to every 1 km line and frame, linearly,
    extrapolating linearly beyond the outermost ones (float64)."""
    return _along(_along(values, frames, n_frames, axis=1), lines, n_lines, axis=0)


def _along(values: np.ndarray, at: np.ndarray, size: int, *, axis: int) -> np.ndarray:
    position = (np.arange(size) - at[0]) / (at[1] - at[0]) if at.size > 1 else np.zeros(size)
    low = np.clip(np.floor(position).astype(int), 0, max(at.size - 2, 0))
    high = np.minimum(low + 1, at.size - 1)
    weight = position - low
    shape = [1, 1]
    shape[axis] = size
    weight = weight.reshape(shape)
    first, second = np.take(values, low, axis=axis), np.take(values, high, axis=axis)
    return first * (1 - weight) + second * weight


class ModisL2Reader(ModisReader):
    """MODIS Level-2 swath products in HDF4, recognised by the HDF4 signature, the short name
    in their ECS core metadata and an HDF-EOS swath geolocated by Latitude and Longitude."""

    name = READER

    @classmethod
    def refusal(cls, short_name: str, struct: dict[str, Any]) -> str | None:
        if geolocated_swath(struct) is not None:
            return None
        if structures(struct, "Grid"):
            return f"CoreMetadata.0 names {short_name!r}, a gridded product (modis-grid's)"
        return (
            f"CoreMetadata.0 names {short_name!r}, but StructMetadata.0 declares no swath "
            "with Latitude and Longitude"
        )

    def open(self, path: Path) -> Granule:
        return ModisGranule(Path(path))
