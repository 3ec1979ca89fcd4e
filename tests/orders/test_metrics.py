"""The service's metrics read from a real SQLite state database: runs by station and state,
the stations' depth and oldest wait, users' disk and CPUs, the catalogue's changes; and the
same figures from a registry opened afresh on that database, as after a restart."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from nearline.archive import open_catalogue
from nearline.db import open_database
from nearline.orders import JobStore, OutputFile, Station
from nearline.orders._metrics import ServiceMetrics, StateCollector
from nearline.testing.stores import make_job


def figures(data: Path, held: dict[str, tuple[float, int]]) -> dict[str, float]:
    with (
        open_database(None, data / "service.db") as database,
        open_catalogue(None, data / "catalogue.db") as catalogue,
    ):
        registry = ServiceMetrics(StateCollector(database, catalogue, held=lambda: held)).registry
        return {
            f"{sample.name}{sorted(sample.labels.items())}": sample.value
            for metric in registry.collect()
            for sample in metric.samples
        }


def test_the_state_database_is_counted(tmp_path: Path) -> None:
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)  # now, not at import: xdist collects early
    with open_database(None, tmp_path / "service.db") as database:
        store = JobStore(database)
        store.create(make_job("a", "alice", runs=3, created=an_hour_ago))
        store.create(make_job("b", "bob", runs=2, created=datetime.now(UTC)))
        first, second, _ = store.runs_of("a")
        staged = store.move(first, Station.STAGE)
        output = OutputFile("o.json", "summary", 1234, "0" * 64, "application/json")
        store.move(staged, Station.INGEST, outputs=(output,))
        store.move(second, Station.FAILED, message="broke")
    seen = figures(tmp_path, held={"alice": (1.0, 2**28)})
    assert seen["nearline_runs[('state', 'queued'), ('station', 'queued')]"] == 3
    assert seen["nearline_runs[('state', 'running'), ('station', 'ingest')]"] == 1
    assert seen["nearline_runs[('state', 'failed'), ('station', 'failed')]"] == 1
    assert seen["nearline_runs[('state', 'successful'), ('station', 'done')]"] == 0
    assert seen["nearline_jobs[('status', 'running')]"] == 1
    assert seen["nearline_jobs[('status', 'accepted')]"] == 1
    assert seen["nearline_station_queue_depth[('station', 'queued')]"] == 3
    assert seen["nearline_station_queue_depth[('station', 'run')]"] == 0
    oldest = seen["nearline_station_oldest_wait_seconds[('station', 'queued')]"]
    assert 3590 < oldest < 3700  # alice's third run, queued with its job an hour ago
    assert seen["nearline_station_oldest_wait_seconds[('station', 'ingest')]"] < 60  # moved now
    assert seen["nearline_station_oldest_wait_seconds[('station', 'run')]"] == 0
    assert seen["nearline_user_disk_held_bytes[('user', 'alice')]"] == 1234
    assert "nearline_user_disk_held_bytes[('user', 'bob')]" not in seen
    assert seen["nearline_user_cpus_held[('user', 'alice')]"] == 1.0
    assert seen["nearline_user_memory_held_bytes[('user', 'alice')]"] == 2**28
    assert seen["nearline_catalogue_changes_total[]"] == 0
    assert seen["nearline_slot_overhead_seconds_count[]"] == 0
    again = figures(tmp_path, held={})  # another process on the same database: a restart
    states = {k: v for k, v in seen.items() if k.startswith(("nearline_runs", "nearline_jobs"))}
    assert {k: again[k] for k in states} == states
