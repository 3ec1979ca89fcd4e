"""Does a test run's output equal what the package expects?

netCDF and HDF5 files are compared by their variables' values (a relative tolerance of 1e-6,
NaN equal to NaN), so a file written by another library version, with other chunking or a new
``history`` attribute, still passes; any other file must match byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

RTOL = 1e-6
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
NETCDF_MAGIC = b"CDF"


def difference(got: Path, want: Path) -> str | None:
    """None when ``got`` equals ``want``; otherwise how they differ, in words."""
    kind = _kind(want)
    if kind != _kind(got):
        return f"is not a {kind} file like the expected one"
    if kind == "bytes":
        return _bytes_difference(got, want)
    try:
        got_values, want_values = _variables(got), _variables(want)
    except OSError as error:
        return f"cannot be read as {kind}: {error}"
    missing = sorted(set(want_values) - set(got_values))
    if missing:
        return f"has no variable {missing[0]!r}"
    extra = sorted(set(got_values) - set(want_values))
    if extra:
        return f"has a variable {extra[0]!r} the expected file does not"
    for name in sorted(want_values):
        problem = _array_difference(got_values[name], want_values[name])
        if problem is not None:
            return f"variable {name!r}: {problem}"
    return None


def _kind(path: Path) -> str:
    with open(path, "rb") as handle:
        head = handle.read(8)
    if head.startswith(HDF5_MAGIC):
        return "HDF5"
    if head.startswith(NETCDF_MAGIC):
        return "netCDF"
    return "bytes"


def _bytes_difference(got: Path, want: Path) -> str | None:
    offset = 0
    with open(got, "rb") as a, open(want, "rb") as b:
        while True:
            x, y = a.read(1024**2), b.read(1024**2)
            if x != y:
                at = next(
                    (i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q),
                    min(len(x), len(y)),
                )
                return (
                    f"differs from the expected file at byte {offset + at} "
                    f"(sizes {got.stat().st_size} and {want.stat().st_size} bytes)"
                )
            if not x:
                return None
            offset += len(x)


def _variables(path: Path) -> dict[str, np.ndarray]:
    """Every variable's stored values by its full name (``group/var``); netCDF4 reads netCDF
    3 and 4 files, h5py the HDF5 files netCDF4 cannot open."""
    import netCDF4

    try:
        with netCDF4.Dataset(path) as dataset:
            dataset.set_auto_maskandscale(False)
            found: dict[str, np.ndarray] = {}
            _netcdf_group(dataset, "", found)
            return found
    except OSError:
        if _kind(path) != "HDF5":
            raise
    return _hdf5_variables(path)


def _netcdf_group(group, prefix: str, found: dict[str, np.ndarray]) -> None:
    for name, variable in group.variables.items():
        found[prefix + name] = np.asarray(variable[...])
    for name, child in group.groups.items():
        _netcdf_group(child, f"{prefix}{name}/", found)


def _hdf5_variables(path: Path) -> dict[str, np.ndarray]:
    import h5py

    found: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as handle:

        def visit(name: str, node) -> None:
            if isinstance(node, h5py.Dataset):
                found[name] = np.asarray(node[()])

        handle.visititems(visit)
    return found


def _array_difference(got: np.ndarray, want: np.ndarray) -> str | None:
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    numeric = np.issubdtype(want.dtype, np.number) and np.issubdtype(got.dtype, np.number)
    if not numeric:
        same = np.array_equal(got, want)
        return None if same else "values differ"
    close = np.isclose(got, want, rtol=RTOL, atol=0.0, equal_nan=True)
    if close.all():
        return None
    wrong = np.argwhere(~close)
    first = tuple(int(i) for i in wrong[0])
    return (
        f"{len(wrong)} of {want.size} values differ by more than a relative {RTOL:g} "
        f"(first at index {first}: got {got[first]!r}, expected {want[first]!r})"
    )
