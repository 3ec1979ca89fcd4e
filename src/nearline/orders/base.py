"""Orders, runs and the stations a run passes, as S4PM passed a job from station to station.

An order is an OGC job: one algorithm, its inputs (found by a catalogue search or named by
id) and its parameters. An order over more granules than the algorithm takes at once is
split into runs; each run passes the stations stage -> allocate -> run -> ingest -> clean up,
and every move from one station to the next is committed before it happens, so a service
killed at any moment resumes each run at the station it was at, never re-running a finished
algorithm.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from nearline.monitor.base import Usage


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
        """Percent of runs ended."""
        if not self.runs:
            return 0
        return round(100 * sum(run.station.ended for run in self.runs) / len(self.runs))

    @property
    def usage(self) -> Usage:
        total = Usage()
        for run in self.runs:
            if run.usage is not None:
                total = total + run.usage
        return total


class Executor(ABC):
    """Where a run's stations do their work: local threads by default, a Dask cluster at
    scale. Implementations keep these true: ``submit`` returns at once; the work runs at most
    once per call; ``close`` waits for nothing but stops taking work."""

    name: str

    @abstractmethod
    def submit(self, work: Callable[[], None]) -> Future[None]:
        """Start ``work`` (a run's pipeline) and return its future."""

    @abstractmethod
    def close(self) -> None:
        """Stop taking work."""
