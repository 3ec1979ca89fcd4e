"""Choosing where runs execute, by name: ``local`` (sandboxed processes on this machine, the
default) or a URL such as ``dask://HOST:PORT``, whose scheme names an executor plugged in
through the ``nearline.executors`` entry points (loaded only when asked for)."""

from __future__ import annotations

import threading
from importlib.metadata import entry_points
from urllib.parse import urlparse

from nearline.algorithms import RunResult, run_algorithm
from nearline.errors import ConfigError
from nearline.orders.base import Executor, RunTask

GROUP = "nearline.executors"


class LocalExecutor(Executor):
    """Runs on this machine, each in its sandbox, on the calling station's thread."""

    name = "local"

    def run(self, task: RunTask, *, cancel: threading.Event) -> RunResult:
        return run_task(task, cancel=cancel)


def run_task(task: RunTask, *, cancel: threading.Event | None = None) -> RunResult:
    """Run ``task`` here, in its sandbox: what every executor does on its machine."""
    return run_algorithm(
        task.algorithm,
        job_id=task.job,
        inputs=task.inputs,
        parameters=task.parameters,
        folder=task.folder,
        limits=task.limits,
        cancel=cancel,
        log=task.log,
    )


def available_executors() -> list[str]:
    return sorted({"local", *(point.name for point in entry_points(group=GROUP))})


def open_executor(spec: str | None) -> Executor:
    """The executor ``spec`` names: ``local`` (or None), or ``SCHEME://...`` of a plugged-in
    executor, given the whole spec (``dask://127.0.0.1:8786``)."""
    if spec in (None, "", "local"):
        return LocalExecutor()
    scheme = urlparse(spec).scheme
    for point in entry_points(group=GROUP):
        if point.name == scheme:
            return point.load()(spec)
    raise ConfigError(
        f"executor {spec!r}: expected local or one of "
        f"{', '.join(f'{name}://...' for name in available_executors() if name != 'local')}"
    )
