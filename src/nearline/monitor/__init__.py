"""monitor: what a run cost (_base.py's :class:`Usage`) and how it is measured while the run
runs (_usage.py's :class:`TreeMeter`, reading the run's process tree in /proc); and the whole
machine over a load run (_system.py's :class:`SystemSampler`, kept in a run folder by
_records.py, drawn by _plots.py's :func:`plot_run`)."""

from __future__ import annotations

from nearline.monitor._base import Usage
from nearline.monitor._devices import device_of, is_virtual
from nearline.monitor._records import (
    DiskRate,
    Mark,
    Recording,
    SystemSample,
    add_mark,
    read_recording,
)
from nearline.monitor._system import SystemSampler
from nearline.monitor._usage import Sample, TreeMeter, descendants, read_process

__all__ = [
    "DiskRate",
    "Mark",
    "Recording",
    "Sample",
    "SystemSample",
    "SystemSampler",
    "TreeMeter",
    "Usage",
    "add_mark",
    "descendants",
    "device_of",
    "is_virtual",
    "plot_run",
    "read_process",
    "read_recording",
]


def __getattr__(name: str) -> object:
    """``plot_run`` loads matplotlib, so only when asked for: the service's runs import this
    room for :class:`TreeMeter` alone."""
    if name == "plot_run":
        from nearline.monitor._plots import plot_run

        return plot_run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
