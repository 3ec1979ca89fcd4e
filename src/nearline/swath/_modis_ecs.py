"""What MODIS HDF4 files say of themselves: the ECS inventory (``CoreMetadata.0``), the HDF-EOS
structure (``StructMetadata.0``), and SDS values decoded by their own attributes.

Both are ODL text in global attributes. ECS splits an attribute longer than its limit into
``NAME.0``, ``NAME.1``, ... (HDF-EOS2 at 32,000 characters for ``StructMetadata``), and older
files spell it in lower case (``coremetadata.0``): :func:`metadata_text` joins the pieces.

The MODIS science teams scale as ``value = scale_factor * (stored - add_offset)`` (the HDF4
User's Guide's ``SDsetcal`` convention; the files' ``Slope_and_Offset_Usage`` attribute says so).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.errors import GranuleError

HDF4_MAGIC = b"\x0e\x03\x13\x01"
PLATFORMS = {"MOD": "terra", "MYD": "aqua", "MCD": "terra+aqua"}

# Short names nearline does not read, by the MODIS naming scheme: level 0/1 and geolocation
LEVEL1 = (
    (re.compile(r"M[OY]D00"), "a Level-0 product"),
    (re.compile(r"M[OY]D01(?!\d)"), "a Level-1A product"),
    (re.compile(r"M[OY]D02"), "a Level-1B product"),  # MOD021KM, MOD02HKM, MOD02QKM, ...
    (re.compile(r"M[OY]D03(?!\d)"), "a geolocation product"),
)


def out_of_scope(short_name: str) -> str | None:
    """Why nearline does not read ``short_name`` (a MODIS Level-0/1 or geolocation product
    such as MOD021KM or MOD03), or None."""
    for pattern, what in LEVEL1:
        if pattern.match(short_name):
            return what
    return None


def is_hdf4(path: Path) -> bool:
    """Whether ``path`` starts with the HDF4 signature (False for what cannot be read)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == HDF4_MAGIC
    except OSError:
        return False


def open_sd(path: Path) -> Any:
    """``path`` open through pyhdf's SD interface; GranuleError naming it if HDF4 cannot."""
    from pyhdf.error import HDF4Error
    from pyhdf.SD import SD, SDC

    try:
        return SD(str(path), SDC.READ)
    except HDF4Error as error:
        raise GranuleError(
            f"granule {path}: HDF4 cannot open it ({error}); it is truncated or corrupt"
        ) from None


def metadata_text(attributes: dict[str, Any], name: str) -> str | None:
    """Global attribute ``name`` (``"CoreMetadata"``, ``"StructMetadata"``) with its pieces
    ``.0``, ``.1``, ... joined, in either case; None if the file has no ``.0``."""
    pieces = {}
    for key, value in attributes.items():
        match = re.fullmatch(rf"{name}\.(\d+)", key, re.IGNORECASE)
        if match and isinstance(value, str):
            pieces[int(match.group(1))] = value
    if 0 not in pieces:
        return None
    return "".join(pieces[i] for i in sorted(pieces)).replace("\x00", "")


def ecs_value(text: str, name: str) -> str | None:
    """The VALUE of ODL object ``name`` in ECS metadata text (quotes removed), or None."""
    match = re.search(
        rf"OBJECT\s*=\s*{re.escape(name)}\s*$(.*?)END_OBJECT\s*=\s*{re.escape(name)}\s*$",
        text,
        re.MULTILINE | re.DOTALL,
    )
    if match is None:
        return None
    value = re.search(r"^\s*VALUE\s*=\s*(.*?)\s*(?=^\s*\w+\s*=|\Z)", match.group(1),
                      re.MULTILINE | re.DOTALL)  # fmt: skip
    return None if value is None else " ".join(value.group(1).split()).strip('"() ')


def ecs_numbers(text: str, name: str) -> list[float] | None:
    """The numbers of a multi-valued ODL object (``GRINGPOINTLONGITUDE``), or None."""
    value = ecs_value(text, name)
    if value is None:
        return None
    try:
        return [float(part) for part in value.replace('"', "").split(",")]
    except ValueError:
        return None


def ecs_time(core: str, which: str, path: Path) -> datetime:
    """``RANGE{which}DATE`` and ``TIME`` (``which``: ``BEGINNING`` or ``ENDING``), UTC."""
    day = ecs_value(core, f"RANGE{which}DATE")
    clock = ecs_value(core, f"RANGE{which}TIME")
    if not day or not clock:
        raise GranuleError(f"granule {path}: CoreMetadata.0 has no RANGE{which}DATE/TIME")
    try:
        return datetime.fromisoformat(f"{day}T{clock}").replace(tzinfo=UTC)
    except ValueError:
        raise GranuleError(
            f"granule {path}: RANGE{which}DATE/TIME {day!r} {clock!r} is not a date and time"
        ) from None


def platform_of(core: str, short_name: str) -> str:
    """The platform, lower case, as CoreMetadata names it; else by the short name's prefix."""
    name = ecs_value(core, "ASSOCIATEDPLATFORMSHORTNAME")
    return name.lower() if name else PLATFORMS.get(short_name[:3], "unknown")


# -- HDF-EOS StructMetadata (ODL) ------------------------------------------------------------
def parse_odl(text: str) -> dict[str, Any]:
    """HDF-EOS ``StructMetadata`` as nested dicts: a GROUP or OBJECT is a dict under its name,
    a value a string (quotes removed) or, for a parenthesised list, a list of strings."""
    root: dict[str, Any] = {}
    stack = [root]
    for raw in text.splitlines():
        line = raw.strip()
        if "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        if key in ("GROUP", "OBJECT"):
            child: dict[str, Any] = {}
            stack[-1][value] = child
            stack.append(child)
        elif key in ("END_GROUP", "END_OBJECT"):
            if len(stack) > 1:
                stack.pop()
        elif value.startswith("(") and value.endswith(")"):
            stack[-1][key] = [part.strip().strip('"') for part in value[1:-1].split(",")]
        else:
            stack[-1][key] = value.strip('"')
    return root


def structures(struct: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The swaths (``kind="Swath"``) or grids (``"Grid"``) a StructMetadata declares."""
    group = struct.get(f"{kind}Structure", {})
    return [value for value in group.values() if isinstance(value, dict)]


def members(structure: dict[str, Any], group: str, key: str) -> list[dict[str, Any]]:
    """The objects of a structure's ``group`` (``GeoField``, ``DataField``, ``Dimension``,
    ``DimensionMap``) that name ``key`` (``GeoFieldName``, ...)."""
    found = structure.get(group, {})
    return [obj for obj in found.values() if isinstance(obj, dict) and key in obj]


# -- decoding ----------------------------------------------------------------------------------
def scale_and_offset(attrs: dict[str, Any]) -> tuple[float, float]:
    """The SDS's (scale_factor, add_offset). A scale_factor of 0 with a non-zero add_offset
    is taken as the pair written the wrong way round (Collection 4 MOD04_L2's
    ``Error_Path_Radiance_Land``: 0.0 and 1e-4): a scale of 0 would make every value 0."""
    scale = float(np.ravel(attrs.get("scale_factor", 1.0))[0])
    offset = float(np.ravel(attrs.get("add_offset", 0.0))[0])
    if scale == 0.0 and offset != 0.0:
        return offset, 0.0
    return scale, offset


def valid_mask(stored: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """Where ``stored`` is neither ``_FillValue`` nor outside ``valid_range``. A range whose
    low end exceeds its high end (``[0, -1]`` on an int8 SDS: bytes meant unsigned) bounds
    nothing."""
    good = np.ones(stored.shape, bool)
    if "_FillValue" in attrs:
        good &= stored != np.ravel(attrs["_FillValue"])[0]
    if "valid_range" in attrs:
        low, high = np.ravel(attrs["valid_range"])[:2]
        if low <= high:
            good &= (stored >= low) & (stored <= high)
    return good


def decode(stored: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """``scale_factor * (stored - add_offset)`` as float32, NaN where ``stored`` is the fill
    value or outside ``valid_range``."""
    scale, offset = scale_and_offset(attrs)
    values = (scale * (stored.astype(np.float64) - offset)).astype(np.float32)
    values[~valid_mask(stored, attrs)] = np.nan
    return values


def is_flags(stored_dtype: np.dtype, attrs: dict[str, Any], shape: tuple[int, ...] = ()) -> bool:
    """Whether an SDS holds bit flags, handed out as stored: an integer SDS without a
    scale_factor; one whose ``valid_range`` is inverted (the atmosphere products' QA bytes,
    int8 with ``[0, -1]``: every byte value); or bytes (8-bit) with a trailing dimension of a
    few bytes and an identity scale (Collection 6 MOD06_L2's ``Quality_Assurance_5km``,
    ``Cloud_Mask_5km``: ``scale_factor`` 1, ``add_offset`` 0, ``_FillValue`` 0, which is also
    a byte of valid flags)."""
    if not np.issubdtype(stored_dtype, np.integer):
        return False
    if "scale_factor" not in attrs:
        return True
    if "valid_range" in attrs:
        low, high = np.ravel(attrs["valid_range"])[:2]
        if low > high:
            return True
    identity = scale_and_offset(attrs) == (1.0, 0.0)
    return identity and np.dtype(stored_dtype).itemsize == 1 and len(shape) == 3 and shape[2] <= 16


def as_unsigned(stored: np.ndarray) -> np.ndarray:
    """Signed integer flags viewed as the unsigned bytes they are meant as."""
    if np.issubdtype(stored.dtype, np.signedinteger):
        return stored.view(stored.dtype.str.replace("i", "u"))
    return stored
