"""Sizes typed by people ("2GiB", "512 MB", "0") as byte counts."""

from __future__ import annotations

import re

from nearline.errors import ConfigError

_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: str | int, *, what: str = "size") -> int:
    """Return ``value`` in bytes; ints pass through, strings take units such as "2GiB".

    >>> parse_size("1.5KiB")
    1536
    """
    if isinstance(value, bool):
        raise ConfigError(f"{what}: expected a size such as '2GiB', got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(f"{what}: a size cannot be negative, got {value}")
        return value
    match = _SIZE.match(str(value))
    if match is None or match.group(2).lower() not in _UNITS:
        raise ConfigError(
            f"{what}: expected a size such as '512MiB' or '2GB' "
            f"(units B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), got {value!r}"
        )
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def format_size(nbytes: float) -> str:
    """Return ``nbytes`` the way a person reads it: "1.5 GiB"."""
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")
