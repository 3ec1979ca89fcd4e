"""Orders, runs and the stations a run passes, as S4PM passed a job from station to station.

An order is an OGC job: one algorithm, its inputs (found by a catalogue search or named by
id) and its parameters. An order over more granules than the algorithm takes at once is
split into runs; each run passes the stations stage -> allocate -> run -> ingest -> clean up,
and every move from one station to the next is committed before it happens, so a service
killed at any moment resumes each run at the station it was at, never re-running a finished
algorithm.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from nearline.algorithms import Algorithm, Limits, RunResult
from nearline.monitor import Usage


class JobStatus(StrEnum):
    """OGC API - Processes status codes."""

    ACCEPTED = "accepted"
    RUNNING = "running"
    SUCCESSFUL = "successful"
    FAILED = "failed"
    DISMISSED = "dismissed"


class Station(StrEnum):
    """Where a run is. A run moves down this list; FAILED and DISMISSED end it early."""

    QUEUED = "queued"  # waiting for free slots
    STAGE = "stage"  # its inputs are being made readable to it
    ALLOCATE = "allocate"  # waiting for its declared disk
    RUN = "run"  # the algorithm runs in its sandbox
    INGEST = "ingest"  # its outputs go into the archive and the catalogue
    CLEANUP = "cleanup"  # its working folder is removed
    DONE = "done"
    FAILED = "failed"
    DISMISSED = "dismissed"

    @property
    def ended(self) -> bool:
        return self in (Station.DONE, Station.FAILED, Station.DISMISSED)


PIPELINE = (Station.STAGE, Station.ALLOCATE, Station.RUN, Station.INGEST, Station.CLEANUP)


@dataclass(frozen=True)
class InputRef:
    """One granule a run reads: the catalogue item (collection, id) under an input name."""

    input: str
    collection: str
    item: str


@dataclass(frozen=True)
class OutputFile:
    """A file a run left in its outputs folder, as recorded before it is ingested."""

    name: str  # relative to the outputs folder
    output: str  # the OutputSpec it matched
    size: int
    sha256: str
    media_type: str


@dataclass(frozen=True)
class Run:
    """One execution of the algorithm on part of an order's inputs."""

    id: str
    job: str
    index: int
    station: Station
    inputs: tuple[InputRef, ...]
    waiting: str | None = None  # while queued or allocating: why
    message: str | None = None  # why it failed, in words for the user
    usage: Usage | None = None
    outputs: tuple[OutputFile, ...] = ()
    attempts: int = 0
    started: datetime | None = None
    finished: datetime | None = None
    server: str | None = None  # the server holding it, from admission on (orders/_server_roster.py)
    # once done: wall and CPU seconds of each stage it passed, {name: (wall, cpu)}, in order
    # (nearline.algorithms.StageClock; docs/benchmarks.md's small-runs table names them)
    timings: Mapping[str, tuple[float, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Job:
    """An order. ``status`` follows its runs: accepted until one starts, successful when all
    are done, failed when all ended and one failed, dismissed when the user dismissed it."""

    id: str
    owner: str
    process: str
    version: str
    status: JobStatus
    created: datetime
    updated: datetime
    inputs: Mapping[str, Any] = field(default_factory=dict)  # as the user ordered them
    parameters: Mapping[str, Any] = field(default_factory=dict)  # with defaults applied
    message: str | None = None
    runs: tuple[Run, ...] = ()
    started: datetime | None = None
    finished: datetime | None = None

    @property
    def progress(self) -> int:
        """Percent of runs ended (a job without runs: 100 once it succeeded)."""
        if not self.runs:
            return 100 if self.status == JobStatus.SUCCESSFUL else 0
        return round(100 * sum(run.station.ended for run in self.runs) / len(self.runs))

    @property
    def usage(self) -> Usage:
        total = Usage()
        for run in self.runs:
            if run.usage is not None:
                total = total + run.usage
        return total


@dataclass(frozen=True)
class JobFilter:
    """Which jobs a listing shows (OGC API - Processes' job-list parameters): those of any of
    ``statuses`` and of any of ``processes``; an empty one does not filter.

    Parameters
    ----------
    statuses
        Job statuses to keep (none: all).
    processes
        Process ids to keep (none: all).
    """

    statuses: tuple[JobStatus, ...] = ()
    processes: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunTask:
    """One sandboxed run of an algorithm, as an executor receives it.

    Everything is picklable, and every path is on storage the executor's machines share with
    the service (S4PM-DM: "the data be accessible to all of the S4PM-DM stations").

    Parameters
    ----------
    run
        The run's id.
    algorithm
        The deployed version to run.
    job
        The job's id.
    inputs
        ``job.json``'s inputs: the staged files.
    parameters
        The parameters object, defaults applied.
    folder
        The run's working folder.
    limits
        What the run is held to.
    log
        Where its output and error streams go.
    """

    run: str  # the run's id
    algorithm: Algorithm
    job: str  # the job's id
    inputs: Mapping[str, list[dict[str, Any]]]  # job.json's inputs: the staged files
    parameters: Mapping[str, Any]
    folder: Path  # the run's working folder
    limits: Limits
    log: Path


class Executor(ABC):
    """Where runs' algorithms execute: local sandboxed processes by default, a Dask cluster at
    scale (chosen by :func:`nearline.orders.open_executor`). The stations' bookkeeping stays
    with the service; only the run goes out. Implementations keep these true:

    - ``run`` blocks until the run has ended and returns its result; the sandbox applies on
      whichever machine runs it;
    - setting ``cancel`` stops the run (its processes killed) and ``run`` returns soon after;
    - a run that could not start raises :class:`~nearline.errors.SandboxError`; a run that
      failed is a result whose outcome says why;
    - ``retries`` tells how many times the run was started again elsewhere (a worker lost).
    """

    name: str

    @abstractmethod
    def run(self, task: RunTask, *, cancel: threading.Event) -> RunResult:
        """Run ``task`` to its end, in the sandbox, wherever this executor runs things.

        Parameters
        ----------
        task
            The run.
        cancel
            Set by the service to stop the run; ``run`` returns soon after.

        Returns
        -------
        RunResult
            How it ended; a failed run is a result, not an exception.

        Raises
        ------
        SandboxError
            The run could not start.
        """

    def retries(self, run: str) -> int:
        """How many times a run was restarted on another machine (a worker lost).

        Parameters
        ----------
        run
            The run's id.

        Returns
        -------
        int
            0 by default.
        """
        return 0

    def describe(self) -> str:
        """Where runs go, in words, for the service's log and the landing page."""
        return self.name

    def close(self) -> None:  # noqa: B027 - most executors hold nothing
        """Stop taking work and release what the executor holds."""
