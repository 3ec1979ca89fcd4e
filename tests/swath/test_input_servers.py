"""Input data servers: large contiguous reads, the right lines to the right worker, in place."""

from __future__ import annotations

import multiprocessing as mp

import numpy as np
import pytest

from nearline.swath import N_PIXELS, Granule, SwathBlock
from nearline.swath._wire import BlockHeader, block_nbytes, pack_block, unpack_block
from nearline.swath.input_servers import Outbox, ReadTask, ServerStats, merge_runs, serve_pass
from nearline.swath.shm import SharedSlots


def make_block(first_line: int, n: int, *, granule: str = "g.nc") -> SwathBlock:
    """A block whose every value encodes its line number, so misplaced lines show."""
    lines = np.arange(first_line, first_line + n)
    tie = (lines[:, None] + np.linspace(0, 0.5, 51)[None, :]).astype(np.float32)
    counts = (lines[None, :, None] % 1000 + np.arange(5)[:, None, None]).astype(np.uint16)
    return SwathBlock(
        granule=granule,
        platform="noaa19",
        first_line=first_line,
        times=np.datetime64("2012-12-12T04:00", "ms") + lines * 500,
        counts=np.broadcast_to(counts, (5, n, N_PIXELS)).copy(),
        tie_lat=tie,
        tie_lon=-tie,
        tie_sat_zenith=tie + 1,
        tie_sun_zenith=tie + 2,
        tie_rel_azimuth=tie + 3,
        prt_counts=lines.astype(np.float64),
        ict_counts=np.stack([lines, lines + 1, lines + 2], axis=1).astype(np.float64),
        space_counts=np.stack([lines, lines - 1, lines - 2], axis=1).astype(np.float64),
    )


def assert_same_block(got: SwathBlock, want: SwathBlock) -> None:
    assert got.first_line == want.first_line
    assert got.n_lines == want.n_lines
    for name in (
        "counts",
        "tie_lat",
        "tie_lon",
        "tie_sat_zenith",
        "tie_sun_zenith",
        "tie_rel_azimuth",
        "prt_counts",
        "ict_counts",
        "space_counts",
    ):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    np.testing.assert_array_equal(
        got.times.astype("datetime64[ms]"), want.times.astype("datetime64[ms]")
    )


def test_a_packed_block_unpacks_to_the_same_values_as_views_of_the_buffer():
    block = make_block(100, 37)
    buffer = np.zeros(block_nbytes(64), dtype=np.uint8)
    used = pack_block(block, buffer)
    assert used == block_nbytes(37) <= buffer.size
    got = unpack_block(buffer, BlockHeader(3, 100, 37), granule="g.nc", platform="noaa19")
    assert_same_block(got, block)
    assert np.shares_memory(got.counts, buffer)


def test_merge_runs_joins_overlapping_and_touching_runs():
    assert merge_runs([(5, 9), (0, 3), (3, 4), (8, 12), (20, 21)]) == [(0, 4), (5, 12), (20, 21)]


class FakeGranule(Granule):
    """A granule in memory that records every read request and read-ahead hint."""

    def __init__(self, n_lines: int) -> None:
        self.hints: list[tuple[int, int]] = []
        self.n_lines = n_lines
        self.requests: list[tuple[int, int]] = []
        self.closed = False

    def read(self, start: int, stop: int) -> SwathBlock:
        self.requests.append((start, stop))
        return make_block(start, stop - start)

    def read_tie_latitudes(self):
        raise NotImplementedError

    def read_telemetry(self):
        raise NotImplementedError

    def prefetch(self, start, stop):
        self.hints.append((start, stop))

    def close(self) -> None:
        self.closed = True


class ListOutbox(Outbox):
    def __init__(self) -> None:
        self.shipped: list[tuple[int, BlockHeader, SwathBlock]] = []
        self.ended = 0

    def buffer(self, worker):
        self.current = np.zeros(block_nbytes(1024), np.uint8)
        return self.current

    def send(self, worker, header, buffer):
        block = unpack_block(buffer, header, granule="g.nc", platform="noaa19")
        self.shipped.append((worker, header, block))

    def _unused(self, worker, header, block):
        self.shipped.append((worker, header, block))

    def end_pass(self):
        self.ended += 1


def test_a_server_merges_runs_reads_in_large_pieces_and_ships_each_worker_its_lines():
    granule = FakeGranule(5000)
    task = ReadTask(0, {0: [(0, 1500)], 1: [(1200, 2600), (4000, 4100)]})
    outbox = ListOutbox()
    stats = ServerStats()
    serve_pass([task], lambda index: granule, outbox, max_lines=1024, stats=stats)
    # each worker's runs in reads of at most 1024 lines, cut at the granule's multiples of
    # 1024 wherever a run starts, the workers taking turns; each read goes straight into the
    # buffer that carries it
    assert granule.requests == [
        (0, 1024), (1200, 2048), (1024, 1500), (2048, 2600), (4000, 4096), (4096, 4100),
    ]  # fmt: skip
    assert granule.hints == granule.requests[1:]  # read-ahead of the next request
    assert granule.closed
    assert outbox.ended == 1
    got: dict[int, list[int]] = {0: [], 1: []}
    for worker, header, block in outbox.shipped:
        assert block.first_line == header.first_line
        assert block.n_lines == header.n_lines
        np.testing.assert_array_equal(
            block.prt_counts, np.arange(header.first_line, header.first_line + header.n_lines)
        )
        got[worker] += list(range(header.first_line, header.first_line + header.n_lines))
    assert got[0] == list(range(0, 1500))
    assert got[1] == list(range(1200, 2600)) + list(range(4000, 4100))
    assert stats.lines_shipped == 1500 + 1400 + 100
    assert stats.requests == 6


def _worker(shared: SharedSlots, worker: int, results) -> None:
    inbox = shared.inbox(worker, [("g.nc", "noaa19")])
    lines = []
    while (delivery := inbox.get()) is not None:
        block = delivery.block
        assert np.all(
            block.prt_counts == np.arange(block.first_line, block.first_line + block.n_lines)
        )
        lines += list(range(block.first_line, block.first_line + block.n_lines))
        inbox.release(delivery)
    results.put((worker, lines))


def serve_to(
    processes: list, task: ReadTask, shared: SharedSlots, results
) -> tuple[dict[int, list[int]], ServerStats]:
    """Start the worker ``processes``, serve ``task`` of a 5000-line granule to them through
    ``shared``; the lines each worker put on ``results``, and the server's stats."""
    for process in processes:
        process.start()
    granule = FakeGranule(5000)
    stats = ServerStats()
    serve_pass([task], lambda index: granule, shared.outbox(0), max_lines=256, stats=stats)
    got = dict(results.get() for _ in processes)
    for process in processes:
        process.join(timeout=20)
        assert process.exitcode == 0
    return got, stats


@pytest.mark.timeout(60)
def test_shared_memory_slots_deliver_every_line_once_to_its_worker_process():
    ctx = mp.get_context("fork")
    shared = SharedSlots(
        servers=1, workers=2, slots_per_server=2, slot_bytes=block_nbytes(256), context=ctx
    )
    results = ctx.SimpleQueue()
    workers = [ctx.Process(target=_worker, args=(shared, w, results)) for w in range(2)]
    task = ReadTask(0, {0: [(0, 1000)], 1: [(900, 3000)]})
    got, _ = serve_to(workers, task, shared, results)
    assert got[0] == list(range(0, 1000))
    assert got[1] == list(range(900, 3000))


def _holding_worker(shared: SharedSlots, others_done, results) -> None:
    """Worker 0: keeps its first block (its only slot) until worker 1 has all its lines."""
    inbox = shared.inbox(0, [("g.nc", "noaa19")])
    lines = []
    first = True
    while (delivery := inbox.get()) is not None:
        lines += list(range(delivery.block.first_line, delivery.block.first_line + 256))
        if first:
            assert others_done.wait(timeout=30), "the server left worker 1 waiting"
            first = False
        inbox.release(delivery)
    results.put((0, lines))


def _counting_worker(shared: SharedSlots, expected: int, done, results) -> None:
    inbox = shared.inbox(1, [("g.nc", "noaa19")])
    lines = []
    while (delivery := inbox.get()) is not None:
        lines += list(range(delivery.block.first_line, delivery.block.first_line + 256))
        inbox.release(delivery)
        if len(lines) == expected:
            done.set()
    results.put((1, lines))


@pytest.mark.timeout(60)
def test_a_worker_holding_its_slots_does_not_hold_up_the_others():
    ctx = mp.get_context("fork")
    shared = SharedSlots(
        servers=1, workers=2, slots_per_server=2, slot_bytes=block_nbytes(256), context=ctx
    )
    results, done = ctx.SimpleQueue(), ctx.Event()
    processes = [
        ctx.Process(target=_holding_worker, args=(shared, done, results)),
        ctx.Process(target=_counting_worker, args=(shared, 2048, done, results)),
    ]
    task = ReadTask(0, {0: [(0, 1024)], 1: [(2048, 4096)]})
    got, stats = serve_to(processes, task, shared, results)
    assert got[0] == list(range(0, 1024))
    assert got[1] == list(range(2048, 4096))
    assert stats.requests == 12
