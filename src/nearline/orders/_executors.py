"""Choosing where runs execute, by name: ``local`` (sandboxed processes on this machine, the
default) or a URL such as ``dask://HOST:PORT``, whose scheme names the executor: nearline's
own Dask one, or one plugged in through the ``nearline.executors`` entry points (loaded only
when asked for)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from urllib.parse import urlparse

from nearline.algorithms import CpuGate, DiskPool, RunResult, Turn, run_algorithm
from nearline.orders._base import Executor, RunTask
from nearline.plugins import Registry


class LocalExecutor(Executor):
    """Runs on this machine, each in its sandbox, on the calling station's thread.

    Given a ``gate``, its runs' processes hold at most the gate's CPUs at once: a run whose
    sandbox is made waits there for its turn, so the service can ready the next runs while
    others run. ``owner_of(run)`` says whose a run is (turns go by fair share);
    ``waiting(run, True)`` is told when a run has waited there a while, ``waiting(run,
    False)`` when it goes on. Given ``disks`` (its owner's, who closes them), its runs' disks
    are kept for the next run of the same size.
    """

    name = "local"

    def __init__(
        self,
        gate: CpuGate | None = None,
        *,
        owner_of: Callable[[str], str] = lambda run: "",
        waiting: Callable[[str, bool], object] | None = None,
        disks: DiskPool | None = None,
    ) -> None:
        self.gate = gate
        self.owner_of = owner_of
        self.waiting = waiting
        self.disks = disks

    def run(self, task: RunTask, *, cancel: threading.Event) -> RunResult:
        turn = self._turn(task, cancel)
        return run_task(task, cancel=cancel, turn=turn, disks=self.disks)

    def _turn(self, task: RunTask, cancel: threading.Event) -> Callable[[], Turn | None] | None:
        gate, told = self.gate, self.waiting
        if gate is None:
            return None
        return lambda: gate.acquire(
            task.limits.cpus,
            owner=self.owner_of(task.run),
            cancel=cancel,
            waiting=(lambda now: told(task.run, now)) if told is not None else None,
        )


def run_task(
    task: RunTask,
    *,
    cancel: threading.Event | None = None,
    turn: Callable[[], Turn | None] | None = None,
    disks: DiskPool | None = None,
) -> RunResult:
    """Run ``task`` here, in its sandbox: what every executor does on its machine (``disks``:
    run disks kept for reuse, where this process keeps them)."""
    return run_algorithm(
        task.algorithm,
        job_id=task.job,
        inputs=task.inputs,
        parameters=task.parameters,
        folder=task.folder,
        limits=task.limits,
        cancel=cancel,
        log=task.log,
        turn=turn,
        disks=disks,
    )


# executors named by a URL's scheme, each made from the whole URL (dask://127.0.0.1:8786)
EXECUTORS: Registry[Callable[[str], Executor]] = Registry(
    "executor",
    group="nearline.executors",
    builtins={"dask": "nearline.orders._dask_executor:DaskExecutor"},
)


def available_executors() -> list[str]:
    return sorted({"local", *EXECUTORS.names()})


def open_executor(spec: str | None) -> Executor:
    """The executor ``spec`` names: ``local`` (or None), or ``SCHEME://...`` of a plugged-in
    executor, given the whole spec (``dask://127.0.0.1:8786``)."""
    if spec in (None, "", "local"):
        return LocalExecutor()
    scheme = urlparse(spec).scheme or spec
    hint = f"give local, or SCHEME://... naming one of these (got {spec!r})"
    return EXECUTORS.get(scheme, hint=hint)(spec)
