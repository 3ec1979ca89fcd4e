"""Subscriptions: a saved catalogue search, an algorithm and a policy, run on every newly
ingested granule the search matches.

_model.py holds the nouns and reads a subscription's body (checked against _schema.py's JSON
Schema); _policies.py says when waiting granules become a job; _store.py keeps it all in the
service's database; _operations.py is what the API and the CLI call; _trigger_loop.py is the
loop that turns new granules into jobs; _callbacks.py tells subscribers when their jobs end.
"""

from __future__ import annotations

from nearline.orders.subscriptions._callbacks import Notifier, status_document
from nearline.orders.subscriptions._model import (
    RunKind,
    RunState,
    SavedSearch,
    Subscriber,
    Subscription,
    SubscriptionRun,
    parse_subscription,
)
from nearline.orders.subscriptions._operations import Subscriptions
from nearline.orders.subscriptions._policies import (
    Batch,
    Duration,
    Each,
    Group,
    Pending,
    Period,
    Policy,
    Waiting,
    parse_duration,
    parse_policy,
)
from nearline.orders.subscriptions._schema import REPROCESS, SUBSCRIPTION
from nearline.orders.subscriptions._store import SubscriptionStore
from nearline.orders.subscriptions._trigger_loop import (
    ChangeFeed,
    PollingFeed,
    SubscriptionWatch,
)

__all__ = [
    "REPROCESS",
    "SUBSCRIPTION",
    "Batch",
    "ChangeFeed",
    "Duration",
    "Each",
    "Group",
    "Notifier",
    "Pending",
    "Period",
    "Policy",
    "PollingFeed",
    "RunKind",
    "RunState",
    "SavedSearch",
    "Subscriber",
    "Subscription",
    "SubscriptionRun",
    "SubscriptionStore",
    "SubscriptionWatch",
    "Subscriptions",
    "Waiting",
    "parse_duration",
    "parse_policy",
    "parse_subscription",
    "status_document",
]
