"""orders: orders (OGC jobs), their runs through the stations, users, and the service that
holds them all together."""

from __future__ import annotations

from nearline.orders.base import (
    Executor,
    InputRef,
    Job,
    JobStatus,
    OutputFile,
    Run,
    Station,
)
from nearline.orders.dispatcher import Capacity, Dispatcher, LocalExecutor
from nearline.orders.service import SERVICE_OWNER, Service, ServiceSettings
from nearline.orders.users import User, UserStore

__all__ = [
    "SERVICE_OWNER",
    "Capacity",
    "Dispatcher",
    "Executor",
    "InputRef",
    "Job",
    "JobStatus",
    "LocalExecutor",
    "OutputFile",
    "Run",
    "Service",
    "ServiceSettings",
    "Station",
    "User",
    "UserStore",
]
