"""Veros's gzip records deflated by ISA-L and written as whole chunks: the file reads back
the same values, with the deflate filter and level Veros asked for, and the arrays a step
needs are touched once per run."""

from __future__ import annotations

import zlib

import h5py
import numpy as np

from nearline.burst.veros._deflate import write_deflated
from nearline.burst.veros._pool import ArrayPool


def test_a_record_is_written_as_deflated_chunks_that_h5py_reads_back(tmp_path):
    record = np.arange(4 * 5 * 6, dtype=np.float64).reshape(4, 5, 6) / 7
    with h5py.File(tmp_path / "a.h5", "w") as file:
        temp = file.create_dataset(
            "temp", shape=(0, 4, 5, 6), maxshape=(None, 4, 5, 6), dtype="f8",
            chunks=(1, 4, 5, 6), compression="gzip", compression_opts=1, fillvalue=-1e18,
        )  # fmt: skip
        temp.resize(2, axis=0)
        assert write_deflated(temp, (1,), record, ArrayPool())
        stored = temp.id.read_direct_chunk((1, 0, 0, 0))[1]
    assert zlib.decompress(stored) == record.tobytes()
    assert stored != zlib.compress(record.tobytes(), 1)  # ISA-L's stream, not zlib's
    with h5py.File(tmp_path / "a.h5") as file:
        temp = file["temp"]
        assert (temp.compression, temp.compression_opts, temp.shuffle) == ("gzip", 1, False)
        assert np.array_equal(temp[1], record)
        assert (temp[0] == -1e18).all()  # never written: the fill value


def test_edge_chunks_are_padded_and_a_transposed_view_is_written_in_file_order(tmp_path):
    held = np.random.default_rng(1).normal(size=(9, 7))  # as the model holds it
    with h5py.File(tmp_path / "b.h5", "w") as file:
        field = file.create_dataset(
            "field", shape=(7, 9), dtype="f8", chunks=(5, 5), compression="gzip",
            compression_opts=1,
        )  # fmt: skip
        assert write_deflated(field, (), held.T, ArrayPool())
        assert np.array_equal(field[()], held.T)
        assert len(zlib.decompress(field.id.read_direct_chunk((5, 5))[1])) == 5 * 5 * 8


def test_other_filters_dtypes_and_scalars_are_left_to_h5py(tmp_path):
    pool = ArrayPool()
    with h5py.File(tmp_path / "c.h5", "w") as file:
        shuffled = file.create_dataset(
            "s", shape=(4, 4), dtype="f8", chunks=(4, 4), compression="gzip", shuffle=True
        )
        plain = file.create_dataset("p", shape=(4, 4), dtype="f8", chunks=(4, 4))
        cast = file.create_dataset("c", shape=(4, 4), dtype="f4", chunks=(4, 4), compression=1)
        line = file.create_dataset("t", shape=(3,), dtype="f8", chunks=(1,), compression="gzip")
        data = np.ones((4, 4))
        assert not write_deflated(shuffled, (), data, pool)
        assert not write_deflated(plain, (), data, pool)
        assert not write_deflated(cast, (), data, pool)  # f8 into f4: h5py converts
        assert not write_deflated(line, (2,), np.float64(1.0).reshape(()), pool)
        assert not write_deflated(line, (), np.ones(2), pool)  # not the whole axis
        assert shuffled.id.get_storage_size() == 0


def test_the_pool_hands_back_what_it_kept_up_to_its_limit():
    pool = ArrayPool(limit=1000)
    first = pool.take((10, 10), "f8")
    pool.give(first)
    assert pool.kept == 800
    assert pool.take((10, 10), "f8") is first
    assert pool.take((10, 10), "f8") is not first  # taken: a new one
    assert pool.take((10, 10), "f4") is not first
    pool.give(np.empty(200, "f8"))  # 1600 bytes: over the limit, dropped
    assert pool.kept == 0


def test_new_shapes_are_carved_from_the_touched_reserve_until_it_is_spent():
    pool = ArrayPool(limit=4096, reserve=4096)
    reserve = pool._reserve
    reserve._thread.join()
    assert reserve.touched == 4096
    first = pool.take((16, 16), "f8")  # 2048 bytes
    second = pool.take((100,), "f4")  # 400 bytes, rounded up to 448
    assert np.shares_memory(first, reserve._buffer)
    assert np.shares_memory(second, reserve._buffer)
    assert not np.shares_memory(first, second)
    assert reserve.carved == 2048 + 448
    fresh = pool.take((16, 16), "f8")  # 2048 more would pass the end: a new array
    assert not np.shares_memory(fresh, reserve._buffer)
    assert fresh.shape == (16, 16)
    assert fresh.dtype == np.float64
    pool.give(first)
    assert pool.take((16, 16), "f8") is first  # kept by shape, as any other
