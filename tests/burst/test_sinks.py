"""The built-in sinks: the shared conformance suite, read back with each format's own reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import netCDF4
import numpy as np
import pytest
import xarray as xr
import zarr

from nearline import burst
from nearline.burst import get_sink
from nearline.burst.sinks import function as function_sink
from nearline.burst.sinks import raw
from nearline.burst.sinks import zarr as zarr_sink
from nearline.burst.sinks.function import CallableSink
from nearline.burst.sinks.hdf5 import HDF5Sink
from nearline.burst.sinks.netcdf import NetCDFSink
from nearline.burst.sinks.raw import RawSink, read_record_arrays, read_records
from nearline.burst.sinks.zarr import ZarrSink, chunk_shape
from nearline.errors import BurstError, ConfigError
from nearline.testing.sink import SinkTests, spec


def open_xarray(path: Path, **kwargs: Any) -> xr.Dataset:
    return xr.open_dataset(path, engine="netcdf4", decode_timedelta=False, **kwargs)


class TestNetCDFReadByXarray(SinkTests):
    def make_sink(self) -> NetCDFSink:
        return NetCDFSink()

    def read_back(self, path, specs):
        with open_xarray(path, mask_and_scale=False, decode_times=False) as ds:
            return {name: ds[name].values for name in ds.data_vars}

    def read_attrs(self, path):
        with open_xarray(path, mask_and_scale=False) as ds:
            return {name: dict(ds[name].attrs) for name in ds.data_vars}

    def read_dims(self, path):
        with open_xarray(path) as ds:
            return {name: ds[name].dims for name in ds.data_vars}

    def read_step(self, path):
        with open_xarray(path) as ds:
            return int(ds["step"])

    def test_step_coordinate_units_and_globals(self, tmp_path):
        t = spec("t", "f8", (2, 3), dims=("y", "x"), units="K")
        path = self.write_file(tmp_path, [(t, (0, 0), np.full((2, 3), 280.5))], step=7)
        with xr.open_dataset(path) as ds:  # default decoding, as a user would open it
            assert ds["t"].attrs["units"] == "K"
            assert ds["t"].coords["step"].item() == 7
            assert ds["step"].attrs["long_name"] == "output step"
            assert ds["step"].dtype == np.int64
            np.testing.assert_array_equal(ds["t"].values, np.full((2, 3), 280.5))
            assert ds.attrs["Conventions"] == "CF-1.10"
            assert "written by nearline burst" in ds.attrs["history"]


class TestNetCDFReadByNetCDF4(SinkTests):
    def make_sink(self) -> NetCDFSink:
        return NetCDFSink()

    def read_back(self, path, specs):
        with netCDF4.Dataset(path) as ds:
            ds.set_auto_maskandscale(False)
            return {name: v[...] for name, v in ds.variables.items() if name != "step"}

    def read_attrs(self, path):
        with netCDF4.Dataset(path) as ds:
            return {name: v.__dict__ for name, v in ds.variables.items()}

    def read_dims(self, path):
        with netCDF4.Dataset(path) as ds:
            return {n: v.dimensions for n, v in ds.variables.items() if n != "step"}

    def read_step(self, path):
        with netCDF4.Dataset(path) as ds:
            return int(ds["step"][...])

    def test_layout_is_contiguous_unfilled_and_names_step(self, tmp_path):
        u = spec("u", "f4", (3, 4), dims=("y", "x"))
        path = self.write_file(tmp_path, [(u, (0, 0), np.zeros((3, 4), np.float32))])
        with netCDF4.Dataset(path) as ds:
            assert ds["u"].chunking() == "contiguous"
            assert ds["u"].filters()["zlib"] is False
            assert ds["u"].ncattrs() == ["coordinates"]
            assert ds["u"].coordinates == "step"
            assert ds.data_model == "NETCDF4"

    def test_shared_dimension_is_reused(self, tmp_path):
        a = spec("a", "i4", (4,), dims=("x",))
        b = spec("b", "i4", (2, 4), dims=("y", "x"))
        blocks = [(a, (0,), np.arange(4, dtype="i4")), (b, (0, 0), np.ones((2, 4), "i4"))]
        path = self.write_file(tmp_path, blocks)
        with netCDF4.Dataset(path) as ds:
            assert {name: len(dim) for name, dim in ds.dimensions.items()} == {"x": 4, "y": 2}

    def test_dimension_with_two_sizes_is_refused(self, tmp_path):
        handle = self.make_sink().create(tmp_path / "out.nc", step=0)
        handle.define(spec("a", "f8", (4,), dims=("x",)))
        with pytest.raises(BurstError, match=r"'x' already has size 4.*size 5.*distinct `dims`"):
            handle.define(spec("b", "f8", (5,), dims=("x",)))
        handle.abort()

    def test_user_fill_value_and_coordinates_are_kept(self, tmp_path):
        v = spec("v", "f4", (2,), _FillValue=-1.0, coordinates="lat")
        path = self.write_file(tmp_path, [(v, (0,), np.array([1.0, -1.0], np.float32))])
        with netCDF4.Dataset(path) as ds:
            assert ds["v"]._FillValue == np.float32(-1.0)
            assert ds["v"].coordinates == "lat step"
            assert ds["v"][:].mask.tolist() == [False, True]

    def test_boolean_attribute_is_stored_as_int8(self, tmp_path):
        v = spec("v", "u1", (), flag=True)
        path = self.write_file(tmp_path, [(v, (), np.array(9, np.uint8))])
        with netCDF4.Dataset(path) as ds:
            assert ds["v"].flag == 1
            assert ds["v"].flag.dtype == np.int8
            assert ds["v"][...] == 9


@pytest.mark.parametrize("sink", [NetCDFSink(), HDF5Sink()], ids=["netcdf", "hdf5"])
def test_unstorable_attribute_is_named(sink, tmp_path):
    handle = sink.create(tmp_path / f"out.{sink.extension}", step=0)
    with pytest.raises(BurstError, match=r"variable 'v': attribute bad=None cannot be stored"):
        handle.define(spec("v", "f8", (2,), bad=None))
    handle.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"out.{sink.extension}"]


class TestHDF5(SinkTests):
    def make_sink(self) -> HDF5Sink:
        return HDF5Sink()

    def read_back(self, path, specs):
        with h5py.File(path, "r") as f:
            return {name: dataset[()] for name, dataset in f.items()}

    def read_attrs(self, path):
        with h5py.File(path, "r") as f:
            return {name: dict(dataset.attrs) for name, dataset in f.items()}

    def read_dims(self, path):
        with h5py.File(path, "r") as f:
            return {name: tuple(ds.attrs["dims"]) for name, ds in f.items()}

    def read_step(self, path):
        with h5py.File(path, "r") as f:
            return int(f.attrs["step"])

    def test_datasets_are_contiguous_and_uncompressed(self, tmp_path):
        v = spec("v", "u2", (3, 5))
        path = self.write_file(tmp_path, [(v, (0, 0), np.arange(15, dtype="u2").reshape(3, 5))])
        with h5py.File(path, "r") as f:
            assert f["v"].id.get_create_plist().get_layout() == h5py.h5d.CONTIGUOUS
            assert f["v"].compression is None
            assert f.id.get_create_plist().get_version()[0] >= 2  # libver="latest" superblock
            np.testing.assert_array_equal(f["v"][1], [5, 6, 7, 8, 9])


class TestZarr(SinkTests):
    keeps_order = False  # zarr lists a group's arrays by name

    def make_sink(self) -> ZarrSink:
        return ZarrSink()

    def read_back(self, path, specs):
        group = zarr.open_group(path, mode="r")
        return {name: array[...] for name, array in group.arrays()}

    def read_attrs(self, path):
        group = zarr.open_group(path, mode="r")
        return {name: dict(array.attrs) for name, array in group.arrays()}

    def read_dims(self, path):
        group = zarr.open_group(path, mode="r")
        return {name: tuple(a.metadata.dimension_names or ()) for name, a in group.arrays()}

    def read_step(self, path):
        return zarr.open_group(path, mode="r").attrs["step"]

    def test_big_variables_are_chunked_along_axis_0(self, tmp_path, monkeypatch):
        monkeypatch.setattr(zarr_sink, "CHUNK_BYTES", 100)
        v = spec("v", "f8", (10, 4), dims=("y", "x"))
        values = np.arange(40.0).reshape(10, 4)
        blocks = [(v, (5, 0), values[5:]), (v, (0, 0), values[:5])]
        path = self.write_file(tmp_path, blocks)
        array = zarr.open_array(path / "v", mode="r")
        assert array.chunks == (3, 4)
        assert array.compressors == ()
        assert array.metadata.dimension_names == ("y", "x")
        np.testing.assert_array_equal(array[...], values)

    def test_chunk_shape(self):
        assert chunk_shape((10, 4), 8, 64 * 2**20) == (10, 4)
        assert chunk_shape((10, 4), 8, 100) == (3, 4)
        assert chunk_shape((2, 50), 8, 100) == (1, 12)  # one row is too big: cut the next axis
        assert chunk_shape((0, 3), 4, 100) == (1, 3)
        assert chunk_shape((), 8, 100) == ()


class TestRaw(SinkTests):
    def make_sink(self) -> RawSink:
        return RawSink()

    def read_back(self, path, specs):
        assert len(read_records(path)) == len(specs)
        arrays = read_record_arrays(path, [(v.dtype, v.shape) for v in specs])
        return {v.name: array for v, array in zip(specs, arrays, strict=True)}


class TestRawSubrecords(TestRaw):
    """The whole suite again with 7-byte subrecords, so records and elements straddle them."""

    @pytest.fixture(autouse=True)
    def _small_subrecords(self, monkeypatch):
        monkeypatch.setattr(raw, "MAX_SUBRECORD", 7)


def test_raw_records_are_framed_by_length_markers(tmp_path):
    a = spec("a", "i2", (3,))
    b = spec("b", "f8", ())
    blocks = [(a, (0,), np.array([1, 2, 3], "i2")), (b, (), np.array(0.5))]
    data = TestRaw().write_file(tmp_path, blocks).read_bytes()
    i2, f8 = np.array([1, 2, 3], "i2").tobytes(), np.array(0.5).tobytes()
    six, eight = np.int32(6).tobytes(), np.int32(8).tobytes()
    assert data == six + i2 + six + eight + f8 + eight


def test_raw_subrecords_match_gfortran(tmp_path, monkeypatch):
    """gfortran's own test (unformatted_subrecord_1.f90, -fmax-subrecord-length=16)."""
    monkeypatch.setattr(raw, "MAX_SUBRECORD", 16)
    n = spec("n", "i4", (20,))
    squares = np.arange(1, 21, dtype="i4") ** 2
    blocks = [(n, (13,), squares[13:]), (n, (0,), squares[:5]), (n, (5,), squares[5:13])]
    path = TestRaw().write_file(tmp_path, blocks)
    framed = [-16, 1, 4, 9, 16, 16, -16, 25, 36, 49, 64, -16, -16, 81, 100, 121, 144, -16]
    framed += [-16, 169, 196, 225, 256, -16, 16, 289, 324, 361, 400, -16]
    assert np.fromfile(path, dtype="i4").tolist() == framed
    assert read_records(path) == [squares.tobytes()]


def test_raw_record_of_whole_subrecords_has_no_empty_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(raw, "MAX_SUBRECORD", 8)
    v = spec("v", "i4", (4,))
    path = TestRaw().write_file(tmp_path, [(v, (0,), np.arange(4, dtype="i4"))])
    assert np.fromfile(path, dtype="i4").tolist() == [-8, 0, 1, 8, 8, 2, 3, -8]


def test_raw_reader_refuses_mismatched_markers(tmp_path):
    path = tmp_path / "bad.dat"
    np.array([4, 1, 5], dtype="i4").tofile(path)
    with pytest.raises(BurstError, match="do not match"):
        read_records(path)
    np.array([4, 1, 4], dtype="i4").tofile(path)
    with pytest.raises(BurstError, match="needs 8"):
        read_record_arrays(path, [("f8", ())])


def save_npz(path: Path, variables: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as stream:
        np.savez(stream, **variables)


class TestCallable(SinkTests):
    def make_sink(self) -> CallableSink:
        return CallableSink(save_npz)

    def read_back(self, path, specs):
        with np.load(path) as archive:
            return {name: archive[name] for name in archive.files}

    def test_attrs_are_passed_when_accepted_and_staging_is_removed(self, tmp_path):
        seen: dict[str, Any] = {}

        def writer(path, variables, *, attrs):
            seen.update(attrs=attrs, writeable=variables["v"].flags.writeable)
            seen["staged"] = sorted(p.name for p in tmp_path.iterdir())
            save_npz(path, variables)

        writer.extension = "npz"
        sink = CallableSink(writer)
        assert sink.extension == "npz"
        v = spec("v", "f4", (2,), units="m")
        handle = sink.create(tmp_path / "out.npz", step=0)
        handle.define(v)
        handle.write("v", np.array([1.5, 2.5], np.float32), start=(0,))
        handle.close()
        assert seen == {
            "attrs": {"v": {"units": "m"}},
            "writeable": False,
            "staged": [".out.npz.staging"],
        }
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npz"]
        np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["v"], [1.5, 2.5])

    def test_failing_callable_is_reported_with_its_name_and_path(self, tmp_path):
        def broken(path, variables):
            raise OSError("disk full")

        handle = CallableSink(broken).create(tmp_path / "out.dat", step=0)
        handle.define(spec("v", "i1", ()))
        handle.write("v", np.array(3, np.int8), start=())
        with pytest.raises(
            BurstError, match=r"broken failed writing .*out\.dat: OSError: disk full"
        ):
            handle.close()
        assert list(tmp_path.iterdir()) == []

    def test_callable_that_creates_nothing_consumed_the_data(self, tmp_path):
        seen = {}
        handle = CallableSink(lambda path, variables: seen.update(variables)).create(
            tmp_path / "out.dat", step=0
        )
        assert handle.consumed_by is None
        handle.define(spec("v", "i1", (2,)))
        handle.write("v", np.array([3, 4], np.int8), start=(0,))
        handle.close()
        assert seen["v"].tolist() == [3, 4]
        assert handle.consumed_by == (
            "tests.burst.test_sinks.TestCallable."
            "test_callable_that_creates_nothing_consumed_the_data.<locals>.<lambda>"
        )
        assert list(tmp_path.iterdir()) == []  # no file, and the staging folder is gone

    def test_callable_that_creates_its_file_consumed_nothing(self, tmp_path):
        handle = CallableSink(save_npz).create(tmp_path / "out.dat", step=0)
        handle.define(spec("v", "i1", ()))
        handle.write("v", np.array(3, np.int8), start=())
        handle.close()
        assert handle.consumed_by is None

    def test_staging_folder_is_hidden_beside_the_target(self, tmp_path):
        assert (
            function_sink.staging_path(tmp_path / ".x.nc.partial").name == ".x.nc.partial.staging"
        )
        assert function_sink.staging_path(tmp_path / "x.dat").name == ".x.dat.staging"


@pytest.mark.parametrize(("extension", "kept"), [(".npz", "npz"), ("npz", "npz")])
def test_a_callable_sinks_extension_may_have_its_dot(extension, kept):
    def writer(path, variables):
        save_npz(path, variables)

    writer.extension = extension
    assert CallableSink(writer).extension == kept


@pytest.mark.parametrize("extension", ["tar.gz", "n c", "", 7])
def test_a_callable_sink_with_an_unusable_extension_is_refused_when_chosen(tmp_path, extension):
    """Refused by burst.open itself, before any rank writes, not at the first file closed."""

    def writer(path, variables):
        save_npz(path, variables)

    writer.extension = extension
    with pytest.raises(ConfigError, match=r"callable sink .*writer: file extension .* not usable"):
        burst.open(tmp_path, sink=writer).__enter__()
    assert list(tmp_path.iterdir()) == []


def test_get_sink_wraps_a_callable():
    sinks = [get_sink(save_npz), get_sink(save_npz)]
    assert [type(sink) for sink in sinks] == [CallableSink, CallableSink]
    assert sinks[0].fn is save_npz


@pytest.mark.parametrize(
    ("name", "kind"),
    [("netcdf", NetCDFSink), ("hdf5", HDF5Sink), ("zarr", ZarrSink), ("raw", RawSink)],
)
def test_builtin_sinks_are_found_by_name(name, kind):
    sink = get_sink(name)
    assert type(sink) is kind
    assert sink.name == name
