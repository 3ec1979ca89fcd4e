"""Subscriptions without a server: the policies on made-up granules, and the trigger loop
over a real catalogue and job store with a stand-in for the service's ``submit``, killed
and restarted at the awkward moments."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from nearline.archive import Asset, Collection, Item, SQLiteCatalogue
from nearline.db import SQLiteDatabase
from nearline.errors import InvalidRequest, OrderError, ServiceError
from nearline.orders import InputRef, Job, JobStatus, Run, Station
from nearline.orders._store import JobStore
from nearline.orders.subscriptions import (
    Batch,
    Each,
    Pending,
    Period,
    RunKind,
    RunState,
    SavedSearch,
    Subscription,
    SubscriptionRun,
    SubscriptionStore,
    SubscriptionWatch,
    parse_duration,
    parse_policy,
)

T0 = datetime(2026, 3, 10, tzinfo=UTC)
COLLECTION = "granules"


# -- durations and policies -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "moment", "start", "end"),
    [
        ("P1D", "2026-03-10T17:00Z", "2026-03-10T00:00Z", "2026-03-11T00:00Z"),
        ("PT6H", "2026-03-10T17:00Z", "2026-03-10T12:00Z", "2026-03-10T18:00Z"),
        ("P1W", "2026-03-12T17:00Z", "2026-03-09T00:00Z", "2026-03-16T00:00Z"),  # Monday on
        ("P1M", "2026-12-31T23:00Z", "2026-12-01T00:00Z", "2027-01-01T00:00Z"),
        ("P3M", "2026-05-02T00:00Z", "2026-04-01T00:00Z", "2026-07-01T00:00Z"),
        ("P1Y", "2026-05-02T00:00Z", "2026-01-01T00:00Z", "2027-01-01T00:00Z"),
        ("PT10S", "1970-01-01T00:00:25Z", "1970-01-01T00:00:20Z", "1970-01-01T00:00:30Z"),
    ],
)
def test_a_period_is_the_calendar_period_holding_the_moment(text, moment, start, end):
    period = parse_duration(text, what="period")
    found = period.period_of(datetime.fromisoformat(moment))
    assert found == (datetime.fromisoformat(start), datetime.fromisoformat(end))


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ("daily", "policy:"),
        ({}, "policy:"),
        ({"each": 2}, "policy.each"),
        ({"batch": 0}, "policy.batch"),
        ({"batch": "3"}, "policy.batch"),
        ({"batch": 3, "each": 1}, "policy:"),
        ({"period": "1 day"}, "policy.period"),
        ({"period": "P0D"}, "policy.period"),
        ({"period": "P1M1D"}, "policy.period"),
        ({"period": "P1D", "deadline": "P1M"}, "policy.deadline"),
        ({"period": "P1D", "deadline": 6}, "policy.deadline"),
        ({"deadline": "PT6H"}, "policy:"),
    ],
)
def test_a_bad_policy_is_refused_naming_its_field(policy, field):
    with pytest.raises(InvalidRequest, match=field):
        parse_policy(policy)


def pending(index: int, start: datetime, *, position: int | None = None) -> Pending:
    return Pending(COLLECTION, f"g{index:03d}", start, index if position is None else position)


def names(groups) -> list[list[str]]:
    return [[granule.item for granule in group.granules] for group in groups]


def test_each_runs_every_granule_alone_in_arrival_order():
    waiting = [pending(2, T0), pending(1, T0 + timedelta(hours=1))]
    assert names(Each().ready(waiting, latest=None, now=T0)) == [["g001"], ["g002"]]
    assert Each().waiting(waiting) == []


def test_a_batch_runs_full_batches_in_arrival_order_and_holds_the_rest():
    waiting = [pending(i, T0 - timedelta(minutes=i)) for i in range(7)]
    policy = Batch(3)
    assert names(policy.ready(waiting, latest=None, now=T0)) == [
        ["g000", "g001", "g002"],
        ["g003", "g004", "g005"],
    ]
    (held,) = policy.waiting(waiting)
    assert [g.item for g in held.granules] == ["g006"]
    assert held.until == "2 more granule(s) for a batch of 3"


def test_a_period_runs_when_a_granule_of_a_later_period_arrives():
    day = [pending(i, T0 + timedelta(hours=2 * i)) for i in range(3)]
    policy = parse_policy({"period": "P1D", "deadline": "PT6H"})
    assert isinstance(policy, Period)
    assert policy.ready(day, latest=day[-1].start, now=T0 + timedelta(hours=12)) == []
    (held,) = policy.waiting(day)
    assert held.until.startswith("period 2026-03-10T00:00:00Z/P1D: a granule of a later period")
    assert held.until.endswith("or the deadline 2026-03-11T06:00:00Z")
    tomorrow = pending(3, T0 + timedelta(days=1, hours=1))
    (group,) = policy.ready([*day, tomorrow], latest=tomorrow.start, now=T0)
    assert [g.item for g in group.granules] == ["g000", "g001", "g002"]
    assert group.note == "period 2026-03-10T00:00:00Z/P1D: complete (3 granule(s))"


def test_a_period_runs_partial_at_its_deadline_and_says_so():
    day = [pending(i, T0 + timedelta(hours=2 * i)) for i in range(2)]
    policy = parse_policy({"period": "P1D", "deadline": "PT6H"})
    deadline = T0 + timedelta(days=1, hours=6)
    before = deadline - timedelta(seconds=1)
    assert policy.ready(day, latest=day[-1].start, now=before) == []
    (group,) = policy.ready(day, latest=day[-1].start, now=deadline)
    assert "partial" in group.note
    assert "PT6H" in group.note
    assert "2 granule(s)" in group.note
    # while a backfill has not read past the period's end, the period may not be complete
    reading = T0 + timedelta(hours=20)
    assert policy.ready(day, latest=day[-1].start, now=deadline, reading_until=reading) == []


def test_a_period_without_a_deadline_waits_for_a_later_one():
    day = [pending(0, T0)]
    policy = parse_policy({"period": "P1D"})
    assert policy.ready(day, latest=T0, now=T0 + timedelta(days=365)) == []


# -- the loop, over a real catalogue and job store ------------------------------------------
def granule(name: str, start: datetime, *, owner: str | None = None, **properties) -> Item:
    ring = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [0.0, 0.0]]
    return Item(
        id=name,
        collection=COLLECTION,
        start=start,
        end=start + timedelta(minutes=5),
        geometry={"type": "Polygon", "coordinates": [ring]},
        bbox=(0.0, 0.0, 1.0, 1.0),
        properties=properties,
        assets={"data": Asset(location=f"/nowhere/{name}")},
        owner=owner,
    )


class World:
    """A catalogue, a job store and the subscriptions' store in a folder, and a watch over
    them whose ``submit`` makes a job of one run per granule group (as the service does,
    without running anything). ``restart()`` is a kill -9: the objects are dropped, the
    files stay."""

    def __init__(self, folder: Path, *, throttle: int = 2, shared: bool = False) -> None:
        self.folder = folder
        self.throttle = throttle
        self.refuse: set[str] = set()  # granules whose order is refused
        self.fail_next = False  # the next submit fails as a crash would, before the job
        self.submitted: list[str] = []
        self.batches: list[int] = []  # how many orders each call of submit carried
        self.open()
        if shared:  # a second server on the same files
            return
        with SQLiteCatalogue(folder / "catalogue.db") as catalogue:
            catalogue.put_collection(Collection(id=COLLECTION))

    def open(self) -> None:
        self.database = SQLiteDatabase(self.folder / "service.db")
        self.catalogue = SQLiteCatalogue(self.folder / "catalogue.db")
        self.jobs = JobStore(self.database)
        self.store = SubscriptionStore(self.database)
        self.watch = SubscriptionWatch(
            store=self.store,
            catalogue=self.catalogue,
            jobs=self.jobs,
            submit=self.submit,
            version_of=lambda subscription: subscription.version or "1.0",
            base_url="http://127.0.0.1:1",
            throttle=self.throttle,
        )

    def restart(self) -> None:
        self.database.close()
        self.catalogue.close()
        self.open()

    def submit(
        self, subscription: Subscription, orders: Sequence[tuple[SubscriptionRun, dict]]
    ) -> dict[str, ServiceError]:
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("killed before the jobs were made")
        self.batches.append(len(orders))
        refused: dict[str, ServiceError] = {}
        jobs = []
        stamp = datetime.now(UTC)
        for run, body in orders:
            ids = body["inputs"]["granules"]["ids"]
            if set(ids) & self.refuse:
                refused[run.job] = OrderError(
                    f"input granules: refused {sorted(set(ids) & self.refuse)}"
                )
                continue
            refs = tuple(InputRef("granules", COLLECTION, item) for item in ids)
            jobs.append(
                Job(
                    id=run.job,
                    owner=subscription.owner,
                    process=subscription.process,
                    version=run.version,
                    status=JobStatus.ACCEPTED,
                    created=stamp,
                    updated=stamp,
                    message=run.note,
                    runs=(Run(f"{run.job}-0", run.job, 0, Station.QUEUED, refs),),
                )
            )
        self.submitted.extend(self.jobs.create_all(jobs))
        return refused

    def subscribe(self, policy: dict, *, datetime_: str | None = None, **properties) -> str:
        subscription = Subscription(
            id=f"s{len(self.store.list())}",
            owner="alice",
            process="sizes",
            input="granules",
            search=SavedSearch(
                collections=(COLLECTION,), datetime=datetime_, properties=properties
            ),
            policy=parse_policy(policy),
            created=datetime.now(UTC),
            read_to=self.catalogue.position(),
            backfill="reading" if datetime_ else "none",
        )
        self.store.add(subscription)
        return subscription.id

    def ingest(self, *items: Item) -> None:
        self.catalogue.add_items(items)

    def finish(self, job_id: str) -> None:
        (run,) = self.jobs.runs_of(job_id)
        self.jobs.move(run, Station.DONE)

    def runs(self, id: str) -> list[SubscriptionRun]:
        return self.store.runs(id)

    def ran(self, id: str) -> list[str]:
        """Every granule of every job the subscription's owner has, with repeats."""
        return sorted(
            ref.item
            for job in self.jobs.list(viewer="alice", limit=10_000)
            for run in job.runs
            for ref in run.inputs
        )


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    made = World(tmp_path)
    yield made
    made.database.close()
    made.catalogue.close()


def test_a_granule_ingested_twice_runs_once(world):
    sid = world.subscribe({"each": 1})
    world.ingest(granule("a", T0))
    world.watch.tick()
    world.ingest(granule("a", T0), granule("b", T0))  # a replaced: it is a change again
    world.watch.tick()
    world.watch.tick()
    assert world.ran(sid) == ["a", "b"]


def test_items_the_subscriber_may_not_see_or_that_do_not_match_are_never_matched(world):
    sid = world.subscribe({"each": 1}, platform=["noaa18", "noaa19"])
    world.ingest(
        granule("bobs", T0, owner="bob", platform="noaa19"),
        granule("alices", T0, owner="alice", platform="noaa19"),
        granule("other", T0, platform="metop-a"),
        granule("public", T0, platform="noaa18"),
    )
    world.watch.tick()
    assert world.ran(sid) == ["alices", "public"]


def test_a_restart_after_the_job_was_made_but_before_it_was_recorded_makes_no_second(world):
    sid = world.subscribe({"each": 1})
    world.ingest(granule("a", T0))
    world.watch.tick()
    (run,) = world.runs(sid)
    world.store.set_state(run.job, RunState.PLANNED)  # as if killed before recording it
    world.restart()
    world.watch.tick()
    assert world.submitted == [run.job]
    assert world.runs(sid)[0].state == RunState.SUBMITTED


def test_a_restart_before_the_job_was_made_makes_it_then(world):
    sid = world.subscribe({"batch": 2})
    world.ingest(granule("a", T0), granule("b", T0))
    world.fail_next = True
    world.watch.tick()  # the turn fails after the claim, before the job
    (run,) = world.runs(sid)
    assert run.state == RunState.PLANNED
    assert world.submitted == []
    world.restart()
    world.watch.tick()
    assert world.submitted == [run.job]
    assert world.ran(sid) == ["a", "b"]


def test_a_burst_of_granules_makes_one_job_each_in_one_submit(world):
    sid = world.subscribe({"each": 1})
    names = [f"g{i:03}" for i in range(120)]
    world.ingest(*[granule(name, T0 + timedelta(seconds=i)) for i, name in enumerate(names)])
    world.watch.tick()
    world.ingest(*[granule(name, T0) for name in names[:10]])  # again: changes, not new
    world.watch.tick()
    assert world.batches == [120]  # one write for the burst, not one a granule
    assert world.ran(sid) == names
    runs = world.runs(sid)
    assert len(runs) == 120
    assert {run.state for run in runs} == {RunState.SUBMITTED}
    assert sorted(g for run in runs for g in run.granules) == [f"{COLLECTION}/{n}" for n in names]


def test_two_servers_triggering_one_burst_make_each_job_once(world):
    sid = world.subscribe({"each": 1})
    second = World(world.folder, shared=True)
    names = [f"g{i:03}" for i in range(80)]
    for round_ in range(4):  # bursts while both servers take their turns at once
        part = names[round_ * 20 : (round_ + 1) * 20]
        world.ingest(*[granule(name, T0) for name in part])
        start = threading.Barrier(2)
        turns = [
            threading.Thread(target=lambda w=w, s=start: (s.wait(), w.watch.tick()))
            for w in (world, second)
        ]
        for turn in turns:
            turn.start()
        for turn in turns:
            turn.join()
    world.watch.tick()
    second.watch.tick()
    assert world.ran(sid) == names  # every granule, none twice
    assert not set(world.submitted) & set(second.submitted)
    assert sorted(world.submitted + second.submitted) == sorted(r.job for r in world.runs(sid))
    assert {run.state for run in world.runs(sid)} == {RunState.SUBMITTED}
    second.database.close()
    second.catalogue.close()


def test_a_stale_reader_cannot_read_the_same_changes_again(world):
    sid = world.subscribe({"each": 1})
    stale = world.store.get(sid)
    world.ingest(granule("a", T0))
    world.watch.tick()
    later = world.catalogue.position()
    matched = [Pending(COLLECTION, "a", T0, later)]
    assert not world.store.advance(stale, read_to=later, matched=matched)
    assert world.store.pending() == {}


def test_a_refused_order_says_why_and_its_granules_stay_claimed(world):
    sid = world.subscribe({"each": 1})
    world.refuse.add("bad")
    world.ingest(granule("bad", T0))
    world.watch.tick()
    (run,) = world.runs(sid)
    assert run.state == RunState.REFUSED
    assert "refused" in run.message
    world.ingest(granule("bad", T0))
    world.watch.tick()
    assert len(world.runs(sid)) == 1


def test_a_backfill_runs_over_the_archive_a_few_jobs_at_a_time(world):
    world.ingest(*[granule(f"old{i}", T0 + timedelta(minutes=5 * i)) for i in range(7)])
    sid = world.subscribe({"each": 1}, datetime_="2026-03-10/..")
    for _ in range(3):
        world.watch.tick()
    first = world.runs(sid)
    assert len(first) == 2
    assert {run.kind for run in first} == {RunKind.BACKFILL}
    world.ingest(granule("new", T0 + timedelta(days=1)))  # new granules are not held back
    world.watch.tick()
    assert [run.kind for run in world.runs(sid)].count(RunKind.NEW) == 1
    for _ in range(20):
        if len(world.runs(sid)) == 8:
            break
        for run in world.runs(sid):
            if world.jobs.get(run.job, viewer=None).status == JobStatus.ACCEPTED:
                world.finish(run.job)
        world.watch.tick()
        world.watch.tick()
        open_backfill = [
            run
            for run in world.runs(sid)
            if run.kind == RunKind.BACKFILL
            and world.jobs.get(run.job, viewer=None).status == JobStatus.ACCEPTED
        ]
        assert len(open_backfill) <= 2
    assert world.ran(sid) == sorted([f"old{i}" for i in range(7)] + ["new"])
    assert world.store.get(sid).backfill == "done"


def test_while_other_orders_wait_a_backfill_keeps_one_job_in_the_queue(world):
    world.ingest(*[granule(f"old{i}", T0 + timedelta(minutes=5 * i)) for i in range(4)])
    stamp = datetime.now(UTC)
    queued = Run("users-0", "users", 0, Station.QUEUED, ())
    world.jobs.create(Job("users", "bob", "sizes", "1.0", JobStatus.ACCEPTED, stamp, stamp,
                          runs=(queued,)))  # fmt: skip
    sid = world.subscribe({"each": 1}, datetime_="2026-03-10/..")
    for _ in range(4):
        world.watch.tick()
    assert len(world.runs(sid)) == 1
    world.jobs.move(queued, Station.DONE)
    world.watch.tick()
    assert len(world.runs(sid)) == 2


def test_a_backfilled_period_runs_whole_days_and_the_last_one_partial(world):
    days = [T0 + timedelta(days=d, hours=h) for d in range(3) for h in (1, 9, 17)]
    world.ingest(*[granule(f"d{i}", start) for i, start in enumerate(days)])
    sid = world.subscribe({"period": "P1D", "deadline": "PT1H"}, datetime_="2026-03-01/..")
    world.watch.throttle = 5
    for _ in range(6):
        world.watch.tick()
    runs = world.runs(sid)
    assert [len(run.granules) for run in runs] == [3, 3, 3]
    assert ["complete" in run.note for run in runs] == [True, True, False]
    assert "partial" in runs[-1].note


def test_a_pinned_subscription_runs_its_version(world):
    sid = world.subscribe({"each": 1})
    world.store.pin(sid, "0.9")
    world.ingest(granule("a", T0))
    world.watch.tick()
    assert [run.version for run in world.runs(sid)] == ["0.9"]


class Crashes(RuleBasedStateMachine):
    """Ingest (new granules and granules again), turns of the loop, kill -9 at any point
    (also between a job being made and being recorded), failing submits: every granule the
    subscription matched runs once, never twice."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="nearline-crashes-"))
        self.world = World(self.folder)
        self.sid = self.world.subscribe({"batch": 2})
        self.ingested: set[str] = set()

    @rule(index=st.integers(0, 7))
    def ingest(self, index: int) -> None:
        self.world.ingest(granule(f"g{index}", T0 + timedelta(minutes=index)))
        self.ingested.add(f"g{index}")

    @rule()
    def tick(self) -> None:
        self.world.watch.tick()  # a failing submit is logged, the turn goes on

    @rule()
    def fail_next_submit(self) -> None:
        self.world.fail_next = True

    @precondition(lambda self: self.world.runs(self.sid))
    @rule(data=st.data())
    def crash_before_recording(self, data: st.DataObject) -> None:
        run = data.draw(st.sampled_from(self.world.runs(self.sid)))
        self.world.store.set_state(run.job, RunState.PLANNED)
        self.world.restart()

    @rule()
    def crash(self) -> None:
        self.world.restart()

    @invariant()
    def no_granule_runs_twice(self) -> None:
        ran = self.world.ran(self.sid)
        assert len(ran) == len(set(ran))

    def teardown(self) -> None:
        self.world.fail_next = False
        self.world.ingest(granule("last", T0 + timedelta(hours=1)))
        self.ingested.add("last")
        self.world.watch.tick()
        held = {g.item for g in self.world.store.pending().get(self.sid, [])}
        ran = self.world.ran(self.sid)
        assert sorted(ran) == sorted(set(ran))
        assert set(ran) | held == self.ingested
        assert len(held) <= 1
        self.world.database.close()
        self.world.catalogue.close()
        shutil.rmtree(self.folder, ignore_errors=True)


Crashes.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_kill_9_at_any_moment_runs_every_granule_once = Crashes.TestCase


def test_a_subscription_keeps_what_it_was_made_with(world):
    sid = world.subscribe({"period": "P1D", "deadline": "PT6H"}, platform="noaa19")
    kept = world.store.get(sid)
    assert kept.policy.to_dict() == {"period": "P1D", "deadline": "PT6H"}
    assert kept.search.properties == {"platform": "noaa19"}
    assert (kept.owner, kept.process, kept.input, kept.backfill) == ("alice", "sizes", "granules",
                                                                      "none")  # fmt: skip
