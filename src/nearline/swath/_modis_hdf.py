"""Writing a MODIS Level-2 granule in its HDF4 layout: the SDS with the product's dimension
names and attributes, and the HDF-EOS global attributes (``CoreMetadata.0`` with the
inventory a reader takes the short name, platform and time range from; ``StructMetadata.0``
with the swath's dimensions and the 5 km to 1 km dimension maps; ``ArchiveMetadata.0``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.swath._modis_products import FRAMES, GEO_FIRST, GEO_STEP, Field, Product

HDF_TYPES = {"int8": "INT8", "uint8": "UINT8", "int16": "INT16", "uint16": "UINT16",
             "float32": "FLOAT32", "float64": "FLOAT64"}  # fmt: skip
GEO_FILL = -999.9


@dataclass(frozen=True)
class Inventory:
    """What ``CoreMetadata.0`` says of a granule."""

    short_name: str
    platform: str  # "Terra" or "Aqua"
    local_granule_id: str  # the file's name
    start: datetime
    end: datetime
    produced: datetime
    day_night: str  # "Day", "Night" or "Both"


def write_granule(
    path: Path,
    product: Product,
    inventory: Inventory,
    lon: np.ndarray,
    lat: np.ndarray,
    stored: dict[str, np.ndarray],
) -> None:
    """Write one granule: geolocation (5 km) and each field's stored values as given."""
    from pyhdf.SD import SD, SDC

    sd = SD(str(path), SDC.WRITE | SDC.CREATE | SDC.TRUNC)
    try:
        rows, columns = lat.shape
        lines = _lines(product, stored, rows)
        _attr(sd, "HDFEOSVersion", "HDFEOS_V2.19")
        _attr(sd, "StructMetadata.0", struct_metadata(product, lines, rows, columns))
        _attr(sd, "CoreMetadata.0", core_metadata(inventory))
        _attr(sd, "ArchiveMetadata.0", archive_metadata(product))
        _attr(sd, "Number_of_Instrument_Scans", lines // 10, SDC.INT32)
        _attr(sd, "Maximum_Number_of_1km_Frames", FRAMES, SDC.INT32)
        _attr(sd, "title", f"MODIS HDF File Specification {product.short_name}: {product.title}")
        first, step = product.geo_first, product.geo_step
        sampling = {
            "Cell_Along_Swath_Sampling": [first + 1, first + 1 + step * (rows - 1), step],
            "Cell_Across_Swath_Sampling": [first + 1, first + 1 + step * (columns - 1), step],
        }
        for name, values, span, units in (("Latitude", lat, 90.0, "degrees_north"),
                                          ("Longitude", lon, 180.0, "degrees_east")):  # fmt: skip
            with _sds(sd, name, "float32", product.dims[product.geo].split(","), values) as sds:
                _attr(sds, "valid_range", [-span, span], SDC.FLOAT32)
                _attr(sds, "_FillValue", GEO_FILL, SDC.FLOAT32)
                _attr(sds, "long_name", f"Geodetic {name}")
                _attr(sds, "units", units)
                if product.short_name != "MOD11_L2":  # the atmosphere products' CDL lists these
                    _attr(sds, "scale_factor", 1.0, SDC.FLOAT64)
                    _attr(sds, "add_offset", 0.0, SDC.FLOAT64)
                    for key, value in sampling.items():
                        _attr(sds, key, value, SDC.INT32)
        for field in product.fields:
            dims = product.dims[field.grid].split(",") + ([field.qa_dim] if field.qa_dim else [])
            with _sds(sd, field.name, field.dtype, dims, stored[field.name]) as sds:
                _field_attributes(sds, field)
    finally:
        sd.end()


def _lines(product: Product, stored: dict[str, np.ndarray], rows: int) -> int:
    """1 km lines of the granule: a 1 km field's rows, else five per geolocation row."""
    for field in product.fields:
        if field.grid == "1km":
            return int(stored[field.name].shape[0])
    return rows * product.geo_step


def _field_attributes(sds: Any, field: Field) -> None:
    from pyhdf.SD import SDC

    kind = getattr(SDC, HDF_TYPES[field.dtype])
    _attr(sds, "long_name", field.long_name)
    _attr(sds, "units", field.units)
    if field.valid_range is not None:
        _attr(sds, "valid_range", list(field.valid_range), kind)
    _attr(sds, "_FillValue", field.fill, kind)
    if field.scale_factor is not None:
        _attr(sds, "scale_factor", field.scale_factor, SDC.FLOAT64)
        _attr(sds, "add_offset", field.add_offset, SDC.FLOAT64)


@contextmanager
def _sds(sd: Any, name: str, dtype: str, dims: list[str], values: np.ndarray) -> Iterator[Any]:
    from pyhdf.SD import SDC

    sds = sd.create(name, getattr(SDC, HDF_TYPES[dtype]), values.shape)
    try:
        for index, dim in enumerate(dims):
            sds.dim(index).setname(dim)
        sds[:] = np.ascontiguousarray(values, dtype)
        yield sds
    finally:
        sds.endaccess()


def _attr(target: Any, name: str, value: Any, kind: Any = None) -> None:
    """Set attribute ``name`` of an SDS or of the file (text unless ``kind`` is given)."""
    from pyhdf.SD import SDC

    attribute = target.attr(name)
    attribute.set(SDC.CHAR8 if kind is None else kind, value)


# -- ECS metadata (ODL text) -----------------------------------------------------------------
def _object(name: str, value: Any, indent: str, *, cls: str | None = None) -> list[str]:
    text = f'"{value}"' if isinstance(value, str) else str(value)
    head = [f"{indent}OBJECT                 = {name}"]
    if cls is not None:
        head.append(f'{indent}  CLASS                = "{cls}"')
    return [
        *head,
        f"{indent}  NUM_VAL              = 1",
        f"{indent}  VALUE                = {text}",
        f"{indent}END_OBJECT             = {name}",
    ]


def _group(name: str, body: list[str], indent: str = "  ") -> list[str]:
    return [f"{indent}GROUP                  = {name}", "", *body, "",
            f"{indent}END_GROUP              = {name}", ""]  # fmt: skip


def _master(name: str) -> list[str]:
    return [f"GROUP                  = {name}", "  GROUPTYPE            = MASTERGROUP", ""]


def core_metadata(inventory: Inventory) -> str:
    """``CoreMetadata.0``: the inventory metadata readers take a granule's identity from."""
    i = "    "
    lines = ["", *_master("INVENTORYMETADATA")]
    lines += _group("ECSDATAGRANULE", [
        *_object("LOCALGRANULEID", inventory.local_granule_id, i),
        *_object("PRODUCTIONDATETIME", f"{inventory.produced:%Y-%m-%dT%H:%M:%S.000Z}", i),
        *_object("DAYNIGHTFLAG", inventory.day_night, i),
        *_object("LOCALVERSIONID", "6.1.0", i),
    ])  # fmt: skip
    lines += _group("RANGEDATETIME", [
        *_object("RANGEBEGINNINGDATE", f"{inventory.start:%Y-%m-%d}", i),
        *_object("RANGEBEGINNINGTIME", f"{inventory.start:%H:%M:%S.%f}", i),
        *_object("RANGEENDINGDATE", f"{inventory.end:%Y-%m-%d}", i),
        *_object("RANGEENDINGTIME", f"{inventory.end:%H:%M:%S.%f}", i),
    ])  # fmt: skip
    lines += _group("COLLECTIONDESCRIPTIONCLASS", [
        *_object("SHORTNAME", inventory.short_name, i),
        *_object("VERSIONID", 61, i),
    ])  # fmt: skip
    container = "ASSOCIATEDPLATFORMINSTRUMENTSENSORCONTAINER"
    platform = [
        f'{i}OBJECT                 = {container}',
        f'{i}  CLASS                = "1"',
        *_object("ASSOCIATEDSENSORSHORTNAME", "MODIS", i + "  ", cls="1"),
        *_object("ASSOCIATEDPLATFORMSHORTNAME", inventory.platform, i + "  ", cls="1"),
        *_object("ASSOCIATEDINSTRUMENTSHORTNAME", "MODIS", i + "  ", cls="1"),
        f"{i}END_OBJECT             = {container}",
    ]  # fmt: skip
    lines += _group("ASSOCIATEDPLATFORMINSTRUMENTSENSOR", platform)
    lines += ["END_GROUP              = INVENTORYMETADATA", "", "END", ""]
    return "\n".join(lines)


def archive_metadata(product: Product) -> str:
    """``ArchiveMetadata.0``: the little of it that describes the algorithm's run."""
    body = _object("ALGORITHMPACKAGENAME", product.short_name, "    ")
    body += _object("ALGORITHMPACKAGEVERSION", "6.1", "    ")
    lines = ["", *_master("ARCHIVEDMETADATA"), *body]
    lines += ["", "END_GROUP              = ARCHIVEDMETADATA", "", "END", ""]
    return "\n".join(lines)


def struct_metadata(product: Product, lines: int, rows: int, columns: int) -> str:
    """``StructMetadata.0``: the HDF-EOS swath, its dimensions, 5 km to 1 km maps and fields."""
    along5, across5 = product.dims[product.geo].split(",")
    along1, across1 = product.dims.get("1km", product.dims[product.geo]).split(",")
    sizes = {along5: rows, across5: columns} | ({along1: lines, across1: FRAMES}
                                                 if "1km" in product.dims else {})  # fmt: skip
    sizes |= {f.qa_dim: f.qa_bytes for f in product.fields if f.qa_dim}
    out = ["GROUP=SwathStructure", "\tGROUP=SWATH_1", f'\t\tSwathName="{product.swath}"']
    out.append("\t\tGROUP=Dimension")
    for n, (name, size) in enumerate(sizes.items(), 1):
        out += [f"\t\t\tOBJECT=Dimension_{n}", f'\t\t\t\tDimensionName="{name}"',
                f"\t\t\t\tSize={size}", f"\t\t\tEND_OBJECT=Dimension_{n}"]  # fmt: skip
    out += ["\t\tEND_GROUP=Dimension", "\t\tGROUP=DimensionMap"]
    maps = ((across5, across1), (along5, along1)) if "1km" in product.dims else ()
    for n, (geo, data) in enumerate(maps, 1):
        out += [f"\t\t\tOBJECT=DimensionMap_{n}", f'\t\t\t\tGeoDimension="{geo}"',
                f'\t\t\t\tDataDimension="{data}"', f"\t\t\t\tOffset={GEO_FIRST}",
                f"\t\t\t\tIncrement={GEO_STEP}", f"\t\t\tEND_OBJECT=DimensionMap_{n}"]  # fmt: skip
    out += ["\t\tEND_GROUP=DimensionMap", "\t\tGROUP=IndexDimensionMap",
            "\t\tEND_GROUP=IndexDimensionMap", "\t\tGROUP=GeoField"]  # fmt: skip
    for n, name in enumerate(("Latitude", "Longitude"), 1):
        out += _field_object("GeoField", n, name, "DFNT_FLOAT32", [along5, across5])
    out += ["\t\tEND_GROUP=GeoField", "\t\tGROUP=DataField"]
    for n, field in enumerate(product.fields, 1):
        dims = product.dims[field.grid].split(",") + ([field.qa_dim] if field.qa_dim else [])
        out += _field_object("DataField", n, field.name, f"DFNT_{HDF_TYPES[field.dtype]}", dims)
    out += ["\t\tEND_GROUP=DataField", "\t\tGROUP=MergedFields", "\t\tEND_GROUP=MergedFields",
            "\tEND_GROUP=SWATH_1", "END_GROUP=SwathStructure", "GROUP=GridStructure",
            "END_GROUP=GridStructure", "GROUP=PointStructure", "END_GROUP=PointStructure",
            "END", ""]  # fmt: skip
    return "\n".join(out)


def _field_object(kind: str, n: int, name: str, hdf_type: str, dims: list[str]) -> list[str]:
    dim_list = ",".join(f'"{dim}"' for dim in dims)
    return [f"\t\t\tOBJECT={kind}_{n}", f'\t\t\t\t{kind}Name="{name}"',
            f"\t\t\t\tDataType={hdf_type}", f"\t\t\t\tDimList=({dim_list})",
            f"\t\t\tEND_OBJECT={kind}_{n}"]  # fmt: skip
