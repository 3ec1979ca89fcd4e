"""What CF (1.x), ACDD (1.3) and the GOES-R product conventions say about a netCDF file,
read the same way for every product that follows them.

- **Recognised by**: the netCDF-4 (HDF5) or netCDF-3 signature, then a marker of the
  conventions: ``Conventions`` naming CF or ACDD, ACDD 1.0's ``Metadata_Conventions``
  (GOES-R files carry it without ``Conventions``), a CF ``standard_name_vocabulary``, or
  ACDD's ``time_coverage_start`` (VGAC has nothing else).
- **Where**: latitude and longitude variables are those with ``standard_name`` latitude and
  longitude, or CF's ``degrees_north``/``degrees_east`` units (and their variants). A scalar
  one with ``bounds`` (GLM's field of view) is an extent; so are ACDD's
  ``geospatial_lat/lon_min/max``.
- **Names**: the product, platform and instrument from the file's own attributes
  (:func:`product_name`, :func:`platform_name`, :func:`instrument_name`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from nearline.errors import GranuleError, NotThisFormat
from nearline.swath._base import Granule, Reader
from nearline.swath.netcdf_granule import HDF5_MAGIC

CDF_SIGNATURES = (b"CDF\x01", b"CDF\x02", b"CDF\x05")  # classic, 64-bit offset, CDF-5
LATITUDE_UNITS = {"degrees_north", "degree_north", "degree_n", "degrees_n", "degreen", "degreesn"}
LONGITUDE_UNITS = {"degrees_east", "degree_east", "degree_e", "degrees_e", "degreee", "degreese"}
# GCMD names and mission names of platforms, in pygac's spelling where it has one
_PLATFORM_ALIASES = {"jpss1": "noaa20", "jpss2": "noaa21", "jpss3": "noaa22", "npp": "snpp",
                     "suominpp": "snpp", "suomi": "snpp"}  # fmt: skip
# GOES-R PUG: OR_<instrument>-<level>-<product>_<platform>_s<start>_e<end>_c<created>.nc
_GOES_R_NAME = re.compile(r"^[A-Z]{2}_(([A-Z]+)-L[0-9][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*)_G(\d\d)_s\d")
_VERSION = re.compile(r"^[Vv]?\d+(\.\d+)*$")


def signature(path: Path) -> str | None:
    """ "netCDF-4" or "netCDF-3" from a file's first bytes; None for anything else."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(8)
    except OSError:
        return None
    if head == HDF5_MAGIC:
        return "netCDF-4"
    return "netCDF-3" if head[:4] in CDF_SIGNATURES else None


def open_dataset(path: Path) -> Any:
    """A netCDF4.Dataset of ``path``; GranuleError naming it if netCDF cannot open it."""
    import netCDF4

    try:
        return netCDF4.Dataset(path, "r")
    except (OSError, RuntimeError, ValueError) as error:
        kind = signature(path) or "netCDF"
        library = "HDF5" if kind == "netCDF-4" else "netCDF"
        raise GranuleError(
            f"granule {path}: a {kind} signature, but {library} cannot open it: truncated or "
            f"corrupt ({error})"
        ) from None


def sniff(path: Path, inspect: Callable[[Any, str], Any], *, unreadable: bool) -> tuple[bool, str]:
    """Whether ``inspect(dataset, kind)`` finds a reader's layout in a netCDF file (anything
    but a phrase saying what is missing), and if not, that phrase. A file with a netCDF
    signature that cannot be read gives ``unreadable``. Never raises."""
    kind = signature(path)
    if kind is None:
        return False, "no netCDF-4/HDF5 or netCDF-3 signature"
    try:
        with open_dataset(path) as dataset:
            layout = inspect(dataset, kind)
    except GranuleError:
        return unreadable, f"a {kind} signature, but it cannot be read: truncated or corrupt"
    return (False, layout) if isinstance(layout, str) else (True, "")


def open_layout(path: Path, inspect: Callable[[Any, str], Any], make: Callable[..., Any]) -> Any:
    """``make(path, dataset, layout)`` of the layout ``inspect`` finds; NotThisFormat naming
    the file if it finds none, GranuleError if the file cannot be read."""
    dataset = open_dataset(path)
    try:
        layout = inspect(dataset, signature(path) or "netCDF")
        if isinstance(layout, str):
            raise NotThisFormat(f"granule {path}: {layout}")
        return make(path, dataset, layout)
    except BaseException:
        dataset.close()
        raise


class LayoutReader(Reader):
    """A netCDF format known by the layout its ``find_layout(dataset, kind)`` finds (anything
    but a phrase saying what is missing), opened as ``make_granule(path, dataset, layout)``;
    ``unreadable``: whether it takes a netCDF file that cannot be read, to say so."""

    unreadable: ClassVar[bool] = False
    find_layout: ClassVar[Callable[[Any, str], Any]]
    make_granule: ClassVar[Callable[..., Granule]]

    @classmethod
    def can_open(cls, path: Path) -> bool:
        return sniff(path, cls.find_layout, unreadable=cls.unreadable)[0]

    @classmethod
    def why_not(cls, path: Path) -> str:
        return sniff(path, cls.find_layout, unreadable=cls.unreadable)[1] or f"a {cls.name} file"

    def open(self, path: Path) -> Granule:
        return open_layout(Path(path), type(self).find_layout, type(self).make_granule)


def attributes(dataset: Any) -> dict[str, Any]:
    """The global attributes, text stripped."""
    found = {}
    for name in dataset.ncattrs():
        value = dataset.getncattr(name)
        found[name] = value.strip() if isinstance(value, str) else value
    return found


def marker(attrs: dict[str, Any]) -> str | None:
    """Which CF or ACDD marker the attributes carry, as a phrase for messages; None if none."""
    conventions = attrs.get("Conventions")
    if isinstance(conventions, str) and re.search(r"\b(CF|ACDD)\b", conventions, re.I):
        return f"Conventions {conventions}"
    metadata = attrs.get("Metadata_Conventions")
    if isinstance(metadata, str) and metadata:
        return f"Metadata_Conventions {metadata!r}"
    vocabulary = attrs.get("standard_name_vocabulary")
    if isinstance(vocabulary, str) and re.search(r"\bCF\b", vocabulary):
        return f"standard_name_vocabulary {vocabulary!r}"
    if "time_coverage_start" in attrs:
        return "ACDD's time_coverage_start"
    return None


def values(variable: Any, key: Any = Ellipsis) -> np.ndarray:
    """``variable[key]`` unpacked (CF's scale_factor, add_offset, _Unsigned) as float64, NaN
    where the file has no value; GranuleError if the bytes cannot be read."""
    try:
        data = variable[key]
    except (OSError, RuntimeError, IndexError, ValueError) as error:
        raise GranuleError(
            f"granule {_path(variable)}: variable {variable.name!r} cannot be read ({error}); "
            "the file is truncated or corrupt"
        ) from None
    return np.ma.filled(np.ma.asarray(data, np.float64), np.nan)


def _path(variable: Any) -> str:
    try:
        return str(variable.group().filepath())
    except ValueError:  # a netCDF library without nc_inq_path
        return "(a netCDF file)"


def _standard(variable: Any, name: str, units: set[str]) -> bool:
    if getattr(variable, "standard_name", None) == name:
        return True
    unit = getattr(variable, "units", None)
    return isinstance(unit, str) and unit.strip().lower() in units


def latitude_longitude(dataset: Any, ndim: int) -> tuple[Any, Any] | None:
    """The first latitude and longitude variables of ``ndim`` dimensions on the same
    dimensions (for a swath, 2: lines and pixels), or None."""
    latitudes = [v for v in dataset.variables.values()
                 if v.ndim == ndim and _standard(v, "latitude", LATITUDE_UNITS)]  # fmt: skip
    longitudes = [v for v in dataset.variables.values()
                  if v.ndim == ndim and _standard(v, "longitude", LONGITUDE_UNITS)]  # fmt: skip
    for latitude in latitudes:
        for longitude in longitudes:
            if longitude.dimensions == latitude.dimensions:
                return latitude, longitude
    return None


def declared_box(dataset: Any, attrs: dict[str, Any]) -> tuple[np.ndarray, str] | None:
    """The extent a file declares, as a closed (lon, lat) ring in one longitude frame, and
    where it was found: a scalar latitude and longitude coordinate's ``bounds`` (the GOES-R
    field of view), else ACDD's ``geospatial_lat/lon_min/max``; None if neither."""
    scalars = [v for v in dataset.variables.values() if v.ndim == 0 and hasattr(v, "bounds")]
    latitude = next((v for v in scalars if _standard(v, "latitude", LATITUDE_UNITS)), None)
    longitude = next((v for v in scalars if _standard(v, "longitude", LONGITUDE_UNITS)), None)
    if latitude is not None and longitude is not None:
        try:
            lat = values(dataset.variables[latitude.bounds])
            lon = values(dataset.variables[longitude.bounds])
            centre = float(values(longitude))
        except KeyError:
            lat = lon = np.array([])
        if lat.size == lon.size == 2 and np.isfinite([*lat, *lon]).all():
            west, east = _eastward(float(lon[0]), float(lon[1]), centre)
            return _box(west, east, float(lat.min()), float(lat.max())), (
                f"{latitude.bounds} and {longitude.bounds}"
            )
    bounds = [attrs.get(f"geospatial_{name}") for name in
              ("lon_min", "lon_max", "lat_min", "lat_max")]  # fmt: skip
    try:
        west, east, south, north = (float(value) for value in bounds)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not (np.isfinite([west, east, south, north]).all() and south <= north):
        return None
    if east < west:  # ACDD 1.3: a minimum above the maximum crosses the antimeridian
        east += 360.0
    return _box(west, east, south, north), "ACDD geospatial_lat/lon_min/max"


def _eastward(first: float, second: float, centre: float) -> tuple[float, float]:
    """The (west, east) of two longitude bounds, east >= west, read so that the interval
    eastward from west holds the coordinate's own value (either order is CF)."""
    for west, east in ((first, second), (second, first)):
        east = west + (east - west) % 360.0
        if not np.isfinite(centre) or (centre - west) % 360.0 <= east - west:
            return west, east
    return first, first + (second - first) % 360.0


def _box(west: float, east: float, south: float, north: float) -> np.ndarray:
    return np.array([[west, south], [east, south], [east, north], [west, north], [west, south]])


def product_name(attrs: dict[str, Any]) -> str:
    """The product as the file names it: a GOES-R ``dataset_name``'s product field
    ("GLM-L2-LCFA"), else ``short_name``, else the collection of a DOI-like ``id``
    ("DOI:10.5676/EUM/AVHRR_GAC_L1C_FDR/V0100": "AVHRR_GAC_L1C_FDR"), else ``title``."""
    found = _GOES_R_NAME.match(str(attrs.get("dataset_name", "")))
    if found:
        return found.group(1)
    for name in ("short_name", "ShortName", "product_short_name"):
        if isinstance(attrs.get(name), str) and attrs[name]:
            return attrs[name]
    identifier = attrs.get("id")
    if isinstance(identifier, str) and "/" in identifier:
        parts = [p for p in identifier.split("/") if p and not _VERSION.match(p)]
        if parts:
            return re.sub(r"\.\d+$", "", parts[-1])
    return str(attrs.get("title", ""))


def platform_name(attrs: dict[str, Any]) -> str:
    """The platform in pygac's spelling ("noaa6", "metopa", "goes16", "noaa20"): GOES-R's
    ``platform_ID`` ("G16"), else the last level of ACDD's ``platform`` (a GCMD keyword
    path: "Earth Observation Satellites > NOAA POES > NOAA-6"), lower case, without
    punctuation or leading zeros; missions named before launch by their flight name
    ("JPSS-1") by their name in orbit ("noaa20")."""
    found = re.fullmatch(r"G(\d\d)", str(attrs.get("platform_ID", "")))
    if found:
        return f"goes{int(found.group(1))}"
    for name in ("platform", "platform_name", "satellite", "spacecraft"):
        value = attrs.get(name)
        if isinstance(value, str) and value:
            return _short(value.split(">")[-1], _PLATFORM_ALIASES)
    return "unknown"


def instrument_name(attrs: dict[str, Any]) -> str:
    """The instrument, lower case: GOES-R's product field begins with it ("GLM-L2-LCFA":
    "glm"); else the last level of ACDD's ``instrument`` (a GCMD path) or ``sensor``."""
    found = _GOES_R_NAME.match(str(attrs.get("dataset_name", "")))
    if found:
        return found.group(2).lower()
    for name in ("instrument", "sensor", "instrument_name"):
        value = attrs.get(name)
        if isinstance(value, str) and value:
            word = re.match(r"\s*([A-Za-z0-9]+)", value.split(">")[-1])
            if word:
                return word.group(1).lower()
    return "unknown"


def _short(name: str, aliases: dict[str, str]) -> str:
    compact = re.sub(r"[^a-z0-9]", "", name.lower())
    compact = re.sub(r"^([a-z]+)0+(\d)", r"\1\2", compact)  # NOAA-06: noaa6
    return aliases.get(compact, compact)
