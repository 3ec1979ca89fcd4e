"""orders: orders (OGC jobs), their runs through the stations, users, and the service that
holds them all together."""

from __future__ import annotations

from nearline.orders.admission import Allotment, Capacity
from nearline.orders.base import (
    PIPELINE,
    Executor,
    InputRef,
    Job,
    JobStatus,
    OutputFile,
    Run,
    RunTask,
    Station,
)
from nearline.orders.dispatcher import Dispatcher
from nearline.orders.executors import LocalExecutor, available_executors, open_executor, run_task
from nearline.orders.memory import MemoryNow
from nearline.orders.server_roster import Servers
from nearline.orders.service import SERVICE_OWNER, Service, ServiceSettings
from nearline.orders.status import stamp, status_info
from nearline.orders.store import JobStore
from nearline.orders.subscriptions import (
    REPROCESS,
    SUBSCRIPTION,
    RunState,
    Subscription,
    SubscriptionRun,
    Subscriptions,
    SubscriptionStore,
)
from nearline.orders.tables import migrate
from nearline.orders.users import User, UserStore

__all__ = [
    "PIPELINE",
    "REPROCESS",
    "SERVICE_OWNER",
    "SUBSCRIPTION",
    "Allotment",
    "Capacity",
    "Dispatcher",
    "Executor",
    "InputRef",
    "Job",
    "JobStatus",
    "JobStore",
    "LocalExecutor",
    "MemoryNow",
    "OutputFile",
    "Run",
    "RunState",
    "RunTask",
    "Servers",
    "Service",
    "ServiceSettings",
    "Station",
    "Subscription",
    "SubscriptionRun",
    "SubscriptionStore",
    "Subscriptions",
    "User",
    "UserStore",
    "available_executors",
    "migrate",
    "open_executor",
    "run_task",
    "stamp",
    "status_info",
]
