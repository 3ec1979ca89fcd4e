"""Harmony-style subsetting of swath granules: the format family that cuts a granule, chosen
by the reader that opens it, and the publishing of the cut under its final name
(docs/swath.md, *Subsetting swath granules*; the request and rows: ``_subset_request``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nearline.durable import publishing
from nearline.errors import SubsetError
from nearline.swath._subset_request import SUFFIX, SubsetRequest, SubsetResult

__all__ = ["SubsetRequest", "SubsetResult", "subset_granule", "subset_name"]

NETCDF_READERS = ("nearline-avhrr", "avhrr-l1c", "cf-netcdf")


def subset_name(source: Path, reader: str) -> str:
    """The cut file's name: for netCDF the source's stem, ``.subset`` and ``.nc``; for MODIS
    the source's LAADS name with ``.hdf`` (readers such as satpy's know MODIS files by that
    name, so it stays; the cut differs by its folder); a GAC file's data set name, which has
    no extension, gets ``.subset``."""
    stem = source.stem if source.suffix else source.name
    if reader in NETCDF_READERS:
        return f"{stem}.{SUFFIX}.nc"
    if reader == "modis-l2":
        return f"{stem}.hdf"
    return f"{source.name}.{SUFFIX}"


def subset_granule(
    source: str | Path, out: str | Path, request: SubsetRequest | Mapping[str, Any] | None
) -> SubsetResult:
    """Cut one granule to ``request`` and write it, in the source's own format, to ``out``
    (a file, or an existing folder that gets :func:`subset_name`).

    Parameters
    ----------
    source
        A swath granule any of the readers in the table of docs/swath.md opens, but for the
        gridded ones (MODIS tiles, composites: their Coverages API cuts those).
    out
        The file to write, or an existing folder to write it in.
    request
        A :class:`SubsetRequest` or its JSON form.

    Returns
    -------
    SubsetResult
        The written path, the rows kept and their times, and the variables written.

    Raises
    ------
    SubsetError
        A request this granule cannot answer (an unknown variable, a format without lines).
    SubsetEmpty
        No row of the granule lies in the box and window; nothing is written.
    """
    from nearline.swath._registry import open_granule

    source = Path(source)
    if not isinstance(request, SubsetRequest):
        request = SubsetRequest.from_dict(request)
    out = Path(out)
    with open_granule(source) as granule:
        reader = granule.reader
    target = out / subset_name(source, reader) if out.is_dir() else out
    if target.exists() and target.resolve() == source.resolve():
        raise SubsetError(
            f"granule {source.name}: the cut would be written over the granule itself; "
            "write it to another folder"
        )
    cut = _cutter(reader, source)
    with publishing(target) as temporary:
        result = cut(source, temporary, request)
    return SubsetResult(
        target,
        result.first,
        result.stop,
        result.source_rows,
        result.start,
        result.end,
        result.variables,
    )


def _cutter(reader: str, source: Path) -> Any:
    if reader in NETCDF_READERS:
        from nearline.swath._subset_cf import cut_netcdf

        return cut_netcdf
    if reader == "modis-l2":
        from nearline.swath._subset_modis import cut_modis

        return cut_modis
    if reader == "avhrr-gac":
        from nearline.swath._subset_l1b import cut_l1b

        return cut_l1b
    raise SubsetError(
        f"granule {source.name}: a {reader} file is not a swath of scan lines that can be cut "
        "by rows; gridded products are cut through the Coverages and EDR API (docs/coverage.md)"
    )
