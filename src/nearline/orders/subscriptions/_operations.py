"""What the web API and the CLI do with subscriptions: make, list, show, remove, reprocess.
The loop in _trigger_loop.py does the rest, reading what these write; neither knows the other.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

from nearline.algorithms import AlgorithmRegistry
from nearline.archive import Catalogue
from nearline.errors import Conflict, InvalidRequest, SubscriptionNotFound
from nearline.orders.subscriptions._model import (
    RunState,
    Subscription,
    SubscriptionRun,
    parse_subscription,
)
from nearline.orders.subscriptions._policies import Group, Pending, Waiting
from nearline.orders.subscriptions._store import SubscriptionStore


class Subscriptions:
    """Users' subscriptions: each user sees only their own (another's is a 404)."""

    def __init__(
        self, *, store: SubscriptionStore, algorithms: AlgorithmRegistry, catalogue: Catalogue
    ) -> None:
        self.store = store
        self.algorithms = algorithms
        self.catalogue = catalogue

    def create(self, body: object, *, owner: str) -> Subscription:
        """A new subscription from a ``POST /subscriptions`` body. It sees granules ingested
        from now on; if its search's datetime starts in the past, it also runs over what the
        archive holds already (its backfill)."""
        subscription = parse_subscription(
            body,
            owner=owner,
            find=lambda process, version: self.algorithms.get(
                process, viewer=owner, version=version
            ),
        )
        reaches_past = subscription.search.reaches_past(datetime.now(UTC))
        subscription = replace(
            subscription,
            read_to=self.catalogue.position(),
            backfill="reading" if reaches_past else "none",
        )
        self.store.add(subscription)
        return subscription

    def get(self, id: str, *, viewer: str) -> Subscription:
        found = self.store.get(id)
        if found is None or found.owner != viewer:
            raise SubscriptionNotFound(f"no subscription {id}")
        return found

    def list(self, *, viewer: str) -> list[Subscription]:
        return self.store.list(viewer)

    def delete(self, id: str, *, viewer: str) -> None:
        """Stop the subscription (its jobs stay, with their results)."""
        self.store.delete(self.get(id, viewer=viewer).id)

    def runs(self, id: str, *, viewer: str) -> list[SubscriptionRun]:
        """Its jobs, oldest first, each with the granules it runs on."""
        return self.store.runs(self.get(id, viewer=viewer).id)

    def waiting(self, id: str, *, viewer: str) -> list[Waiting]:
        """The granules it holds until its policy runs them, and what they wait for."""
        subscription = self.get(id, viewer=viewer)
        pending = self.store.pending(subscription.id).get(subscription.id, [])
        return subscription.policy.waiting(pending)

    def reprocess(
        self, id: str, *, viewer: str, version: str | None = None
    ) -> tuple[str, list[str]]:
        """Plan jobs that run again, with ``version`` (default: the newest), the granules of
        every job the subscription made with another version, grouped as they were; the
        older outputs stay. A pinned subscription is pinned to ``version`` from now on.
        Returns the version and the planned job ids (made a few at a time by the loop)."""
        subscription = self.get(id, viewer=viewer)
        if version is not None and (not isinstance(version, str) or not version):
            raise InvalidRequest("version: expected a version of the process, such as '2.0'")
        # a version there is not: AlgorithmNotFound, a 404 as the version's own URL would be
        algorithm = self.algorithms.get(subscription.process, viewer=viewer, version=version)
        target = algorithm.version
        earlier = [
            run
            for run in self.store.runs(subscription.id)
            if run.version != target and run.state != RunState.REFUSED
        ]
        plans = [
            (
                uuid.uuid4().hex,
                Group(
                    tuple(_granule(name) for name in run.granules),
                    note=f"reprocessing job {run.job} (version {run.version}) with version "
                    f"{target}",
                ),
            )
            for run in earlier
        ]
        planned = self.store.plan(subscription, plans, version=target)
        if not planned:
            raise Conflict(
                f"nothing to reprocess: every job of subscription {id} ran version {target} "
                f"already; deploy a new version (PUT /processes/{subscription.process}) first"
            )
        if subscription.version is not None:
            self.store.pin(subscription.id, target)
        return target, planned


def _granule(name: str) -> Pending:
    collection, item = name.split("/", 1)
    return Pending(collection, item, datetime.min.replace(tzinfo=UTC), 0)
