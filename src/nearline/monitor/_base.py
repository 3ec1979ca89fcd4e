"""What a run cost: the figures kept with every job's provenance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    """Resources one run used, summed over its whole process tree.

    ``peak_memory`` is the most memory the run held at once (bytes): where the run has a
    memory cgroup, as the kernel charged it against the run's limit (resident memory plus the
    page cache of files it wrote); elsewhere its resident memory, sampled;
    ``bytes_read``/``bytes_written`` count what its processes read and wrote through the
    kernel (files, pipes; page-cache hits included), as /proc/PID/io's rchar/wchar do.
    """

    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    peak_memory: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    def to_dict(self) -> dict[str, Any]:
        # every field is a number: a flat copy (asdict's deep one cost a job listing dearly)
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__ if name in data})

    def __add__(self, other: Usage) -> Usage:
        """Two runs' usage together: times and bytes add, the peak is the larger."""
        return Usage(
            wall_seconds=self.wall_seconds + other.wall_seconds,
            cpu_seconds=self.cpu_seconds + other.cpu_seconds,
            peak_memory=max(self.peak_memory, other.peak_memory),
            bytes_read=self.bytes_read + other.bytes_read,
            bytes_written=self.bytes_written + other.bytes_written,
        )
