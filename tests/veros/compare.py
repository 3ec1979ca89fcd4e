"""Two runs' Veros files, compared as HDF5 objects: every group, dataset, dimension scale,
attribute, dtype, chunk shape, filter and fill value, and every value."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

VARYING = {"date_created"}  # a file attribute that differs between any two runs


def objects(path: Path) -> dict[str, dict]:
    with h5py.File(path, "r") as file:
        found = {"/": describe(file)}

        def visit(name: str, item) -> None:  # returning a value would stop the visit
            found[name] = describe(item)

        file.visititems(visit)
        return found


def _attr(value):
    if isinstance(value, np.ndarray) and value.dtype.kind in "OV":  # references to dimensions
        return ("references", value.size)
    if isinstance(value, h5py.Reference | h5py.RegionReference):
        return "ref"
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.tolist())
    return (type(value).__name__, value)


def describe(item) -> dict:
    attrs = {k: _attr(v) for k, v in item.attrs.items() if k not in VARYING}
    if isinstance(item, h5py.Group):
        return {"kind": "group", "attrs": attrs, "members": sorted(item.keys())}
    return {
        "kind": "dataset",
        "attrs": attrs,
        "shape": item.shape,
        "maxshape": item.maxshape,
        "dtype": item.dtype.str,
        "chunks": item.chunks,
        "compression": (item.compression, item.compression_opts, item.shuffle),
        "fillvalue": item.fillvalue,
        "values": item[()] if item.dtype.kind != "O" else None,
    }


def differences(ours: Path, theirs: Path, *, exact: bool) -> list[str]:
    """What differs between two files; values to round-off unless ``exact``."""
    a, b = objects(ours), objects(theirs)
    found = []
    if sorted(a) != sorted(b):
        return [f"objects: {sorted(set(a) ^ set(b))}"]
    for name in a:
        left, right = a[name], b[name]
        for key in left:
            if key == "values":
                fill = left["fillvalue"] if "_FillValue" in left["attrs"] else None
                if not same_values(left[key], right[key], fill, exact=exact):
                    found.append(f"{name}: values differ")
            elif left[key] != right[key]:
                if key == "attrs":
                    keys = {k for k in left[key].keys() | right[key].keys()
                            if left[key].get(k) != right[key].get(k)}  # fmt: skip
                    found.append(f"{name}: attributes {sorted(keys)} differ")
                else:
                    found.append(f"{name}: {key} {left[key]!r} != {right[key]!r}")
    return found


def same_values(ours: np.ndarray, theirs: np.ndarray, fill, *, exact: bool) -> bool:
    """Equal bits, or (not ``exact``) equal to round-off: the same cells hold the fill value
    (land), and the others differ by no more than 1e-9 of the variable's largest magnitude,
    the scale that sums over the domain lose digits at (a sum that cancels to near zero
    keeps only that absolute accuracy), and never closer than 1e-15: a field that is itself
    round-off noise, such as the salt tendency of acc's constant salinity (1e-19), differs
    in every digit between decompositions."""
    if exact or ours.dtype.kind != "f":
        return np.array_equal(ours, theirs, equal_nan=ours.dtype.kind == "f")
    if ours.shape != theirs.shape:
        return False
    land = theirs == fill if fill is not None else np.zeros(theirs.shape, bool)
    if not np.array_equal(ours == fill, land):
        return False
    sea_ours, sea_theirs = ours[~land], theirs[~land]
    scale = np.nanmax(np.abs(sea_theirs), initial=0.0)
    return np.allclose(
        sea_ours, sea_theirs, rtol=1e-9, atol=max(1e-9 * scale, 1e-15), equal_nan=True
    )
