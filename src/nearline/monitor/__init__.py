"""monitor: what a run cost (base.py's :class:`Usage`) and how it is measured while the run
runs (usage.py's :class:`TreeMeter`, reading the run's process tree in /proc); and the whole
machine over a load run (system.py's :class:`SystemSampler`, kept in a run folder by
records.py, drawn by plots.py's :func:`plot_run`)."""

from __future__ import annotations

from nearline.monitor.base import Usage
from nearline.monitor.devices import device_of, is_virtual
from nearline.monitor.records import (
    DiskRate,
    Mark,
    Recording,
    SystemSample,
    add_mark,
    read_recording,
)
from nearline.monitor.system import SystemSampler
from nearline.monitor.usage import Sample, TreeMeter, descendants, read_process

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
        from nearline.monitor.plots import plot_run

        return plot_run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
