"""The CPUs runs' processes hold at once on this machine, given out in turn, by fair share.

A run's sandbox (its job files, cgroups and disk) costs the service's own time, not the CPUs
lent to runs, so the service readies the next runs while others hold those CPUs: each readied
run waits here, its sandbox made, and starts its first process the moment its CPUs are free.
When CPUs free, the next turn goes as admission's fair share would give it: to the waiting
run whose owner holds the fewest CPUs here now, then whose owner ran least lately (the
``recent`` the gate is given), then the one that came first. The next run chosen that needs
more than is free holds the others back, as admission does.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

CANCEL_POLL = 0.05  # seconds: how soon a cancelled waiter leaves the line
TELL_AFTER = 1.0  # seconds a run waits before it is said to be waiting (short waits are not)


@dataclass(frozen=True)
class _Waiter:
    owner: str
    cpus: float
    arrived: int  # the order runs came in


class CpuGate:
    """At most ``cpus`` CPUs' worth of runs' processes at once.

    Parameters
    ----------
    cpus
        The CPUs lent to runs here.
    recent
        An owner's recent run time (CPU-seconds, as admission's ledger keeps it): who ran
        least lately goes first among owners holding as many CPUs (default: no one).
    """

    def __init__(self, cpus: float, *, recent: Callable[[str], float] | None = None) -> None:
        self.cpus = cpus
        self.held = 0.0
        self.by_owner: dict[str, float] = {}  # CPUs each owner's runs hold here now
        self._recent = recent or (lambda owner: 0.0)
        self._waiting: list[_Waiter] = []
        self._arrivals = itertools.count()
        self._changed = threading.Condition()

    def acquire(
        self,
        cpus: float,
        *,
        owner: str = "",
        cancel: threading.Event | None = None,
        waiting: Callable[[bool], object] | None = None,
    ) -> Turn | None:
        """Wait for this run's turn and ``cpus`` free CPUs, and take them.

        Parameters
        ----------
        cpus
            What the run declares. A run asking more than the gate holds goes alone.
        owner
            Whose run it is (fair share between owners).
        cancel
            Setting it leaves the line: then nothing is taken and None is returned.
        waiting
            Told ``True`` once the run has waited :data:`TELL_AFTER` seconds, and ``False``
            when, having been told so, it goes on (or leaves).

        Returns
        -------
        Turn or None
            The CPUs taken (give them back with its ``release``); None if cancelled first.
        """
        me = _Waiter(owner, cpus, next(self._arrivals))
        told = False
        since = time.monotonic()
        with self._changed:
            self._waiting.append(me)
        try:
            while True:
                with self._changed:
                    if self._next() is me and self._fits(cpus):
                        self.held += cpus
                        self.by_owner[owner] = self.by_owner.get(owner, 0.0) + cpus
                        return Turn(self, cpus, owner)
                    if cancel is not None and cancel.is_set():
                        return None
                    self._changed.wait(CANCEL_POLL)
                if waiting is not None and not told and time.monotonic() - since >= TELL_AFTER:
                    told = True
                    waiting(True)  # outside the lock: it writes the job store
        finally:
            with self._changed:
                self._waiting.remove(me)
                self._changed.notify_all()
            if told and waiting is not None:
                with contextlib.suppress(Exception):  # saying so must never lose the turn
                    waiting(False)

    def release(self, cpus: float, owner: str = "") -> None:
        """Give back what :meth:`acquire` took.

        Parameters
        ----------
        cpus
            What was taken.
        owner
            Whose they were.
        """
        with self._changed:
            self.held = max(0.0, self.held - cpus)
            left = self.by_owner.get(owner, 0.0) - cpus
            if left > 1e-9:
                self.by_owner[owner] = left
            else:
                self.by_owner.pop(owner, None)
            self._changed.notify_all()

    def _next(self) -> _Waiter:
        """The waiting run fair share picks next."""
        return min(
            self._waiting,
            key=lambda w: (self.by_owner.get(w.owner, 0.0), self._recent(w.owner), w.arrived),
        )

    def _fits(self, cpus: float) -> bool:
        return self.held + cpus <= self.cpus + 1e-9 or self.held <= 1e-9


@dataclass
class Turn:
    """CPUs taken at a :class:`CpuGate`; ``release`` gives them back, once however often it
    is called (as soon as the run's processes end, and again, harmlessly, if that failed).

    Parameters
    ----------
    gate
        Where they were taken.
    cpus
        How many.
    owner
        Whose run took them.
    released
        Whether they have been given back.
    """

    gate: CpuGate
    cpus: float
    owner: str = ""
    released: bool = field(default=False)

    def release(self) -> None:
        """Give the CPUs back (once)."""
        if not self.released:
            self.released = True
            self.gate.release(self.cpus, self.owner)
