"""orders: orders (OGC jobs), their runs through the stations, users, and the service that
holds them all together."""

from __future__ import annotations

from nearline.orders.admission import Allotment, Capacity
from nearline.orders.base import (
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
from nearline.orders.service import SERVICE_OWNER, Service, ServiceSettings
from nearline.orders.users import User, UserStore

__all__ = [
    "SERVICE_OWNER",
    "Allotment",
    "Capacity",
    "Dispatcher",
    "Executor",
    "InputRef",
    "Job",
    "JobStatus",
    "LocalExecutor",
    "MemoryNow",
    "OutputFile",
    "Run",
    "RunTask",
    "Service",
    "ServiceSettings",
    "Station",
    "User",
    "UserStore",
    "available_executors",
    "open_executor",
    "run_task",
]
