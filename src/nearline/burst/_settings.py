"""The settings of a burst session: overflow policy, memory bound, automatic flush."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from nearline.burst._space import OnFull, parse_on_full
from nearline.errors import ConfigError
from nearline.layout import Layout
from nearline.units import parse_size


class Overflow(StrEnum):
    """What a write does when the I/O server's queue memory is full. Data is never dropped.

    ``BLOCK`` waits for room (the server makes it by writing the oldest queued data);
    ``SPILL`` writes the block to a spill folder and goes on (written properly at flush);
    ``SYNC`` waits while the server writes that block through.
    """

    BLOCK = "block"  # wait for room; the server makes room by writing the oldest queued data
    SPILL = "spill"  # the client writes the block to a spill folder; written properly at flush
    SYNC = "sync"  # write-through: the client waits while the server writes that block now


def parse_overflow(value: str | Overflow) -> Overflow:
    try:
        return Overflow(value)
    except ValueError:
        choices = ", ".join(repr(o.value) for o in Overflow)
        raise ConfigError(f"overflow must be one of {choices}, got {value!r}") from None


@dataclass(frozen=True)
class AutoFlush:
    """Flush a client's per-rank files by itself, by size or by age.

    Assembled files still need an explicit, collective ``flush`` (every compute rank must
    agree on when a global variable is complete).

    Parameters
    ----------
    bytes
        Flush once this many bytes are queued (None: never by size).
    age
        Flush once this many seconds have passed since the last flush (None: never by age).
    """

    bytes: int | None = None
    age: float | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AutoFlush:
        """Read the settings as a user writes them.

        Parameters
        ----------
        data
            ``{"bytes": "64MiB", "age": 30}``; either key may be left out.

        Raises
        ------
        ConfigError
            An unknown key, a size that does not parse, or an age <= 0.
        """
        unknown = set(data) - {"bytes", "age"}
        if unknown:
            raise ConfigError(f"autoflush takes 'bytes' and 'age', not {sorted(unknown)}")
        size = data.get("bytes")
        age = data.get("age")
        if age is not None and float(age) <= 0:
            raise ConfigError(f"autoflush age must be > 0 seconds, got {age!r}")
        return cls(
            bytes=None if size is None else parse_size(size, what="autoflush bytes"),
            age=None if age is None else float(age),
        )

    def to_dict(self) -> dict[str, Any]:
        """The dict ``from_dict`` reads back."""
        return {"bytes": self.bytes, "age": self.age}


@dataclass(frozen=True)
class BurstSettings:
    """Everything the I/O servers need to know, parsed and checked once."""

    root: Path
    memory: int
    overflow: Overflow
    spill_dir: Path
    autoflush: AutoFlush | None = None
    layout: Layout = field(default_factory=Layout)
    write_behind: bool = False
    on_full: OnFull = OnFull.FAIL
    full_timeout: float = 600.0  # seconds a full disk is waited out under on_full="wait"

    @classmethod
    def parse(
        cls,
        *,
        root: str | Path,
        memory: str | int,
        overflow: str | Overflow,
        spill_dir: str | Path | None = None,
        autoflush: AutoFlush | dict[str, Any] | None = None,
        layout: Layout | None = None,
        write_behind: bool | None = None,
        on_full: str | OnFull = "fail",
        full_timeout: float = 600.0,
    ) -> BurstSettings:
        size = parse_size(memory, what="memory")
        if (
            isinstance(full_timeout, bool)
            or not isinstance(full_timeout, int | float)
            or (full_timeout <= 0)
        ):
            raise ConfigError(f"full_timeout must be seconds > 0, got {full_timeout!r}")
        if size < 4096:
            raise ConfigError(f"memory must be at least 4KiB per I/O server, got {memory!r}")
        if isinstance(autoflush, dict):
            autoflush = AutoFlush.from_dict(autoflush)
        root = Path(root)
        return cls(
            root=root,
            memory=size,
            overflow=parse_overflow(overflow),
            spill_dir=Path(spill_dir) if spill_dir is not None else root / ".spill",
            autoflush=autoflush,
            layout=layout or Layout(),
            write_behind=_flag("NEARLINE_BURST_WRITE_BEHIND")
            if write_behind is None
            else write_behind,
            on_full=parse_on_full(on_full),
            full_timeout=float(full_timeout),
        )


def _flag(name: str) -> bool:
    """A yes/no NEARLINE_* setting: 1/0, true/false, yes/no; unset is no."""
    value = os.environ.get(name, "0").strip().lower()
    if value in ("1", "true", "yes"):
        return True
    if value in ("0", "false", "no", ""):
        return False
    raise ConfigError(f"{name} must be 1 or 0 (true/false, yes/no), got {value!r}")
