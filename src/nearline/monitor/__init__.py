"""monitor: what a run cost (base.py's :class:`Usage`) and how it is measured while the run
runs (usage.py's :class:`TreeMeter`, reading the run's process tree in /proc)."""

from __future__ import annotations

from nearline.monitor.base import Usage
from nearline.monitor.usage import Sample, TreeMeter, descendants, read_process

__all__ = ["Sample", "TreeMeter", "Usage", "descendants", "read_process"]
