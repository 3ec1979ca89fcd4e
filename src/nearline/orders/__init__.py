"""orders: orders (OGC jobs), their runs through the stations, users, and the service that
holds them all together."""

from __future__ import annotations

from nearline.orders._admission import Allotment, Capacity
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
from nearline.orders._oidc import OidcSettings, check_provider, pkce_pair
from nearline.orders._server_roster import Servers
from nearline.orders._service import SERVICE_OWNER, Service, ServiceSettings
from nearline.orders._stations import OUTPUTS_OF
from nearline.orders._status import stamp, status_info
from nearline.orders._store import JobStore
from nearline.orders._tables import migrate
from nearline.orders._tokens import MAX_DAYS, MAX_NAME, TOKEN_NAME_PATTERN
from nearline.orders._users import User, UserStore
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
    "MAX_DAYS",
    "MAX_NAME",
    "OUTPUTS_OF",
    "PIPELINE",
    "REPROCESS",
    "SERVICE_OWNER",
    "SUBSCRIPTION",
    "TOKEN_NAME_PATTERN",
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
    "OidcSettings",
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
    "check_provider",
    "migrate",
    "open_executor",
    "pkce_pair",
    "run_task",
    "stamp",
    "status_info",
]
