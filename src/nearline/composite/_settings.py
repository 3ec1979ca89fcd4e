"""What a compositing run is asked to do, checked once, before any work starts."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from nearline.errors import ConfigError
from nearline.units import parse_size

MAX_LINES = 1024  # scan lines per read request and per shipped block (~5 MB)


class Period(StrEnum):
    """How much time one composite covers."""

    DAY = "day"
    TENDAY = "10day"
    MONTH = "month"


class OnError(StrEnum):
    """What a bad granule does to the run."""

    SKIP = "skip"
    FAIL = "fail"


@dataclass(frozen=True)
class CompositeSettings:
    """A run's parameters; :meth:`parse` turns user input into these or a ConfigError."""

    grid: str = "igh-8km"
    period: Period = Period.DAY
    reducer: str = "max-ndvi"
    workers: int = 2
    readers: int = 1
    memory: int = 2 * 1024**3
    on_error: OnError = OnError.FAIL
    max_lines: int = MAX_LINES

    @classmethod
    def parse(
        cls,
        *,
        grid: str = "igh-8km",
        period: str = "day",
        reducer: str = "max-ndvi",
        workers: int | None = None,
        readers: int = 1,
        memory: str | int = "2GiB",
        on_error: str = "fail",
    ) -> CompositeSettings:
        return cls(
            grid=grid,
            period=_choice(Period, period, "period"),
            reducer=reducer,
            workers=_positive(workers if workers is not None else default_workers(), "workers"),
            readers=_positive(readers, "readers"),
            memory=parse_size(memory, what="memory"),
            on_error=_choice(OnError, on_error, "on_error"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "grid": self.grid,
            "period": self.period.value,
            "reducer": self.reducer,
            "workers": self.workers,
            "readers": self.readers,
            "memory": self.memory,
            "on_error": self.on_error.value,
        }


def default_workers() -> int:
    """One worker per core this process may use."""
    return max(1, len(os.sched_getaffinity(0)))


def _choice(kind: type[StrEnum], value: str, what: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        names = ", ".join(member.value for member in kind)
        raise ConfigError(f"{what}: expected one of {names}, got {value!r}") from None


def _positive(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{what}: expected a whole number of at least 1, got {value!r}")
    return value


def check_output(path: Path, *, option: str = "--out", kind: str = "netCDF") -> Path:
    """The output path, refusing a folder where a file is wanted and a folder that takes no
    new files: said before the run's work starts, not as a traceback when it writes."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{option} {path} is a folder; name the {kind} file to write")
    folder = path.parent
    # The run makes a missing folder too. A probe file is the only sure test: os.access
    # says yes to root, yet /proc (or a read-only mount) still refuses the file.
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        if folder.exists() and not folder.is_dir():
            raise ConfigError(
                f"cannot write {option} {path}: {folder} is a file, not a folder; name a "
                f"{kind} file in a folder you can write"
            ) from None
        raise ConfigError(
            f"cannot write {option} {path}: its folder {folder} takes no new files "
            f"({error.strerror or error}); name a {kind} file in a folder you can write"
        ) from None
    return path
