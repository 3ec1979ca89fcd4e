"""The CPUs runs' processes hold at once on this machine, given out in turn.

A run's sandbox (its job files, cgroups and disk) costs the service's own time, not the CPUs
lent to runs, so the service readies the next runs while others hold those CPUs: each readied
run waits here, its sandbox made, and starts its first process the moment its CPUs are free.
Turns go in the order runs reach the gate: admission's order (fair share decided it), give
or take how long each one's set-up took. A run that needs more than is free holds the ones
behind it back, as admission does.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

CANCEL_POLL = 0.05  # seconds: how soon a cancelled waiter leaves the line
TELL_AFTER = 1.0  # seconds a run waits before it is said to be waiting (short waits are not)


class CpuGate:
    """At most ``cpus`` CPUs' worth of runs' processes at once.

    Parameters
    ----------
    cpus
        The CPUs lent to runs here.
    """

    def __init__(self, cpus: float) -> None:
        self.cpus = cpus
        self.held = 0.0
        self._line: deque[object] = deque()
        self._changed = threading.Condition()

    def acquire(
        self,
        cpus: float,
        *,
        cancel: threading.Event | None = None,
        waiting: Callable[[bool], object] | None = None,
    ) -> Turn | None:
        """Wait for this run's turn and ``cpus`` free CPUs, and take them.

        Parameters
        ----------
        cpus
            What the run declares. A run asking more than the gate holds goes alone.
        cancel
            Setting it leaves the line: then nothing is taken and False is returned.
        waiting
            Told ``True`` once the run has waited :data:`TELL_AFTER` seconds, and ``False``
            when, having been told so, it goes on (or leaves).

        Returns
        -------
        Turn or None
            The CPUs taken (give them back with its ``release``); None if cancelled first.
        """
        turn = object()
        told = False
        since = time.monotonic()
        with self._changed:
            self._line.append(turn)
        try:
            while True:
                with self._changed:
                    if self._fits(turn, cpus):
                        self.held += cpus
                        return Turn(self, cpus)
                    if cancel is not None and cancel.is_set():
                        return None
                    self._changed.wait(CANCEL_POLL)
                if waiting is not None and not told and time.monotonic() - since >= TELL_AFTER:
                    told = True
                    waiting(True)  # outside the lock: it writes the job store
        finally:
            with self._changed:
                self._line.remove(turn)
                self._changed.notify_all()
            if told and waiting is not None:
                with contextlib.suppress(Exception):  # saying so must never lose the turn
                    waiting(False)

    def release(self, cpus: float) -> None:
        """Give back what :meth:`acquire` took.

        Parameters
        ----------
        cpus
            What was taken.
        """
        with self._changed:
            self.held = max(0.0, self.held - cpus)
            self._changed.notify_all()

    def _fits(self, turn: object, cpus: float) -> bool:
        if self._line[0] is not turn:
            return False
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
    """

    gate: CpuGate
    cpus: float
    released: bool = False

    def release(self) -> None:
        """Give the CPUs back (once)."""
        if not self.released:
            self.released = True
            self.gate.release(self.cpus)
