"""burst.open: I/O threads in the model's process, the embedded default."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import xarray as xr

from nearline import burst
from nearline.errors import BurstError, BurstInputError, ConfigError
from nearline.layout import _browse as browse
from nearline.layout import closed_sets, hds_path
from nearline.layout._markers import Consumed

from .expected import expected_array


def nc(root, step, file, rank=None):
    return hds_path(root, step=step, file=file, rank=rank, ext="nc")


def test_buffer_reused_right_after_write_keeps_written_values(tmp_path):
    buffer = np.arange(1000, dtype=np.float64).reshape(10, 100)
    with burst.open(tmp_path, memory="1MiB") as io:
        io.write("dyn", "u", buffer, step=0, dims=("y", "x"), attrs={"units": "m s-1"})
        buffer[...] = -7.0
        io.write("dyn", "v", buffer, step=0, dims=("y", "x"))
        io.flush()
    with xr.open_dataset(nc(tmp_path, 0, "dyn", rank=0)) as ds:
        np.testing.assert_array_equal(ds["u"].values, np.arange(1000.0).reshape(10, 100))
        np.testing.assert_array_equal(ds["v"].values, np.full((10, 100), -7.0))
        assert ds["u"].attrs["units"] == "m s-1"
        assert ds["u"].dims == ("y", "x")
        assert int(ds["step"]) == 0


def test_scalars_and_every_dtype_round_trip(tmp_path):
    dtypes = ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8"]
    with burst.open(tmp_path, memory="1MiB") as io:
        io.write("scalars", "pi", 3.25, step=3)
        io.write("scalars", "count", 42, step=3)
        for code in dtypes:
            io.write("typed", f"v_{code}", expected_array(code, 3, (2, 3, 2, 2), code), step=3)
    with xr.open_dataset(nc(tmp_path, 3, "scalars", 0)) as ds:
        assert float(ds["pi"]) == 3.25
        assert int(ds["count"]) == 42
    with xr.open_dataset(nc(tmp_path, 3, "typed", 0), mask_and_scale=False) as ds:
        for code in dtypes:
            got = ds[f"v_{code}"].values
            assert got.dtype == np.dtype(code)
            np.testing.assert_array_equal(got, expected_array(code, 3, (2, 3, 2, 2), code))


def test_many_files_open_at_once(tmp_path):
    with burst.open(tmp_path, memory="4MiB", io_threads=2) as io:
        for step in range(3):
            for group in range(12):
                io.write(f"group{group:02d}", "x", np.full(5, group * 10 + step), step=step)
        io.flush()
        io.wait()
        assert io.stats().files_written == 36
    for step in range(3):
        for group in range(12):
            with xr.open_dataset(nc(tmp_path, step, f"group{group:02d}", 0)) as ds:
                assert ds["x"].values.tolist() == [group * 10 + step] * 5


@pytest.mark.parametrize("overflow", ["block", "spill", "sync"])
def test_overflow_policies_keep_every_byte(tmp_path, overflow):
    shape = (50, 40)  # 16 KiB per variable, 3 variables a step against 8 KiB of memory
    with burst.open(tmp_path, memory="8KiB", overflow=overflow) as io:
        for step in range(2):
            for name in ("a", "b", "c"):
                io.write("out", name, expected_array(name, step, shape, "f8"), step=step)
            io.flush()
        io.wait()
        stats = io.stats()
    assert stats.bytes_queued == 0
    assert stats.bytes_written == 2 * 3 * 50 * 40 * 8
    assert (stats.bytes_spilled > 0) == (overflow == "spill")
    for step in range(2):
        with xr.open_dataset(nc(tmp_path, step, "out", 0)) as ds:
            for name in ("a", "b", "c"):
                np.testing.assert_array_equal(
                    ds[name].values, expected_array(name, step, shape, "f8")
                )
    assert not (tmp_path / ".spill").exists()
    sets = list(closed_sets(tmp_path))
    assert [(s.step, s.file, len(s.members)) for s in sets] == [(0, "out", 1), (1, "out", 1)]
    assert sets[0].members[0].size == nc(tmp_path, 0, "out", 0).stat().st_size


def test_block_policy_waits_when_a_piece_fits_only_after_a_drain(tmp_path):
    with burst.open(tmp_path, memory="16KiB", overflow="block") as io:
        for step in range(4):
            io.write("out", "a", np.full(1500, step, dtype="f8"), step=step)  # 12 KB each
        io.flush()
        io.wait()
        assert io.stats().seconds_blocked > 0
    for step in range(4):
        with xr.open_dataset(nc(tmp_path, step, "out", 0)) as ds:
            assert ds["a"].values.tolist() == [float(step)] * 1500


def test_assembled_blocks_in_any_order(tmp_path):
    full = expected_array("g", 0, (9, 4), "i4")
    with burst.open(tmp_path, memory="1MiB") as io:
        for begin, end in [(6, 9), (0, 2), (2, 6)]:
            io.write("grid", "g", full[begin:end], step=0, start=(begin, 0), shape=(9, 4))
    with xr.open_dataset(nc(tmp_path, 0, "grid")) as ds:
        np.testing.assert_array_equal(ds["g"].values, full)


def test_autoflush_by_bytes_writes_without_an_explicit_flush(tmp_path):
    with burst.open(tmp_path, memory="1MiB", autoflush={"bytes": "1KiB"}) as io:
        io.write("out", "a", np.ones(200), step=0)  # 1600 bytes: over the threshold
        io.write("out", "a", np.ones(10), step=1)
        io.wait()
        assert nc(tmp_path, 0, "out", 0).exists()
        assert not nc(tmp_path, 1, "out", 0).exists()
    assert nc(tmp_path, 1, "out", 0).exists()


def test_failing_sink_raises_at_next_call_and_leaves_nothing(tmp_path):
    def full_disk(path, variables):
        raise OSError(28, "No space left on device")

    failure = pytest.raises(BurstError, match=r"'dynamics'.*No space left")
    with failure, burst.open(tmp_path, memory="1MiB", sink=full_disk) as io:
        io.write("dynamics", "u", np.ones(3), step=0)
        io.flush()
        io.wait()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_a_callable_sink_may_consume_the_data_and_create_nothing(tmp_path):
    seen: dict[str, list] = {}

    def plot(path, variables):  # in-situ use: reads the data, writes no file
        seen[path.name] = {name: array.tolist() for name, array in variables.items()}

    full = expected_array("g", 0, (6, 2), "i4")
    with burst.open(tmp_path, memory="1MiB", sink=plot) as io:
        io.write("dyn", "u", np.arange(3.0), step=0)  # a per-rank file
        io.write("grid", "g", full[:4], step=0, start=(0, 0), shape=(6, 2))  # assembled
        io.write("grid", "g", full[4:], step=0, start=(4, 0), shape=(6, 2))
        io.flush()
        io.wait()
        assert io.stats().files_written == 0
    assert seen == {
        ".dyn.000000.00000.dat.partial": {"u": [0.0, 1.0, 2.0]},
        ".grid.000000.dat.partial": {"g": full.tolist()},
    }
    assert [p for p in tmp_path.rglob("*") if p.is_file() and p.name != ".complete"] == []
    by = f"{__name__}.test_a_callable_sink_may_consume_the_data_and_create_nothing.<locals>.plot"
    marker = json.loads((tmp_path / "000000" / "dyn" / ".complete").read_text())
    assert marker == {
        "step": 0,
        "file": "dyn",
        "members": [],
        "consumed": [{"path": "dyn/dyn.000000.00000.dat", "created": False, "consumed_by": by}],
    }
    sets = {s.file: s for s in closed_sets(tmp_path)}
    assert sets["grid"].members == ()
    assert sets["grid"].consumed == (Consumed("grid.000000.dat", by),)
    summaries = browse.groups(tmp_path, step=0)  # `nearline ls` shows them, with no files
    assert [(g.file, g.files, g.complete) for g in summaries] == [
        ("dyn", 0, True),
        ("grid", 0, True),
    ]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda io: io.write("f", "x", np.array([object()]), step=0), "dtype object"),
        (lambda io: io.write("f", "x", np.ones(2, bool), step=0), "dtype bool"),
        (lambda io: io.write("f", "x", np.ones(3), step=0, start=(2,), shape=(4,)), "outside"),
        (lambda io: io.write("f", "x", np.ones(3), step=0, start=(0,)), "both start= and shape="),
        (lambda io: io.write("f/..", "x", np.ones(3), step=0), "not usable in a path"),
        (lambda io: io.write("f", "x", np.ones(3), step=-1), "step must be"),
        (lambda io: io.write("f", "x", np.ones((2, 2)), step=0, dims=("a",)), "must be 2 names"),
    ],
)
def test_bad_input_is_refused_at_write(tmp_path, call, message):
    with burst.open(tmp_path, memory="1MiB") as io:
        with pytest.raises(BurstInputError, match=message):
            call(io)
        io.write("ok", "x", np.ones(2), step=0)
    assert nc(tmp_path, 0, "ok", 0).exists()


def test_overlapping_blocks_are_refused(tmp_path):
    with burst.open(tmp_path, memory="1MiB") as io:
        io.write("g", "x", np.ones(4), step=0, start=(0,), shape=(6,))
        with pytest.raises(BurstInputError, match=r"overlaps the block at \(0,\)"):
            io.write("g", "x", np.ones(3), step=0, start=(3,), shape=(6,))
        io.write("g", "x", np.ones(2), step=0, start=(4,), shape=(6,))
    assert hds_path(tmp_path, step=0, file="g", ext="nc").exists()


def test_a_hole_fails_the_file_and_publishes_nothing(tmp_path):
    hole = pytest.raises(BurstError, match=r"'x' of shape \(6,\) has 2 of 6 elements not written")
    with hole, burst.open(tmp_path, memory="1MiB") as io:
        io.write("g", "x", np.ones(4), step=0, start=(0,), shape=(6,))
        io.flush()
        io.wait()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_unknown_sink_and_bad_settings_are_config_errors(tmp_path):
    for settings, message in [
        ({"sink": "parquet"}, "no sink called 'parquet'; installed: netcdf, hdf5, zarr, raw"),
        ({"overflow": "drop"}, "overflow must be one of"),
        ({"memory": "lots"}, "expected a size"),
    ]:
        with pytest.raises(ConfigError, match=message), burst.open(tmp_path, **settings):
            pass


def test_closed_client_refuses_writes(tmp_path):
    with burst.open(tmp_path, memory="1MiB") as io:
        io.write("f", "x", np.ones(2), step=0)
    with pytest.raises(BurstError, match="closed"):
        io.write("f", "x", np.ones(2), step=1)


def test_stats_after_close_give_the_final_totals(tmp_path):
    with burst.open(tmp_path, memory="1MiB") as io:
        for step in range(3):
            io.write("f", "x", np.ones((4, 5)), step=step)
            io.flush("f")
        # left without a wait: closing must still count every step as written
    stats = io.stats()
    assert stats.files_written == 3
    assert stats.bytes_written == 3 * 4 * 5 * 8
    assert stats.bytes_queued == 0
    assert stats.writes == 3
    assert io.stats() == stats  # the same figures every time they are asked for


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_write_behind_writes_before_flush_but_publishes_at_flush(tmp_path, monkeypatch, how):
    settings = {"write_behind": True} if how == "argument" else {}
    if how == "environment":
        monkeypatch.setenv("NEARLINE_BURST_WRITE_BEHIND", "1")
    with burst.open(tmp_path, memory="1MiB", **settings) as io:
        io.write("out", "a", np.arange(1000.0), step=0)
        deadline = time.monotonic() + 30
        while io.stats().bytes_written < 8000 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert io.stats().bytes_written == 8000  # written into the temporary file already
        assert io.stats().bytes_queued == 0
        assert not nc(tmp_path, 0, "out", 0).exists()  # but not published before flush
        io.flush()
        io.wait()
        assert nc(tmp_path, 0, "out", 0).exists()
    with xr.open_dataset(nc(tmp_path, 0, "out", 0)) as ds:
        np.testing.assert_array_equal(ds["a"].values, np.arange(1000.0))


def test_bad_write_behind_setting_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.setenv("NEARLINE_BURST_WRITE_BEHIND", "sometimes")
    with pytest.raises(ConfigError, match="NEARLINE_BURST_WRITE_BEHIND must be 1 or 0"):
        burst.open(tmp_path).__enter__()


@pytest.mark.parametrize("overflow", ["block", "spill", "sync"])
def test_buffer_hands_over_without_a_copy_under_every_policy(tmp_path, overflow):
    """io.buffer lends the queue memory itself while it has room (the array's memory is the
    server's: no copy), and ordinary memory once the queue is full or the block is larger
    than the whole queue; every byte arrives either way."""
    shapes = {"small": (16, 16), "big": (40, 40)}  # 2 KiB, and 12.5 KiB against 8 KiB
    lent_in_queue = []
    with burst.open(tmp_path, memory="8KiB", overflow=overflow) as io:
        for step in range(2):
            for name in ("a", "b", "c"):
                for size, shape in shapes.items():
                    with io.buffer("out", f"{name}_{size}", shape, "f8", step=step) as lent:
                        lent[...] = expected_array(f"{name}_{size}", step, shape, "f8")
                        lent_in_queue.append(lent.base is not None and lent.flags.owndata is False)
            io.flush()
        io.wait()
        stats = io.stats()
    assert stats.bytes_written == 2 * 3 * (16 * 16 + 40 * 40) * 8
    assert any(lent_in_queue)  # the first small blocks lay in the queue memory
    for step in range(2):
        with xr.open_dataset(nc(tmp_path, step, "out", 0)) as ds:
            for name in ("a", "b", "c"):
                for size, shape in shapes.items():
                    want = expected_array(f"{name}_{size}", step, shape, "f8")
                    np.testing.assert_array_equal(ds[f"{name}_{size}"].values, want)
    assert not (tmp_path / ".spill").exists()


def test_buffer_lies_in_the_queue_memory(tmp_path):
    with burst.open(tmp_path, memory="1MiB") as io:
        with io.buffer("out", "t", (8, 8), "f4", step=0) as first:
            first[...] = 1.0
        with io.buffer("out", "q", (8, 8), "f4", step=0) as second:
            second[...] = 2.0
        # both views are windows on one queue memory, one after the other: nothing was copied
        assert first.base is not None
        assert second.base is not None
        gap = second.__array_interface__["data"][0] - first.__array_interface__["data"][0]
        assert 0 < gap < 1 << 20
        io.flush()
    with xr.open_dataset(nc(tmp_path, 0, "out", 0)) as ds:
        assert float(ds["t"].sum()) == 64.0
        assert float(ds["q"].sum()) == 128.0


def abandon_a_block(root):
    """A model that raises while computing into a lent block, then flushes and waits."""
    with burst.open(root, memory="1MiB") as io:
        io.write("out", "kept", np.ones(4), step=0)
        with pytest.raises(ZeroDivisionError), io.buffer("out", "t", (4,), "f8", step=0) as lent:
            lent[0] = 1 / 0
        io.flush()
        io.wait()


def test_a_block_abandoned_by_an_error_fails_its_file_and_writes_nothing(tmp_path):
    with pytest.raises(BurstError, match="'t' from rank 0 was abandoned"):
        abandon_a_block(tmp_path)
    assert not nc(tmp_path, 0, "out", 0).exists()
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and ".partial" in p.name]


def test_a_write_after_a_buffer_gets_the_lease_back_and_waits_for_nothing(tmp_path):
    """io.buffer leases nearly all of a lone rank's queue; the write that follows gives the
    lease back first, so its 40 KB block is granted queue memory at once, not written
    through after waiting for room its own rank held. (The queue holds all three steps.)"""
    with burst.open(tmp_path, memory="256KiB") as io:
        for step in range(3):
            with io.buffer("out", "s", (16,), "f8", step=step) as lent:
                lent[...] = step
            io.write("out", "b", np.arange(5000.0) + step, step=step)
            io.flush()
        io.wait()
        stats = io.stats()
    assert stats.seconds_blocked == 0.0
    for step in range(3):
        with xr.open_dataset(nc(tmp_path, step, "out", 0)) as ds:
            np.testing.assert_array_equal(ds["s"].values, np.full(16, float(step)))
            np.testing.assert_array_equal(ds["b"].values, np.arange(5000.0) + step)


def test_the_next_lease_is_answered_once_wait_has_freed_the_queue(tmp_path):
    """wait asks for the next burst's lease before its answer; the server answers it after
    the flush has emptied the queue, so the lease is nearly the whole queue, not what was
    left beside the burst still being written."""
    capacity = 1 << 20
    with burst.open(tmp_path, memory=capacity) as io:
        with io.buffer("out", "half", (capacity // 16,), "f8", step=0) as lent:
            lent[...] = 1.0
        io.flush()
        io.wait()
        after_wait = io.stats()
        with io.buffer("out", "most", (capacity // 10,), "f8", step=1) as lent:
            lent[...] = 2.0
        io.flush()
    assert after_wait.bytes_queued == 0
    assert after_wait.bytes_leased >= capacity - 128
    with xr.open_dataset(nc(tmp_path, 1, "out", 0)) as ds:
        assert float(ds["most"].sum()) == 2.0 * (capacity // 10)
