"""orders: orders (OGC jobs), their runs through the stations, users' quotas (admission),
and the service that holds them all together. Who a user is lives in nearline.identity."""

from __future__ import annotations

from nearline.identity import Allotment
from nearline.orders._admission import Capacity
from nearline.orders._base import (
    PIPELINE,
    Executor,
    InputRef,
    Job,
    JobFilter,
    JobStatus,
    OutputFile,
    Run,
    RunTask,
    Station,
)
from nearline.orders._dispatcher import Dispatcher
from nearline.orders._executors import LocalExecutor, available_executors, open_executor, run_task
from nearline.orders._memory import MemoryNow
from nearline.orders._server_roster import Servers
from nearline.orders._service import SERVICE_OWNER, Service, ServiceSettings
from nearline.orders._stations import OUTPUTS_OF
from nearline.orders._status import stamp, status_info
from nearline.orders._store import JobStore
from nearline.orders._tables import migrate
from nearline.orders.subscriptions import (
    REPROCESS,
    SUBSCRIPTION,
    RunState,
    Subscription,
    SubscriptionRun,
    Subscriptions,
    SubscriptionStore,
)

__all__ = [
    "OUTPUTS_OF",
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
    "JobFilter",
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
    "available_executors",
    "migrate",
    "open_executor",
    "run_task",
    "stamp",
    "status_info",
]
