"""What an operator watches, for Prometheus (``nearline serve --metrics``; docs/operations.md).

Counts of runs, stations, waits, disk held and ingests are read from the state database at
each scrape (:class:`StateCollector`): the database is the truth, so they survive a restart
and two servers on one database report the same figures. What only this process knows is
kept in the process: the slot overhead of the runs it held (a histogram), the CPUs and memory
its runs hold now, and (api's) request latencies.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from nearline.archive import Catalogue
from nearline.db import Database
from nearline.errors import ConfigError
from nearline.orders._base import Station
from nearline.orders._store import HOLDING_DISK

STATE = {  # a run's coarse state, from its station (as its job's OGC status reads)
    Station.QUEUED: "queued",
    **{station: "running" for station in (Station.STAGE, Station.ALLOCATE, Station.RUN)},
    **{station: "running" for station in (Station.INGEST, Station.CLEANUP)},
    Station.DONE: "successful",
    Station.FAILED: "failed",
    Station.DISMISSED: "dismissed",
}
OPEN = tuple(station for station in Station if not station.ended)
# from a tenth of a second (what issue 29 aims at) to a minute
OVERHEAD_BUCKETS = (0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
# a kept-alive search answers in a few milliseconds; an upload may take a minute
REQUEST_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0)

_BY_STATION = "SELECT station, COUNT(*) AS n FROM runs GROUP BY station"
_BY_STATUS = "SELECT status, COUNT(*) AS n FROM jobs GROUP BY status"
_OLDEST = (  # when the run longest at each open station got there (older rows: their job's)
    "SELECT runs.station AS station, MIN(COALESCE(runs.station_since, jobs.created)) AS since "
    "FROM runs JOIN jobs ON jobs.id = runs.job "
    f"WHERE runs.station IN ({','.join('?' * len(OPEN))}) GROUP BY runs.station"
)
_DISK_BY_USER = (
    "SELECT jobs.owner AS owner, COALESCE(SUM(runs.output_bytes), 0) AS used FROM runs "
    "JOIN jobs ON jobs.id = runs.job WHERE jobs.kept = 1 AND runs.station IN "
    f"({','.join('?' * len(HOLDING_DISK))}) GROUP BY jobs.owner"
)


def _gauge(name: str, description: str, label: str) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, description, labels=[label])


class StateCollector(Collector):
    """Runs, jobs, stations, users' disk and the catalogue's ingests, as the state database
    says at the moment of the scrape; and each user's CPUs and memory held by this server's
    runs (``held``: user -> (CPUs, bytes))."""

    def __init__(
        self,
        database: Database,
        catalogue: Catalogue,
        held: Callable[[], Mapping[str, tuple[float, int]]],
    ) -> None:
        self.database = database
        self.catalogue = catalogue
        self.held = held

    def collect(self) -> Iterator[Metric]:
        counts = {row["station"]: row["n"] for row in self.database.query(_BY_STATION)}
        yield from self._runs(counts)
        yield from self._stations(counts)
        yield from self._users()
        yield CounterMetricFamily(
            "nearline_catalogue_changes",
            "Items ingested into the catalogue or replaced there (granules and runs' outputs), "
            "since it was made",
            value=self.catalogue.position(),
        )

    def _runs(self, counts: Mapping[str, int]) -> Iterator[Metric]:
        runs = GaugeMetricFamily(
            "nearline_runs",
            "Runs at each station now (state: queued, running, successful, failed, dismissed)",
            labels=["station", "state"],
        )
        for station in Station:
            runs.add_metric([station.value, STATE[station]], counts.get(station.value, 0))
        yield runs
        jobs = _gauge("nearline_jobs", "Jobs (orders) by status", "status")
        for row in self.database.query(_BY_STATUS):
            jobs.add_metric([row["status"]], row["n"])
        yield jobs

    def _stations(self, counts: Mapping[str, int]) -> Iterator[Metric]:
        oldest = {
            row["station"]: row["since"]
            for row in self.database.query(_OLDEST, tuple(s.value for s in OPEN))
        }
        depth = _gauge(
            "nearline_station_queue_depth",
            "Runs waiting or working at each open station",
            "station",
        )
        wait = _gauge(
            "nearline_station_oldest_wait_seconds",
            "How long the run longest at each open station has been there (0: none there)",
            "station",
        )
        now = datetime.now(UTC)
        for station in OPEN:
            depth.add_metric([station.value], counts.get(station.value, 0))
            since = oldest.get(station.value)
            age = (now - datetime.fromisoformat(since)).total_seconds() if since else 0.0
            wait.add_metric([station.value], max(0.0, age))
        yield depth
        yield wait

    def _users(self) -> Iterator[Metric]:
        disk = _gauge(
            "nearline_user_disk_held_bytes",
            "Bytes each user's kept outputs take (their quota)",
            "user",
        )
        for row in self.database.query(_DISK_BY_USER, HOLDING_DISK):
            disk.add_metric([row["owner"]], row["used"])
        yield disk
        cpus = _gauge(
            "nearline_user_cpus_held", "CPUs each user's runs hold on this server now", "user"
        )
        memory = _gauge(
            "nearline_user_memory_held_bytes",
            "Memory each user's runs declared and hold on this server now",
            "user",
        )
        for user, (held_cpus, held_memory) in sorted(self.held().items()):
            cpus.add_metric([user], held_cpus)
            memory.add_metric([user], held_memory)
        yield cpus
        yield memory


class ServiceMetrics:
    """The service's registry: ``state`` (a :class:`StateCollector`), and the histograms
    this process fills (the slot overhead here, request latency by route in nearline.api)."""

    def __init__(self, state: Collector) -> None:
        self.registry = CollectorRegistry()
        self.state = state
        self.registry.register(state)
        self.slot_overhead = Histogram(
            "nearline_slot_overhead_seconds",
            "How much longer each run held its slot (CPUs and memory, from admission to "
            "release) than its algorithm ran: staging, set-up and teardown",
            buckets=OVERHEAD_BUCKETS,
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "nearline_http_request_duration_seconds",
            "Time from a request's arrival to its answer's start, by method, route (its "
            "template, e.g. /jobs/{job_id}) and status code",
            labelnames=["method", "route", "status"],
            buckets=REQUEST_BUCKETS,
            registry=self.registry,
        )

    def serve(self, host: str, port: int) -> MetricsServer:
        """Serve the registry in Prometheus' text format on ``host``:``port`` (0: any free
        port), from a thread of its own, apart from the API's address."""
        registry = self.registry
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # `nearline serve --workers`: the
            registry = CollectorRegistry()  # histograms of every worker process, summed
            MultiProcessCollector(registry)
            registry.register(self.state)
        try:
            server, _ = start_http_server(port, addr=host, registry=registry)
        except OSError as error:
            raise ConfigError(
                f"cannot serve the metrics on {host}:{port}: {error.strerror or error}; "
                "choose another --metrics address (port 0: any free one)"
            ) from None
        return MetricsServer(server)


class MetricsServer:
    """The metrics' own listening address (``--metrics``); ``close()`` stops it."""

    def __init__(self, server: WSGIServer) -> None:
        self._server = server
        self.port: int = server.server_port

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
