"""Conformance tests of the service's stores on any :class:`~nearline.db.Database`.

Subclass :class:`StoreTests` in a pytest module as ``class TestMyBackend(StoreTests)`` and
supply :meth:`~StoreTests.make_database`. The tests hold the stores (users, jobs and runs,
algorithm versions, servers) to what they promise on any backend: compare-and-set moves,
write transactions that never interleave (threads racing on one job), sizes past 2^31
bytes, rollbacks, and tables that upgrade in place. Needs pytest (the ``dev`` extra); nothing
in nearline imports this module.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nearline.algorithms.store import VersionStore
from nearline.db import Database
from nearline.errors import Conflict, JobNotFound, NotFound, Unauthorized
from nearline.identity import Allotment, UserStore
from nearline.orders import (
    PIPELINE,
    InputRef,
    Job,
    JobFilter,
    JobStatus,
    JobStore,
    OutputFile,
    Run,
    Servers,
    Station,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
GiB = 1024**3
TABLE = "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, n INTEGER);"


def make_job(id: str, owner: str = "alice", *, runs: int = 1, created: datetime = T0) -> Job:
    """A queued job of ``runs`` runs, one granule each."""
    return Job(
        id=id,
        owner=owner,
        process="p",
        version="1",
        status=JobStatus.ACCEPTED,
        created=created,
        updated=created,
        started=None,
        finished=None,
        inputs={"granules": {"ids": [f"g{n}" for n in range(runs)]}},
        parameters={"k": 1},
        runs=tuple(
            Run(
                id=f"{id}-{n}",
                job=id,
                index=n,
                station=Station.QUEUED,
                inputs=(InputRef("granules", "c", f"g{n}"),),
                waiting="queued",
            )
            for n in range(runs)
        ),
    )


def walk(store: JobStore, run: Run, *, server: str, output: int = 0) -> Run:
    """``run`` from the queue through every station to done, as a dispatcher moves it."""
    moved = store.move(run, Station.STAGE, server=server, waiting=None, started=T0)
    assert moved is not None
    for to in PIPELINE[1:]:
        changes = {}
        if to == Station.INGEST and output:
            changes["outputs"] = (OutputFile("out.nc", "out", output, "0" * 64, "x/y"),)
        moved = store.move(moved, to, **changes)
        assert moved is not None
    done = store.move(moved, Station.DONE, finished=T0)
    assert done is not None
    return done


class StoreTests:
    """Generic tests of the stores on one :class:`~nearline.db.Database` backend."""

    def make_database(self, tmp_path: Path) -> Database:
        """A new, empty database (its files, if any, in ``tmp_path``)."""
        raise NotImplementedError

    @pytest.fixture
    def database(self, tmp_path: Path) -> Iterator[Database]:
        database = self.make_database(tmp_path)
        yield database
        database.close()

    # -- the database -----------------------------------------------------------------------
    def test_a_failed_transaction_leaves_nothing(self, database: Database) -> None:
        database.apply(TABLE)
        with database.transaction() as connection:
            connection.execute("INSERT INTO t VALUES (?, ?)", ("a", 1))

        def both() -> None:
            with database.transaction() as connection:
                connection.execute("INSERT INTO t VALUES (?, ?)", ("b", 2))
                connection.execute("INSERT INTO t VALUES (?, ?)", ("a", 3))

        with pytest.raises(database.integrity_error):
            both()
        assert [tuple(row) for row in database.query("SELECT k, n FROM t")] == [("a", 1)]

    def test_a_transaction_reads_its_own_writes(self, database: Database) -> None:
        database.apply(TABLE)
        with database.transaction() as connection:
            connection.execute("INSERT INTO t VALUES (?, ?)", ("a", 5 * GiB))
            (row,) = database.query("SELECT n, k FROM t WHERE ? IS NULL OR k = ?", (None, None))
            assert (row["n"], row[1]) == (5 * GiB, "a")
        assert database.query("SELECT COUNT(*) AS n FROM t WHERE k LIKE '%a%'")[0]["n"] == 1

    def test_columns_are_added_once(self, database: Database) -> None:
        database.apply("CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY);")
        for _ in range(2):
            database.add_columns("t", {"size": "INTEGER NOT NULL DEFAULT 0", "note": "TEXT"})
        with database.transaction() as connection:
            connection.execute("INSERT INTO t (k, size) VALUES (?, ?)", ("a", 3 * GiB))
        assert tuple(database.query("SELECT k, size, note FROM t")[0]) == ("a", 3 * GiB, None)

    # -- users ------------------------------------------------------------------------------
    def test_users_tokens_and_strings(self, database: Database) -> None:
        users = UserStore(database)
        token = users.add("alice", Allotment(cpus=1.5, memory=8 * GiB, disk=50 * GiB))
        assert users.authenticate(token) == "alice"
        with pytest.raises(Conflict, match="alice"):
            users.add("alice")
        assert users.allotment("alice") == Allotment(cpus=1.5, memory=8 * GiB, disk=50 * GiB)
        assert users.allotment("nobody") == Allotment()
        fresh = users.new_token("alice")
        with pytest.raises(Unauthorized):
            users.authenticate(token)
        users.revoke("alice")
        with pytest.raises(Unauthorized):
            users.authenticate(fresh)
        with pytest.raises(NotFound):
            users.revoke("bob")
        users.add("bob")
        assert [(user.name, user.revoked is not None) for user in users.list()] == [
            ("alice", True),
            ("bob", False),
        ]
        assert UserStore(database).allotment("bob") == Allotment()  # opened again: kept

    # -- jobs and runs ----------------------------------------------------------------------
    def test_a_job_comes_back_as_created(self, database: Database) -> None:
        jobs = JobStore(database)
        job = make_job("j1", runs=3)
        jobs.create(job)
        assert jobs.get("j1", viewer="alice") == job
        assert jobs.get("j1", viewer=None) == job
        with pytest.raises(JobNotFound):
            jobs.get("j1", viewer="bob")
        jobs.create(make_job("j2", created=T0 + timedelta(seconds=1)))
        assert [j.id for j in jobs.list(viewer="alice")] == ["j2", "j1"]
        assert [r.id for r in jobs.at(Station.QUEUED)] == ["j1-0", "j1-1", "j1-2", "j2-0"]
        assert jobs.queued_count("alice") == 4
        jobs.create(replace(make_job("j3"), process="q", status=JobStatus.RUNNING))

        def listed(viewer: str = "alice", **only: tuple) -> list[str]:
            return [j.id for j in jobs.list(viewer=viewer, only=JobFilter(**only))]

        assert listed(statuses=(JobStatus.ACCEPTED,)) == ["j2", "j1"]
        assert listed(processes=("q",)) == ["j3"]
        assert listed(statuses=(JobStatus.RUNNING, JobStatus.FAILED), processes=("p",)) == []
        assert listed("bob", statuses=(JobStatus.RUNNING,)) == []

    def test_a_move_happens_only_from_where_the_caller_saw_the_run(
        self, database: Database
    ) -> None:
        jobs = JobStore(database)
        jobs.create(make_job("j", runs=2))
        run = jobs.run("j-0")
        staged = jobs.move(run, Station.STAGE, server="a")
        assert staged is not None
        assert jobs.run("j-0").server == "a"
        assert jobs.move(run, Station.STAGE, server="b") is None  # seen queued: it is not
        assert jobs.move(replace(staged, server="b"), Station.RUN) is None  # a's, not b's
        assert jobs.move(staged, Station.ALLOCATE) is not None
        assert jobs.get("j", viewer=None).status == JobStatus.RUNNING

    def test_racing_threads_start_a_run_once(self, database: Database) -> None:
        jobs = JobStore(database)
        jobs.create(make_job("j"))
        run = jobs.run("j-0")
        with ThreadPoolExecutor(8) as pool:
            won = list(pool.map(lambda n: jobs.move(run, Station.STAGE, server=f"s{n}"), range(8)))
        winners = [moved for moved in won if moved is not None]
        assert len(winners) == 1
        assert jobs.run("j-0").server == winners[0].server

    def test_a_jobs_status_follows_runs_moved_at_once(self, database: Database) -> None:
        """Write transactions never interleave: each run's move recomputes the job's status
        from every run, so runs finishing together still leave the job successful."""
        jobs = JobStore(database)
        jobs.create(make_job("j", runs=12))
        start = threading.Barrier(12)

        def finish(run: Run) -> Run:
            start.wait()
            return walk(jobs, run, server="s", output=GiB)

        with ThreadPoolExecutor(12) as pool:
            done = list(pool.map(finish, jobs.runs_of("j")))
        job = jobs.get("j", viewer=None)
        assert [run.station for run in done] == [Station.DONE] * 12
        assert job.status == JobStatus.SUCCESSFUL
        assert job.finished is not None
        assert jobs.disk_used("alice") == 12 * GiB  # past 2^31: 64-bit columns

    def test_dismissing_and_forgetting(self, database: Database) -> None:
        jobs = JobStore(database)
        jobs.create(make_job("j", runs=2))
        walk(jobs, jobs.run("j-0"), server="s", output=100)
        open_runs = jobs.dismiss("j", viewer="alice", message="by its owner")
        assert [run.id for run in open_runs] == ["j-1"]
        job = jobs.get("j", viewer="alice")
        assert job.status == JobStatus.DISMISSED
        assert [run.station for run in job.runs] == [Station.DONE, Station.DISMISSED]
        assert jobs.disk_used("alice") == 100
        jobs.forget_results("j", viewer="alice", message="results deleted")
        assert jobs.disk_used("alice") == 0

    def test_waiting_reasons_change_no_station(self, database: Database) -> None:
        jobs = JobStore(database)
        jobs.create(make_job("j"))
        run = jobs.run("j-0")
        jobs.set_waiting(run, "waiting for free slots")
        assert jobs.run("j-0") == replace(run, waiting="waiting for free slots")

    # -- algorithm versions -----------------------------------------------------------------
    def test_one_of_two_deploys_of_an_id_wins(self, database: Database, tmp_path: Path) -> None:
        versions = VersionStore(database)

        def claim(owner: str) -> str:
            try:
                versions.claim(
                    "p", "1", owner=owner, public=False, replacing=False,
                    package=tmp_path / owner, manifest="id: p",
                )  # fmt: skip
            except Conflict:
                return "refused"
            return owner

        with ThreadPoolExecutor(4) as pool:
            outcomes = list(pool.map(claim, ["alice", "bob", "carol", "dave"]))
        assert sorted(outcomes).count("refused") == 3
        (winner,) = [o for o in outcomes if o != "refused"]
        assert versions.owner("p") == winner
        versions.promote("p", "1", python="/usr/bin/python3", deployed=T0)
        assert [row["version"] for row in versions.live("p")] == ["1"]
        assert versions.states("p") == {"live"}

    # -- servers ----------------------------------------------------------------------------
    def test_servers_see_each_other_and_find_the_gone(self, database: Database) -> None:
        one, two = Servers(database, lease=10), Servers(database, lease=10)
        one.register()
        two.register()
        assert two.alive(now=0) == {one.me, two.me}  # this host, this process: alive
        one.leave()
        assert two.alive(now=0) == {two.me}
