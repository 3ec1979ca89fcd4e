"""Subscriptions, durable, in the service's database: each subscription with how far it has
read the catalogue's changes, the granules it waits with, and its runs (job ids) with the
granules each ran on.

Written as portable SQL (``?`` placeholders, standard types, ``ON CONFLICT DO NOTHING``), so
a PostgreSQL backend runs the same statements. Every step that must not happen twice is one
transaction:

- reading changes: the granules matched become pending and the read position moves, together
  (and only from the position the caller read from);
- claiming: pending granules leave, the run is recorded with its job id chosen beforehand, and
  each granule is claimed for (subscription, algorithm version), together. The claim is the
  de-duplication: a granule claimed by a subscription is never pending for it again;
- the job itself is made afterwards with that id, so a run found planned after a restart is
  made then, and one whose job exists already is only marked made.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from nearline.db import Database
from nearline.orders.subscriptions._model import (
    RunKind,
    RunState,
    SavedSearch,
    Subscriber,
    Subscription,
    SubscriptionRun,
)
from nearline.orders.subscriptions._policies import Group, Pending, parse_policy

SCHEMA = """
CREATE TABLE IF NOT EXISTS subscriptions (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    process TEXT NOT NULL,
    version TEXT,
    input_name TEXT NOT NULL,
    search TEXT NOT NULL,
    parameters TEXT NOT NULL,
    policy TEXT NOT NULL,
    subscriber TEXT,
    created TEXT NOT NULL,
    read_to BIGINT NOT NULL,
    backfill TEXT NOT NULL,
    backfill_token TEXT,
    backfill_until TEXT,
    latest TEXT
);
CREATE INDEX IF NOT EXISTS subscriptions_by_owner ON subscriptions (owner, created);
CREATE TABLE IF NOT EXISTS subscription_pending (
    subscription TEXT NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    collection TEXT NOT NULL,
    item TEXT NOT NULL,
    start_time TEXT NOT NULL,
    arrival BIGINT NOT NULL,
    backfill INTEGER NOT NULL,
    PRIMARY KEY (subscription, collection, item)
);
CREATE TABLE IF NOT EXISTS subscription_runs (
    job TEXT PRIMARY KEY,
    subscription TEXT NOT NULL,
    version TEXT NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    note TEXT,
    message TEXT,
    created TEXT NOT NULL,
    status TEXT,
    callback TEXT
);
CREATE INDEX IF NOT EXISTS subscription_runs_by_subscription
    ON subscription_runs (subscription, created);
CREATE INDEX IF NOT EXISTS subscription_runs_by_state ON subscription_runs (state, created);
CREATE TABLE IF NOT EXISTS subscription_inputs (
    subscription TEXT NOT NULL,
    version TEXT NOT NULL,
    collection TEXT NOT NULL,
    item TEXT NOT NULL,
    job TEXT NOT NULL,
    PRIMARY KEY (subscription, version, collection, item)
);
CREATE INDEX IF NOT EXISTS subscription_inputs_by_item
    ON subscription_inputs (subscription, collection, item);
CREATE INDEX IF NOT EXISTS subscription_inputs_by_job ON subscription_inputs (job);
"""
BATCH = 500  # names per IN (...) list


def stamp(moment: datetime) -> str:
    """A time as stored: UTC, fixed width, so that text order is time order."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _subscription(row: Mapping[str, Any]) -> Subscription:
    search = json.loads(row["search"])
    return Subscription(
        id=row["id"],
        owner=row["owner"],
        process=row["process"],
        version=row["version"],
        input=row["input_name"],
        search=SavedSearch(
            collections=tuple(search["collections"]),
            bbox=tuple(search["bbox"]) if search.get("bbox") else None,
            intersects=search.get("intersects"),
            datetime=search.get("datetime"),
            properties=search.get("properties", {}),
        ),
        policy=parse_policy(json.loads(row["policy"])),
        created=datetime.fromisoformat(row["created"]),
        parameters=json.loads(row["parameters"]),
        subscriber=(
            Subscriber(
                success_uri=json.loads(row["subscriber"]).get("successUri"),
                failed_uri=json.loads(row["subscriber"]).get("failedUri"),
            )
            if row["subscriber"]
            else None
        ),
        read_to=row["read_to"],
        backfill=row["backfill"],
        backfill_token=row["backfill_token"],
        backfill_until=_time(row["backfill_until"]),
        latest=_time(row["latest"]),
    )


def _pending(row: Mapping[str, Any]) -> Pending:
    return Pending(
        collection=row["collection"],
        item=row["item"],
        start=datetime.fromisoformat(row["start_time"]),
        position=row["arrival"],
        backfill=bool(row["backfill"]),
    )


def _later(first: datetime | None, granules: Iterable[Pending]) -> datetime | None:
    starts = [granule.start for granule in granules]
    if first is not None:
        starts.append(first)
    return max(starts) if starts else None


class SubscriptionStore:
    """Subscriptions, their pending granules, their runs and their claims."""

    def __init__(self, database: Database) -> None:
        self.database = database
        database.apply(SCHEMA)

    # -- subscriptions ----------------------------------------------------------------------
    def add(self, subscription: Subscription) -> None:
        s = subscription
        with self.database.transaction() as connection:
            connection.execute(
                "INSERT INTO subscriptions (id, owner, process, version, input_name, search, "
                "parameters, policy, subscriber, created, read_to, backfill, backfill_token, "
                "backfill_until, latest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    s.id,
                    s.owner,
                    s.process,
                    s.version,
                    s.input,
                    json.dumps(s.search.to_dict()),
                    json.dumps(dict(s.parameters)),
                    json.dumps(s.policy.to_dict()),
                    json.dumps(s.subscriber.to_dict()) if s.subscriber else None,
                    stamp(s.created),
                    s.read_to,
                    s.backfill,
                    s.backfill_token,
                    stamp(s.backfill_until) if s.backfill_until else None,
                    stamp(s.latest) if s.latest else None,
                ),
            )

    def get(self, id: str) -> Subscription | None:
        rows = self.database.query("SELECT * FROM subscriptions WHERE id = ?", (id,))
        return _subscription(rows[0]) if rows else None

    def list(self, owner: str | None = None) -> list[Subscription]:
        """``owner``'s subscriptions (None: everyone's), oldest first."""
        rows = self.database.query(
            "SELECT * FROM subscriptions WHERE ? IS NULL OR owner = ? ORDER BY created, id",
            (owner, owner),
        )
        return [_subscription(row) for row in rows]

    def delete(self, id: str) -> None:
        """Forget the subscription, what it waits for and its runs (their jobs stay)."""
        with self.database.transaction() as connection:
            for table, key in (
                ("subscription_inputs", "subscription"),
                ("subscription_runs", "subscription"),
                ("subscription_pending", "subscription"),
                ("subscriptions", "id"),
            ):
                connection.execute(f"DELETE FROM {table} WHERE {key} = ?", (id,))

    def pin(self, id: str, version: str) -> None:
        with self.database.transaction() as connection:
            connection.execute("UPDATE subscriptions SET version = ? WHERE id = ?", (version, id))

    # -- reading the catalogue --------------------------------------------------------------
    def advance(
        self, subscription: Subscription, *, read_to: int, matched: Sequence[Pending]
    ) -> bool:
        """The granules a read of the changes matched become pending (those the subscription
        claimed already excepted) and its read position moves to ``read_to``, in one
        transaction; False (nothing done) if another reader moved it first."""
        with self.database.transaction() as connection:
            moved = connection.execute(
                "UPDATE subscriptions SET read_to = ?, latest = ? WHERE id = ? AND read_to = ?",
                (
                    read_to,
                    self._latest(subscription, matched),
                    subscription.id,
                    subscription.read_to,
                ),
            ).rowcount
            if moved:
                self._hold(connection, subscription.id, matched)
        return bool(moved)

    def backfilled(
        self,
        subscription: Subscription,
        *,
        token: str | None,
        matched: Sequence[Pending],
        until: datetime | None,
    ) -> bool:
        """A page of the backfill read: its granules pending, the next page's ``token``
        (None: the backfill is done) kept, in one transaction; False if another reader read
        that page first."""
        with self.database.transaction() as connection:
            moved = connection.execute(
                "UPDATE subscriptions SET backfill = ?, backfill_token = ?, backfill_until = ?, "
                "latest = ? WHERE id = ? AND backfill = 'reading' AND "
                "(backfill_token = ? OR (backfill_token IS NULL AND ? IS NULL))",
                (
                    "reading" if token is not None else "done",
                    token,
                    stamp(until) if until else None,
                    self._latest(subscription, matched),
                    subscription.id,
                    subscription.backfill_token,
                    subscription.backfill_token,
                ),
            ).rowcount
            if moved:
                self._hold(connection, subscription.id, matched)
        return bool(moved)

    @staticmethod
    def _latest(subscription: Subscription, matched: Sequence[Pending]) -> str | None:
        latest = _later(subscription.latest, matched)
        return stamp(latest) if latest else None

    def _hold(self, connection: Any, id: str, granules: Sequence[Pending]) -> None:
        claimed = self._claimed(connection, id, granules)
        connection.executemany(
            "INSERT INTO subscription_pending (subscription, collection, item, start_time, "
            "arrival, backfill) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (subscription, collection, item) DO NOTHING",
            [
                (id, g.collection, g.item, stamp(g.start), g.position, int(g.backfill))
                for g in granules
                if (g.collection, g.item) not in claimed
            ],
        )

    @staticmethod
    def _claimed(
        connection: Any, id: str, granules: Sequence[Pending], version: str | None = None
    ) -> set[tuple[str, str]]:
        """Which of ``granules`` the subscription claimed (at ``version``, or any)."""
        found: set[tuple[str, str]] = set()
        names = sorted({g.item for g in granules})
        for first in range(0, len(names), BATCH):
            part = names[first : first + BATCH]
            marks = ",".join("?" * len(part))
            rows = connection.execute(
                "SELECT collection, item FROM subscription_inputs WHERE subscription = ? "
                f"AND (? IS NULL OR version = ?) AND item IN ({marks})",
                (id, version, version, *part),
            ).fetchall()
            found |= {(row["collection"], row["item"]) for row in rows}
        return found

    def pending(self, id: str | None = None) -> dict[str, list[Pending]]:
        """Granules waiting, by subscription (of ``id`` only, if given)."""
        rows = self.database.query(
            "SELECT * FROM subscription_pending WHERE ? IS NULL OR subscription = ? "
            "ORDER BY subscription, arrival, start_time, item",
            (id, id),
        )
        found: dict[str, list[Pending]] = {}
        for row in rows:
            found.setdefault(row["subscription"], []).append(_pending(row))
        return found

    # -- runs -------------------------------------------------------------------------------
    def claim_all(
        self,
        subscription: Subscription,
        claims: Sequence[tuple[str, Group]],
        *,
        version: str,
        kind: RunKind,
    ) -> list[str]:
        """Each pending (job, group) of ``claims`` becomes a planned run, its granules no
        longer pending and claimed at ``version``, all in one transaction (a burst of
        granules is one write, not one each); a group with a granule no longer pending
        (another server claimed it first) is left out. Returns the jobs claimed."""
        claimed = []
        with self.database.transaction() as connection:  # the only writer while it lasts
            waiting = {
                (row["collection"], row["item"])
                for row in connection.execute(
                    "SELECT collection, item FROM subscription_pending WHERE subscription = ?",
                    (subscription.id,),
                ).fetchall()
            }
            for job, group in claims:
                names = [(granule.collection, granule.item) for granule in group.granules]
                if not all(name in waiting for name in names):
                    continue  # another server claimed it first
                waiting.difference_update(names)
                connection.executemany(
                    "DELETE FROM subscription_pending WHERE subscription = ? "
                    "AND collection = ? AND item = ?",
                    [(subscription.id, *name) for name in names],
                )
                self._record(connection, subscription.id, job, version, kind, group.granules,
                             note=group.note)  # fmt: skip
                claimed.append(job)
        return claimed

    def plan(
        self, subscription: Subscription, runs: Sequence[tuple[str, Group]], *, version: str
    ) -> list[str]:
        """Reprocessing: each (job, group) becomes a planned run at ``version``, leaving out
        granules claimed at that version already; returns the jobs planned. One transaction."""
        planned = []
        with self.database.transaction() as connection:
            for job, group in runs:
                done = self._claimed(connection, subscription.id, group.granules, version)
                left = tuple(g for g in group.granules if (g.collection, g.item) not in done)
                if left:
                    self._record(connection, subscription.id, job, version, RunKind.REPROCESS,
                                 left, note=group.note)  # fmt: skip
                    planned.append(job)
        return planned

    @staticmethod
    def _record(
        connection: Any,
        id: str,
        job: str,
        version: str,
        kind: RunKind,
        granules: Sequence[Pending],
        *,
        note: str | None,
    ) -> None:
        connection.execute(
            "INSERT INTO subscription_runs (job, subscription, version, kind, state, note, "
            "created) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (job, id, version, kind.value, RunState.PLANNED.value, note, stamp(datetime.now(UTC))),
        )
        connection.executemany(
            "INSERT INTO subscription_inputs (subscription, version, collection, item, job) "
            "VALUES (?, ?, ?, ?, ?)",
            [(id, version, g.collection, g.item, job) for g in granules],
        )

    def runs(
        self, id: str | None = None, *, states: Sequence[RunState] | None = None
    ) -> list[SubscriptionRun]:
        """Runs of subscription ``id`` (None: all), in ``states`` (None: any), oldest first."""
        wanted = [state.value for state in states or RunState]
        marks = ",".join("?" * len(wanted))
        rows = self.database.query(
            "SELECT * FROM subscription_runs WHERE (? IS NULL OR subscription = ?) "
            f"AND state IN ({marks}) ORDER BY created, job",
            (id, id, *wanted),
        )
        granules: dict[str, list[str]] = {row["job"]: [] for row in rows}
        jobs = list(granules)
        for first in range(0, len(jobs), BATCH):
            part = jobs[first : first + BATCH]
            for row in self.database.query(
                "SELECT job, collection, item FROM subscription_inputs "
                f"WHERE job IN ({','.join('?' * len(part))}) ORDER BY collection, item",
                tuple(part),
            ):
                granules[row["job"]].append(f"{row['collection']}/{row['item']}")
        return [
            SubscriptionRun(
                job=row["job"],
                subscription=row["subscription"],
                version=row["version"],
                kind=RunKind(row["kind"]),
                state=RunState(row["state"]),
                granules=tuple(granules[row["job"]]),
                created=datetime.fromisoformat(row["created"]),
                note=row["note"],
                message=row["message"],
                status=row["status"],
                callback=row["callback"],
            )
            for row in rows
        ]

    def set_state(
        self,
        job: str,
        state: RunState,
        *,
        status: str | None = None,
        message: str | None = None,
    ) -> None:
        with self.database.transaction() as connection:
            connection.execute(
                "UPDATE subscription_runs SET state = ?, status = COALESCE(?, status), "
                "message = COALESCE(?, message) WHERE job = ?",
                (state.value, status, message, job),
            )

    def set_states(self, jobs: Sequence[str], state: RunState) -> None:
        """Runs ``jobs`` move to ``state``, in one transaction."""
        with self.database.transaction() as connection:
            connection.executemany(
                "UPDATE subscription_runs SET state = ? WHERE job = ?",
                [(state.value, job) for job in jobs],
            )

    def set_callback(self, job: str, outcome: str) -> None:
        with self.database.transaction() as connection:
            connection.execute(
                "UPDATE subscription_runs SET callback = ? WHERE job = ?", (outcome, job)
            )
