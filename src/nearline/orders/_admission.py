"""Which queued runs start now: S4PM-DM's strings, as quotas and fair share.

The machine lends the service some CPUs and memory (:class:`Capacity`); each user's string
(:class:`Allotment`) bounds what their runs hold at once and what their outputs keep on disk.
Between users, runs start by fair share: the next slot goes to the user holding the fewest
CPUs now and, among those, the one who has had the least run time lately (CPU-seconds,
halved every ten minutes), so one user's thousand queued runs delay another user's single
order by at most the length of one run, and users with work waiting share the machine
equally over time. Within a user, runs start in the order they were made.

Memory is also checked against what is free now (:class:`~nearline.orders.MemoryNow`,
read once per round): a run waits while the free memory, less what running runs declared and
have not touched yet, cannot hold what it declares. With admission off (:func:`admit_all`,
for comparisons only) every queued run starts at once and only each run's own limits hold.
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from nearline.identity import Allotment
from nearline.orders._base import Run
from nearline.orders._memory import MemoryNow, default_memory
from nearline.units import format_size


@dataclass
class Capacity:
    """What the machine lends to runs at once: CPUs and memory (bytes; by default the
    smaller of 80% of the machine and the service's memory budget less a reserve, _memory.py).

    ``ahead`` is how many CPUs' worth of runs more may be readied while those run: admitted,
    their inputs staged and their sandbox made, each waiting for its CPUs at the executor's
    gate, so it starts the moment a run ends (0: none; local runs only, whose CPUs the gate
    holds). A user holding nothing may have one run readied beyond that, so a newcomer is
    never behind others' readied runs (the gate's turns go by fair share too). Readied runs
    hold their memory from admission on.
    """

    cpus: float = field(default_factory=lambda: float(os.cpu_count() or 1))
    memory: int = field(default_factory=default_memory)
    ahead: float = 0.0


@dataclass(frozen=True)
class Candidate:
    """A queued run, with what it asks for and whose it is."""

    run: Run
    owner: str
    created: datetime
    cpus: float
    memory: int
    disk: int


@dataclass
class Holdings:
    """What running runs hold now: in all, and per user."""

    cpus: float = 0.0
    memory: int = 0
    by_user: dict[str, tuple[float, int]] = field(default_factory=dict)

    def take(self, owner: str, cpus: float, memory: int) -> None:
        self.cpus += cpus
        self.memory += memory
        held = self.by_user.get(owner, (0.0, 0))
        self.by_user[owner] = (held[0] + cpus, held[1] + memory)

    def give_back(self, owner: str, cpus: float, memory: int) -> None:
        self.take(owner, -cpus, -memory)
        if self.by_user.get(owner, (0.0, 0))[0] <= 1e-9:
            self.by_user.pop(owner, None)

    def of(self, owner: str) -> tuple[float, int]:
        return self.by_user.get(owner, (0.0, 0))


@dataclass
class Ledger:
    """Each user's recent run time: CPU-seconds, decayed with a half-life, so that what a
    user ran an hour ago hardly counts against them now."""

    half_life: float = 600.0
    spent: dict[str, tuple[float, float]] = field(default_factory=dict)  # (amount, as of)

    def credit(self, owner: str, cpu_seconds: float, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self.spent[owner] = (self.recent(owner, now) + cpu_seconds, now)

    def recent(self, owner: str, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        amount, since = self.spent.get(owner, (0.0, now))
        return amount * math.exp2(-(now - since) / self.half_life)


@dataclass(frozen=True)
class Decision:
    """One admission round: runs to start (in order), runs to wait (with why), runs that
    can never start (with why)."""

    start: list[Candidate]
    wait: dict[str, str]
    refuse: dict[str, str]


def admit(
    queued: Iterable[Candidate],
    *,
    capacity: Capacity,
    held: Holdings,
    allotment: Callable[[str], Allotment],
    disk_used: Callable[[str], int],
    ledger: Ledger | None = None,
    memory_now: MemoryNow | Callable[[], MemoryNow] | None = None,
) -> Decision:
    """Decide which of ``queued`` start now. ``held`` is updated with what starts.
    ``memory_now`` is what is free at this moment, or how to read it (read once, and only
    if a run gets as far as that check); None: only ``capacity`` is checked. ``disk_used``
    is asked only of users with a disk quota."""
    ledger = ledger or Ledger()
    free_now = functools.cache(memory_now) if callable(memory_now) else lambda: memory_now
    now = time.monotonic()
    heads: dict[str, list[Candidate]] = {}
    for candidate in sorted(queued, key=lambda c: (c.created, c.run.job, c.run.index)):
        heads.setdefault(candidate.owner, []).append(candidate)
    start: list[Candidate] = []
    wait: dict[str, str] = {}
    refuse: dict[str, str] = {}
    while heads:
        # fair share: the user holding the fewest CPUs now, then the one who ran least lately
        owner = min(
            heads, key=lambda o: (held.of(o)[0], ledger.recent(o, now), heads[o][0].created)
        )
        head = heads[owner][0]
        never = _never(head, capacity, allotment(owner))
        if never is not None:
            refuse[head.run.id] = never
            heads[owner].pop(0)
        else:
            why = _why_wait(head, capacity, held, allotment(owner), disk_used)
            if why is None and memory_now is not None:
                why = _why_no_memory(head, held, free_now())
            if why is None:
                start.append(head)
                held.take(owner, head.cpus, head.memory)
                heads[owner].pop(0)
            else:  # this user's runs wait behind their first, in order
                for waiting in heads[owner]:
                    wait[waiting.run.id] = why
                heads[owner] = []
        if not heads[owner]:
            del heads[owner]
    return Decision(start=start, wait=wait, refuse=refuse)


def admit_all(queued: Iterable[Candidate], *, held: Holdings) -> Decision:
    """Admission off: every queued run starts now, whatever it declares and whatever is free
    (the 2005 behaviour, kept for comparisons); ``held`` still counts them."""
    start = sorted(queued, key=lambda c: (c.created, c.run.job, c.run.index))
    for candidate in start:
        held.take(candidate.owner, candidate.cpus, candidate.memory)
    return Decision(start=start, wait={}, refuse={})


def _never(run: Candidate, capacity: Capacity, allotment: Allotment) -> str | None:
    """Why ``run`` can never start here, if it cannot."""
    if run.cpus > capacity.cpus or run.memory > capacity.memory:
        return (
            f"needs {run.cpus:g} CPUs and {format_size(run.memory)}, more than this service lends "
            f"to one run ({capacity.cpus:g} CPUs, {format_size(capacity.memory)})"
        )
    if allotment.cpus is not None and run.cpus > allotment.cpus:
        return f"needs {run.cpus:g} CPUs, more than your allotment of {allotment.cpus:g}"
    if allotment.memory is not None and run.memory > allotment.memory:
        return (
            f"needs {format_size(run.memory)} of memory, more than your allotment of "
            f"{format_size(allotment.memory)}"
        )
    if allotment.disk is not None and run.disk > allotment.disk:
        return (
            f"needs {format_size(run.disk)} of disk, more than your quota of "
            f"{format_size(allotment.disk)}"
        )
    return None


def _why_wait(
    run: Candidate,
    capacity: Capacity,
    held: Holdings,
    allotment: Allotment,
    disk_used: Callable[[str], int],
) -> str | None:
    """Why ``run`` waits now, or None if it may start."""
    cpus, memory = held.of(run.owner)
    if allotment.cpus is not None and cpus + run.cpus > allotment.cpus + 1e-9:
        return f"waiting for your allotment: {cpus:g} of your {allotment.cpus:g} CPUs in use"
    if allotment.memory is not None and memory + run.memory > allotment.memory:
        return (
            f"waiting for your allotment: {format_size(memory)} of your "
            f"{format_size(allotment.memory)} memory in use"
        )
    if allotment.disk is not None and (used := disk_used(run.owner)) + run.disk > allotment.disk:
        return (
            f"waiting for disk quota: your results take {format_size(used)} of "
            f"{format_size(allotment.disk)} and this run may write {format_size(run.disk)}; "
            "delete old results (DELETE /jobs/{id})"
        )
    room = capacity.cpus + capacity.ahead
    if capacity.ahead > 0 and cpus <= 1e-9:
        # a user holding nothing may always have a run readied: the CPUs' gate gives turns
        # by fair share, so it goes before the readied runs of users who hold some
        room += run.cpus
    if held.cpus + run.cpus > room + 1e-9:
        running, readied = min(held.cpus, capacity.cpus), max(0.0, held.cpus - capacity.cpus)
        why = f"waiting for free slots: {running:g} of {capacity.cpus:g} CPUs busy"
        return f"{why}, {readied:g} more readied to follow" if readied > 1e-9 else why
    if held.memory + run.memory > capacity.memory:
        return (
            f"waiting for memory: {format_size(held.memory)} of "
            f"{format_size(capacity.memory)} lent to running jobs"
        )
    return None


def _why_no_memory(run: Candidate, held: Holdings, now: MemoryNow) -> str | None:
    """Why ``run`` waits for memory free now: what is free less the part of running runs'
    declared memory they have not touched yet (they may take it) cannot hold its declared
    memory. Runs started this round count in ``held`` and use nothing yet."""
    promised = max(0, held.memory - now.runs_use)
    room = now.free - promised
    if run.memory <= room:
        return None
    promise = f", {_size(promised)} of it promised to running runs;" if promised else ","
    return (
        f"waiting for memory: {_size(now.free)} free {now.where}{promise} "
        f"this run declares {_size(run.memory)}"
    )


def _size(nbytes: int) -> str:
    """ "2 GiB" rather than "2.0 GiB"."""
    return format_size(nbytes).replace(".0 ", " ")
