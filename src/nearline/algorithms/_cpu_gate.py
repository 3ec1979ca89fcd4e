"""The CPUs runs' processes hold at once on this machine, given out in turn, by fair share.

A run's sandbox (its job files, cgroups and disk) costs the service's own time, not the CPUs
lent to runs, so the service readies the next runs while others hold those CPUs: each readied
run waits here, its sandbox made, and starts its first process the moment its CPUs are free.
When CPUs free, the next turn goes as admission's fair share would give it: to the waiting
run whose owner holds the fewest CPUs here now, then whose owner ran least lately (the
``recent`` the gate is given), then the one that came first. The next run chosen that needs
more than is free holds the others back, as admission does.

A run may hand the gate its ``start`` (a held first process's release, _launch.py): then the
thread that frees the CPUs starts the next run itself, at once, rather than waking that run's
thread to do it; on a busy service that wake waited its turn for the interpreter.
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


@dataclass(eq=False)
class _Waiter:
    owner: str
    cpus: float
    arrived: int  # the order runs came in
    start: Callable[[], None] | None = None  # what starts the run, called as it is granted
    cancel: threading.Event | None = None
    turn: Turn | None = None  # set when granted
    failed: Exception | None = None  # what its start raised


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
        start: Callable[[], None] | None = None,
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
        start
            Called the moment the CPUs are taken for it, by whichever thread frees them;
            what it raises is raised here, and the CPUs go back.

        Returns
        -------
        Turn or None
            The CPUs taken (give them back with its ``release``); None if cancelled first.
        """
        me = _Waiter(owner, cpus, next(self._arrivals), start, cancel)
        told = False
        since = time.monotonic()
        with self._changed:
            self._waiting.append(me)
            self._grant()
        try:
            while True:
                with self._changed:
                    if me.turn is not None or me.failed is not None:
                        break
                    if cancel is not None and cancel.is_set():
                        return None
                    self._changed.wait(CANCEL_POLL)
                if waiting is not None and not told and time.monotonic() - since >= TELL_AFTER:
                    told = True
                    waiting(True)  # outside the lock: it writes the job store
        finally:
            with self._changed:
                if me in self._waiting:
                    self._waiting.remove(me)
                    self._grant()  # those behind it may fit now
            if told and waiting is not None:
                with contextlib.suppress(Exception):  # saying so must never lose the turn
                    waiting(False)
        if me.failed is not None:
            raise me.failed
        return me.turn

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
            self._give_back(cpus, owner)
            self._grant()

    def _give_back(self, cpus: float, owner: str) -> None:
        self.held = max(0.0, self.held - cpus)
        left = self.by_owner.get(owner, 0.0) - cpus
        if left > 1e-9:
            self.by_owner[owner] = left
        else:
            self.by_owner.pop(owner, None)
        self._changed.notify_all()

    def _grant(self) -> None:
        """Give the free CPUs to the waiting runs whose turn it is, starting each that
        handed in its start (called with the lock held)."""
        while self._waiting:
            chosen = self._next()
            if chosen.cancel is not None and chosen.cancel.is_set():
                self._waiting.remove(chosen)  # it leaves the line having taken nothing
                continue
            if not self._fits(chosen.cpus):
                return
            self._waiting.remove(chosen)
            self.held += chosen.cpus
            self.by_owner[chosen.owner] = self.by_owner.get(chosen.owner, 0.0) + chosen.cpus
            turn = Turn(self, chosen.cpus, chosen.owner)
            try:
                if chosen.start is not None:
                    chosen.start()
            except Exception as error:  # raised in the run's own thread; its CPUs go back
                chosen.failed = error
                self._give_back(chosen.cpus, chosen.owner)
                continue
            chosen.turn = turn
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
    granted
        When they were taken (monotonic seconds): when a run handed in its start, when it
        started.
    """

    gate: CpuGate
    cpus: float
    owner: str = ""
    released: bool = field(default=False)
    granted: float = field(default_factory=time.monotonic)

    def release(self) -> None:
        """Give the CPUs back (once)."""
        if not self.released:
            self.released = True
            self.gate.release(self.cpus, self.owner)


# what a run is handed to wait for its turn: called with what starts the run, it returns the
# turn taken (the run started), or None if the run was cancelled first
TurnTaker = Callable[[Callable[[], None]], Turn | None]
