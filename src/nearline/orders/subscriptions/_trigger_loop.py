"""The loop that triggers subscriptions: it reads the catalogue's changes, holds each new
granule a subscription matches, turns what its policy says is ready into jobs, reads the
archive for backfills a page at a time, and notices jobs ending (for callbacks and for the
backfill's throttle).

Each turn is a sequence of small transactions (_store.py), so the loop may be
killed anywhere: a restarted one carries on from what was committed and never claims a
granule twice. Jobs are made through the service's own ``submit``, with the planning,
admission and quotas of any order.

The loop learns of new items through a :class:`ChangeFeed`: on SQLite it polls the
catalogue's position (cheap in WAL mode), every 0.2 s; a PostgreSQL catalogue can wake it
with LISTEN/NOTIFY behind the same small interface.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from nearline.archive import Catalogue, Item
from nearline.closing import Closing
from nearline.errors import AlgorithmNotFound, JobNotFound, ServiceError
from nearline.orders._base import Job, JobStatus, Station
from nearline.orders._store import JobStore
from nearline.orders.subscriptions._callbacks import Notifier, status_document
from nearline.orders.subscriptions._model import RunKind, RunState, Subscription, SubscriptionRun
from nearline.orders.subscriptions._policies import Group, Pending
from nearline.orders.subscriptions._store import SubscriptionStore

log = logging.getLogger(__name__)
CHANGES = 1000  # items read from the changes feed at a time
BACKFILL_PAGE = 200  # granules read from the archive at a time by a backfill
BACKFILL_JOBS = 2  # a subscription's backfill and reprocessing jobs not ended, at most
ENDED = (JobStatus.SUCCESSFUL, JobStatus.FAILED, JobStatus.DISMISSED)
# makes runs' jobs (ids ``run.job``) from execute request bodies, together; the refused, by job
Submit = Callable[
    [Subscription, Sequence[tuple[SubscriptionRun, dict[str, Any]]]], dict[str, ServiceError]
]


class ChangeFeed(ABC):
    """How the loop learns that items were added to the catalogue. Implementations keep
    these true: ``wait`` returns True soon (within ``interval`` seconds) after the catalogue's
    position passes ``after``, False once ``timeout`` has passed with none, and at once
    (False) when ``interrupt`` is set."""

    interval: float = 0.2

    @abstractmethod
    def wait(self, after: int, *, timeout: float, interrupt: threading.Event) -> bool:
        """Block until the catalogue holds changes after position ``after``."""

    def close(self) -> None:  # noqa: B027 - polling holds nothing
        """Release what the feed holds (a LISTEN connection)."""


class PollingFeed(ChangeFeed):
    """Asks the catalogue for its position every ``interval`` seconds."""

    def __init__(self, catalogue: Catalogue, *, interval: float = 0.2) -> None:
        self.catalogue = catalogue
        self.interval = interval

    def wait(self, after: int, *, timeout: float, interrupt: threading.Event) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            if self.catalogue.position() > after:
                return True
            left = deadline - time.monotonic()
            if left <= 0 or interrupt.wait(min(self.interval, left)):
                return False


class SubscriptionWatch(Closing):
    """Triggers every subscription kept in ``store``. ``submit(subscription, orders)`` makes
    the jobs of (run, execute request body) pairs, each with id ``run.job``, together, and
    returns the orders refused (by job id); ``version_of`` is the
    algorithm version a subscription runs now. ``tick()`` is one turn of the loop."""

    def __init__(
        self,
        *,
        store: SubscriptionStore,
        catalogue: Catalogue,
        jobs: JobStore,
        submit: Submit,
        version_of: Callable[[Subscription], str],
        base_url: str,
        feed: ChangeFeed | None = None,
        notifier: Notifier | None = None,
        throttle: int = BACKFILL_JOBS,
        housekeeping: float = 1.0,
    ) -> None:
        self.store = store
        self.catalogue = catalogue
        self.jobs = jobs
        self.submit = submit
        self.version_of = version_of
        self.base_url = base_url
        self.feed = feed or PollingFeed(catalogue)
        self.notifier = notifier or Notifier(record=store.set_callback)
        self.throttle = throttle
        self.housekeeping = housekeeping  # seconds between turns when nothing is ingested
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seen = 0
        self._warned: set[str] = set()
        self._versions: dict[str, str] = {}  # subscription: the version it runs, this turn

    # -- life -------------------------------------------------------------------------------
    def start(self) -> None:
        """Send the callbacks a stopped service left unsent, then start the loop."""
        self.notifier.start()
        for run in self.store.runs(states=[RunState.ENDED]):
            if run.callback is None:
                subscription = self.store.get(run.subscription)
                job = self._job(run.job)
                if subscription is not None and job is not None:
                    self._notify(subscription, job)
        self._thread = threading.Thread(
            target=self._loop, name="nearline-subscriptions", daemon=True
        )
        self._thread.start()

    def wake(self) -> None:
        """Take a turn now (a subscription was made, or a backfill has more to read)."""
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.notifier.close()
        self.feed.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.tick()
            except Exception:  # the loop must outlive any one bad subscription
                log.exception("subscriptions: a turn failed")
            self.feed.wait(self._seen, timeout=self.housekeeping, interrupt=self._wake)

    # -- one turn ---------------------------------------------------------------------------
    def tick(self, now: datetime | None = None) -> None:
        """Read the changes, then trigger each subscription; ``now`` for the deadlines."""
        now = now or datetime.now(UTC)
        self._versions.clear()  # asked once a turn, not once a granule
        subscriptions = self.store.list()
        if not subscriptions:
            self._seen = self.catalogue.position()
            return
        self._read_changes(subscriptions)
        subscriptions = self.store.list()
        self._seen = max(s.read_to for s in subscriptions)
        pending = self.store.pending()
        open_runs = self._sync(self.store.runs(states=[RunState.PLANNED, RunState.SUBMITTED]))
        others_queued = _Lazy(lambda: self._others_queued(open_runs))
        for subscription in subscriptions:
            mine = [run for run in open_runs if run.subscription == subscription.id]
            try:
                self._trigger(subscription, pending.get(subscription.id, []), mine, now,
                              others_queued)  # fmt: skip
            except Exception:
                log.exception("subscription %s: its turn failed", subscription.id)

    def _read_changes(self, subscriptions: Sequence[Subscription]) -> None:
        by_position: dict[int, list[Subscription]] = defaultdict(list)
        for subscription in subscriptions:
            by_position[subscription.read_to].append(subscription)
        top = self.catalogue.position()  # every item up to it is committed (or deleted)
        for read_from, readers in sorted(by_position.items()):
            items, read_to = self.catalogue.changes(read_from, limit=CHANGES)
            if len(items) < CHANGES:  # read to the end: past deleted items too
                read_to = max(read_to, top)
            if read_to == read_from:
                continue
            for subscription in readers:
                matched = self._match(subscription, items, read_from)
                self.store.advance(subscription, read_to=read_to, matched=matched)
            if len(items) == CHANGES:
                self.wake()  # more to read: the next turn comes at once

    def _match(
        self, subscription: Subscription, items: list[Item], read_from: int
    ) -> list[Pending]:
        """Which of ``items`` the subscription's search finds, for its owner: the catalogue's
        own search (so matching is exactly what GET /search would find), by their ids."""
        arrival = {
            item.id: read_from + index + 1
            for index, item in enumerate(items)
            if item.collection in subscription.search.collections
        }
        if not arrival:
            return []
        search = subscription.search.to_search(viewer=subscription.owner, ids=tuple(arrival))
        return [
            Pending(item.collection, item.id, item.start, arrival[item.id])
            for item in self.catalogue.search(search).items
            if subscription.search.accepts(item)
        ]

    def _trigger(
        self,
        subscription: Subscription,
        pending: list[Pending],
        open_runs: list[SubscriptionRun],
        now: datetime,
        others_queued: _Lazy,
    ) -> None:
        reading = subscription.backfill == "reading"
        groups = subscription.policy.ready(
            pending,
            latest=subscription.latest,
            now=now,
            reading_until=subscription.backfill_until if reading else None,
        )
        made = self._claim_all(subscription, [g for g in groups if not g.backfill])
        left = [r for r in open_runs if r.state == RunState.PLANNED and r.kind == RunKind.NEW]
        self._make_all(subscription, left + made)  # a burst: one write, one wake
        # backfill and reprocessing: a few jobs at a time; more than one only while no other
        # run waits in the queue, so users' orders go first
        planned = [r for r in open_runs if r.state == RunState.PLANNED and r.kind != RunKind.NEW]
        backfill = [group for group in groups if group.backfill]
        if not (planned or backfill or reading):
            return
        going = sum(r.state == RunState.SUBMITTED and r.kind != RunKind.NEW for r in open_runs)
        room = 1 - going if others_queued.value else self.throttle - going
        while room > 0 and planned:
            room -= self._make(subscription, planned.pop(0))
        if planned:
            return
        for group in backfill:
            if room <= 0:
                return
            run = self._claim(subscription, group, RunKind.BACKFILL)
            if run is not None:
                room -= self._make(subscription, run)
        if room > 0 and reading:
            self._read_backfill(subscription)

    def _read_backfill(self, subscription: Subscription) -> None:
        """The next page of what the archive holds for the subscription."""
        search = subscription.search.to_search(
            viewer=subscription.owner, token=subscription.backfill_token, limit=BACKFILL_PAGE
        )
        page = self.catalogue.search(search)
        matched = [
            Pending(item.collection, item.id, item.start, 0, backfill=True)
            for item in page.items
            if subscription.search.accepts(item)
        ]
        until = max((item.start for item in page.items), default=subscription.backfill_until)
        if self.store.backfilled(subscription, token=page.next_token, matched=matched, until=until):
            self.wake()  # claim what it found at once

    def _version(self, subscription: Subscription) -> str | None:
        """The version the subscription's runs take this turn; None while it has none."""
        try:
            version = self._versions.get(subscription.id) or self.version_of(subscription)
            self._versions[subscription.id] = version
        except AlgorithmNotFound as error:
            if subscription.id not in self._warned:
                log.warning("subscription %s waits: %s", subscription.id, error)
                self._warned.add(subscription.id)
            return None
        self._warned.discard(subscription.id)
        return version

    def _claim(
        self, subscription: Subscription, group: Group, kind: RunKind
    ) -> SubscriptionRun | None:
        runs = self._claim_all(subscription, [group], kind)
        return runs[0] if runs else None

    def _claim_all(
        self, subscription: Subscription, groups: Sequence[Group], kind: RunKind = RunKind.NEW
    ) -> list[SubscriptionRun]:
        """Pending ``groups`` become planned runs, in one transaction (the claim is the
        de-duplication: a group another server claimed first is left out)."""
        version = self._version(subscription) if groups else None
        if version is None:
            return []
        jobs = {uuid.uuid4().hex: group for group in groups}
        claimed = self.store.claim_all(subscription, list(jobs.items()), version=version,
                                       kind=kind)  # fmt: skip
        return [
            SubscriptionRun(
                job=job,
                subscription=subscription.id,
                version=version,
                kind=kind,
                state=RunState.PLANNED,
                granules=tuple(granule.name for granule in jobs[job].granules),
                created=datetime.now(UTC),
                note=jobs[job].note,
            )
            for job in claimed
        ]

    def _make(self, subscription: Subscription, run: SubscriptionRun) -> bool:
        """Make a planned run's job; whether the job exists now."""
        return self._make_all(subscription, [run]) == 1

    def _make_all(self, subscription: Subscription, runs: Sequence[SubscriptionRun]) -> int:
        """Make planned runs' jobs, together (once: a job already made is only recorded);
        how many of the jobs exist now (the others were refused)."""
        if not runs:
            return 0
        made = self.jobs.statuses([run.job for run in runs])  # one query, not one a run
        orders = [(run, self._body(subscription, run)) for run in runs if run.job not in made]
        refused = self.submit(subscription, orders) if orders else {}
        for job, error in refused.items():  # the order is refused: say why, do not retry
            log.warning("subscription %s: job %s refused: %s", subscription.id, job, error)
            self.store.set_state(job, RunState.REFUSED, message=str(error))
        submitted = [run.job for run in runs if run.job not in refused]
        self.store.set_states(submitted, RunState.SUBMITTED)
        if len(orders) > len(refused):
            log.info("subscription %s made %d job(s) (%s)", subscription.id,
                     len(orders) - len(refused), runs[0].kind.value)  # fmt: skip
        return len(submitted)

    @staticmethod
    def _body(subscription: Subscription, run: SubscriptionRun) -> dict[str, Any]:
        """The execute request that makes a run's job."""
        ids = [name.split("/", 1)[1] for name in run.granules]
        return {"inputs": {**subscription.parameters, subscription.input: {"ids": ids}}}

    # -- jobs ending ------------------------------------------------------------------------
    def _sync(self, runs: list[SubscriptionRun]) -> list[SubscriptionRun]:
        """Runs whose job ended are marked so (and their callbacks sent); the others."""
        still = []
        submitted = [run.job for run in runs if run.state == RunState.SUBMITTED]
        statuses = self.jobs.statuses(submitted)  # one query: a job is read whole once ended
        for run in runs:
            ended = statuses.get(run.job) in ENDED and run.state == RunState.SUBMITTED
            job = self._job(run.job) if ended else None
            if job is None or job.status not in ENDED:
                still.append(run)
                continue
            self.store.set_state(run.job, RunState.ENDED, status=job.status.value)
            subscription = self.store.get(run.subscription)
            if subscription is not None:
                self._notify(subscription, job)
        return still

    def _notify(self, subscription: Subscription, job: Job) -> None:
        subscriber = subscription.subscriber
        if subscriber is None:
            return
        succeeded = job.status == JobStatus.SUCCESSFUL
        url = subscriber.success_uri if succeeded else subscriber.failed_uri
        if url is not None:
            document = status_document(job, base=self.base_url, subscription=subscription.id)
            self.notifier.send(job.id, url, document)

    def _job(self, job_id: str) -> Job | None:
        try:
            return self.jobs.get(job_id, viewer=None)
        except JobNotFound:
            return None

    def _others_queued(self, open_runs: list[SubscriptionRun]) -> bool:
        """Whether runs of jobs other than backfill and reprocessing wait in the queue."""
        throttled = {run.job for run in open_runs if run.kind != RunKind.NEW}
        return any(run.job not in throttled for run in self.jobs.at(Station.QUEUED))


class _Lazy:
    """A value computed on first use (once a turn), if at all."""

    def __init__(self, compute: Callable[[], Any]) -> None:
        self._compute = compute
        self._done = False
        self._value: Any = None

    @property
    def value(self) -> Any:
        if not self._done:
            self._value, self._done = self._compute(), True
        return self._value
