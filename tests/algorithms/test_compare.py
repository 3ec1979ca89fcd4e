"""Test outputs against expected files: netCDF and HDF5 by values (relative 1e-6), anything
else byte for byte; each difference said in words."""

from __future__ import annotations

from pathlib import Path

import h5py
import netCDF4
import numpy as np

from nearline.algorithms._compare import difference


def netcdf(path: Path, values: np.ndarray, *, fmt: str = "NETCDF4", **attrs) -> Path:
    with netCDF4.Dataset(path, "w", format=fmt) as dataset:
        dataset.setncatts(attrs)
        dataset.createDimension("y", values.shape[0])
        dataset.createDimension("x", values.shape[1])
        dataset.createVariable("ndvi", values.dtype, ("y", "x"))[:] = values
        if fmt == "NETCDF4":
            group = dataset.createGroup("quality")
            group.createVariable("flag", "i1", ("y",))[:] = np.arange(values.shape[0])
    return path


def test_netcdf_files_are_equal_within_a_relative_millionth(tmp_path):
    values = np.linspace(0.1, 0.9, 12, dtype=np.float64).reshape(3, 4)
    values[1, 1] = np.nan
    want = netcdf(tmp_path / "want.nc", values, history="made today")
    close = netcdf(tmp_path / "close.nc", values * (1 + 5e-7), history="made another day")
    assert difference(close, want) is None
    off = values.copy()
    off[2, 3] *= 1 + 2e-6
    problem = difference(netcdf(tmp_path / "off.nc", off), want)
    assert problem is not None
    assert problem.startswith(
        "variable 'ndvi': 1 of 12 values differ by more than a relative 1e-06"
    )
    assert "(first at index (2, 3)" in problem


def test_netcdf_classic_files_and_missing_or_extra_variables(tmp_path):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    want = netcdf(tmp_path / "want.nc", values, fmt="NETCDF3_CLASSIC")
    assert difference(netcdf(tmp_path / "same.nc", values, fmt="NETCDF3_CLASSIC"), want) is None
    four = netcdf(tmp_path / "four.nc", values)  # same values, plus a group variable
    assert difference(four, want) == "is not a netCDF file like the expected one"
    assert difference(four, netcdf(tmp_path / "four-b.nc", values)) is None
    with netCDF4.Dataset(tmp_path / "three.nc", "w", format="NETCDF4") as dataset:
        dataset.createDimension("y", 2)
        dataset.createVariable("other", "f4", ("y",))[:] = [1, 2]
    assert difference(tmp_path / "three.nc", four) == "has no variable 'ndvi'"
    wide = netcdf(tmp_path / "wide.nc", np.zeros((2, 4), np.float32))
    assert difference(wide, four) == "variable 'ndvi': shape (2, 4), expected (2, 3)"


def test_plain_hdf5_files_are_compared_by_datasets(tmp_path):
    def write(name: str, data: np.ndarray) -> Path:
        path = tmp_path / name
        with h5py.File(path, "w") as handle:
            handle.create_dataset("grid/temperature", data=data)
            handle.create_dataset("label", data=np.bytes_("orbit 12"))
        return path

    data = np.arange(20, dtype=np.int16).reshape(4, 5)
    assert difference(write("a.h5", data), write("b.h5", data)) is None
    changed = data.copy()
    changed[0, 0] = 100
    problem = difference(write("c.h5", changed), write("d.h5", data))
    assert problem is not None
    assert "1 of 20 values differ" in problem


def test_other_files_must_match_byte_for_byte(tmp_path):
    (tmp_path / "a.csv").write_text("granule,mean\nA,1.000\n")
    (tmp_path / "b.csv").write_text("granule,mean\nA,1.000\n")
    (tmp_path / "c.csv").write_text("granule,mean\nA,1.001\n")
    (tmp_path / "d.csv").write_text("granule,mean\nA,1.000\nB,2\n")
    assert difference(tmp_path / "a.csv", tmp_path / "b.csv") is None
    assert difference(tmp_path / "c.csv", tmp_path / "a.csv") == (
        "differs from the expected file at byte 19 (sizes 21 and 21 bytes)"
    )
    assert difference(tmp_path / "d.csv", tmp_path / "a.csv") == (
        "differs from the expected file at byte 21 (sizes 25 and 21 bytes)"
    )
