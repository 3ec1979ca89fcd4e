"""How much memory the service lends to runs, and how much is free for one more run now.

This machine has no swap: when memory runs out the kernel kills instead of slowing down. So
admission (_admission.py) counts memory twice. Once against what the service lends in all
(:func:`lendable_memory`): 80% of the machine, or, when the service is started inside a
memory budget (a cgroup with a limit, on its own group or an ancestor's), that budget less
:data:`RESERVE` for the service itself, whichever is smaller. And once, at each admission
round, against what is free now (:func:`read_memory_now`): the machine's ``MemAvailable`` or
the budget's limit less what the budget holds, whichever is smaller, so memory taken by
anything else sharing the machine or the budget makes runs wait too.
"""

from __future__ import annotations

from dataclasses import dataclass

import psutil

from nearline.algorithms import MemoryBudget, memory_budget, runs_memory
from nearline.units import format_size

MACHINE_SHARE = 0.8  # of the machine's memory, the rest left to the system and the service
# kept back from a budget for the service: it holds about 100 MiB resident (Python, uvicorn,
# SQLite: 89 MiB measured while serving runs, about 60 MiB of it charged to a 1 GiB budget
# it was started in) and its logs, database and staged copies fill page cache charged to
# the budget; 256 MiB covers both with room to spare, and is a quarter of a 1 GiB budget,
# so even a small budget lends most of itself
RESERVE = 256 * 1024**2


@dataclass(frozen=True)
class Lending:
    """What the service lends to runs at once (``memory``, bytes) and why that much, in
    words for its log."""

    memory: int
    why: str


def lendable_memory(*, total: int, budget: MemoryBudget | None) -> Lending:
    """What a service lends to runs at once: the smaller of 80% of ``total`` (the machine's
    memory) and ``budget``'s limit (None: no budget) less :data:`RESERVE`."""
    machine = int(total * MACHINE_SHARE)
    if budget is None or budget.limit - RESERVE >= machine:
        return Lending(machine, f"80% of the machine's {format_size(total)}")
    lent = max(0, budget.limit - RESERVE)
    return Lending(
        lent,
        f"the memory budget of {budget.folder} ({format_size(budget.limit)}) less "
        f"{format_size(RESERVE)} for the service",
    )


def service_lending() -> Lending:
    """What this service lends to runs at once, on this machine and in its own cgroup."""
    return lendable_memory(total=psutil.virtual_memory().total, budget=memory_budget())


def default_memory() -> int:
    """:class:`~nearline.orders.Capacity`'s memory unless told otherwise."""
    return service_lending().memory


@dataclass(frozen=True)
class MemoryNow:
    """Memory free for runs at one moment: ``free`` bytes ``where`` ("on the machine", "in the
    service's memory budget"), and ``runs_use``, what the service's running runs hold of it
    already (their memory cgroups; 0 where that cannot be known)."""

    free: int
    where: str
    runs_use: int = 0


def memory_now(*, available: int, budget: MemoryBudget | None, runs_use: int | None) -> MemoryNow:
    """The reading admission uses: the smaller of the machine's ``available`` memory and
    ``budget``'s free part, with what runs hold now (None: unknown, counted as 0, so their
    whole declared memory is kept for them)."""
    if budget is not None and budget.free < available:
        return MemoryNow(budget.free, "in the service's memory budget", runs_use or 0)
    return MemoryNow(available, "on the machine", runs_use or 0)


def read_memory_now() -> MemoryNow:
    """Read what is free now: ``MemAvailable``, the service's memory budget, its runs' use."""
    return memory_now(
        available=psutil.virtual_memory().available, budget=memory_budget(), runs_use=runs_memory()
    )
