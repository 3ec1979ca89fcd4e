"""The Veros plug-in itself: its entry points and the restart diagnostic."""

from __future__ import annotations

from typing import Any

from veros.diagnostics.base import VerosDiagnostic

from nearline.burst.veros._output import attachment, through_burst
from nearline.burst.veros._restart import read_restart, write_restart
from nearline.errors import ConfigError

RESTART = "burst_restart"


class BurstRestart(VerosDiagnostic):
    """Writes Veros's restart file through burst, when and as Veros would.

    The plug-in blanks ``restart_output_filename`` and ``restart_input_filename``, so
    Veros's own ``write_restart`` and ``read_restart`` (which open the file with parallel
    HDF5 under MPI) do nothing; this diagnostic reads the file where Veros would. Veros
    writes at the start of a step, or after the last one; this diagnostic, last in line,
    writes at the end of the step before, when the model state is the same.
    """

    name = RESTART
    output_frequency = 0.0
    sampling_frequency = 0.0

    def __init__(self) -> None:
        self.template: str | None = None
        self.input: str | None = None
        self.start_time: float | None = None

    def initialize(self, state: Any) -> None:
        """Last of the diagnostics to start, just where Veros reads its restart file."""
        if self.template:
            self.output_frequency = state.settings.dt_tracer  # look at every step's end
        if self.input:
            read_restart(state, self.input)

    def diagnose(self, state: Any) -> None:
        pass

    def output(self, state: Any) -> None:
        from veros import runtime_settings

        if not self.template or runtime_settings.diskless_mode or self.start_time is None:
            return
        vs, settings = state.variables, state.settings
        last = vs.time - self.start_time >= settings.runlen  # Veros's loop ends: it writes
        periodic = (
            settings.restart_frequency
            and vs.itt > 0
            and vs.time % settings.restart_frequency < settings.dt_tracer
        )
        if last or periodic:
            write_restart(state, self.template)


def _setup(state: Any) -> None:
    """After Veros made its diagnostics and before it initialises them: route their files."""
    from veros import runtime_state

    attached = attachment()
    if attached is None:
        if runtime_state.proc_num > 1:
            raise ConfigError(
                "this Veros setup writes through nearline burst: under mpiexec, run it with "
                "python -m nearline.burst.veros SETUP.py (docs/burst.md, 'A real model: Veros')"
            )
        return  # serial `veros run`: Veros writes its own files
    attached.state = state
    for diagnostic in state.diagnostics.values():
        if not isinstance(diagnostic, BurstRestart):
            through_burst(diagnostic)
    restart = state.diagnostics[RESTART]
    restart.template = state.settings.restart_output_filename
    restart.input = state.settings.restart_input_filename
    attached.taken = {
        "restart_output_filename": restart.template,
        "restart_input_filename": restart.input,
    }
    with state.settings.unlock():  # Veros would open these with parallel HDF5: ours now
        state.settings.restart_output_filename = ""
        state.settings.restart_input_filename = None


def _step(state: Any) -> None:
    """Every step, mid-way: the restart diagnostic learns when the run began."""
    restart = state.diagnostics.get(RESTART)
    if restart is not None and restart.start_time is None:
        restart.start_time = float(state.variables.time)


INTERFACE = {
    "name": "nearline-burst",
    "setup_entrypoint": _setup,
    "run_entrypoint": _step,
    "diagnostics": [BurstRestart],
}

__all__ = ["INTERFACE", "BurstRestart"]
