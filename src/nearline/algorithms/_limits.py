"""What a run is held to, and each limit said the way a scientist reads it."""

from __future__ import annotations

from dataclasses import dataclass

from nearline.units import format_size


@dataclass(frozen=True)
class Limits:
    """What a sandboxed run is held to.

    Parameters
    ----------
    cpus
        CPUs (a share; fractions allowed).
    memory
        Bytes of memory.
    wall_seconds
        Wall-clock seconds.
    cpu_seconds
        CPU seconds of the whole run (default: ``wall_seconds * cpus``).
    processes
        The run's own processes at once.
    file_size
        Bytes of any one file it writes (None: no bound but ``disk``).
    disk
        Bytes the run's folder (and its private /tmp) may hold at once, and its log
        (None: no bound).
    """

    cpus: float = 1.0
    memory: int = 2 * 1024**3
    wall_seconds: float = 3600.0
    cpu_seconds: float | None = None
    processes: int = 256
    file_size: int | None = None
    disk: int | None = None

    @property
    def largest_file(self) -> int | None:
        """The size no file the run writes may pass (``RLIMIT_FSIZE``): no one file can hold
        more than the whole disk allotment either."""
        bounds = [bound for bound in (self.file_size, self.disk) if bound is not None]
        return min(bounds) if bounds else None

    @property
    def cpu_limit(self) -> float:
        """The CPU time the whole run may use, in seconds."""
        return self.cpu_seconds if self.cpu_seconds is not None else self.wall_seconds * self.cpus

    # -- why a run was stopped, in words ----------------------------------------------------
    def wall_broken(self) -> str:
        return f"wall-clock limit of {self.wall_seconds:g} s"

    def cpu_broken(self) -> str:
        return f"CPU-time limit of {self.cpu_limit:g} s"

    def memory_broken(self) -> str:
        return f"memory limit of {_size(self.memory)} exceeded"

    def memory_ran_out(self, held: int) -> str:
        return (
            f"killed by the kernel: memory ran out around the run (in the service's memory "
            f"budget, or on the machine) while it held {_size(held)} of its "
            f"{_size(self.memory)} limit"
        )

    def processes_broken(self) -> str:
        return f"process limit of {self.processes} reached"

    def file_size_broken(self) -> str:
        """Why a run met RLIMIT_FSIZE: the file-size limit, or the disk limit when that is
        the smaller (one file tried to hold more than the whole allotment)."""
        if self.file_size is None or (self.disk is not None and self.disk < self.file_size):
            return self.disk_broken()
        return f"file-size limit of {_size(self.file_size)} exceeded"

    def disk_broken(self) -> str:
        return f"disk limit of {_size(self.disk or 0)} exceeded"


def _size(nbytes: int) -> str:
    """ "256 MiB" rather than "256.0 MiB"."""
    return format_size(nbytes).replace(".0 ", " ")
