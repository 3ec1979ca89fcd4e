"""Which block devices the machine monitor watches, and which one holds a given path."""

from __future__ import annotations

import os
import re
from pathlib import Path

from nearline.errors import MonitorError

# devices with no disk behind them: loop files, RAM disks, compressed RAM (zram)
_VIRTUAL = re.compile(r"^(loop|ram|zram)\d+$")


def is_virtual(name: str) -> bool:
    """True for a loop, RAM or zram device, whose "disk" traffic is memory or another file."""
    return _VIRTUAL.match(name) is not None


def device_of(path: str | os.PathLike[str]) -> str:
    """The name /proc/diskstats gives the block device holding ``path`` ("vda", "sda2",
    "nvme0n1p1"): a partition where the file system is on one."""
    number = os.stat(path).st_dev
    link = Path(f"/sys/dev/block/{os.major(number)}:{os.minor(number)}")
    if not link.exists():
        raise MonitorError(
            f"{path} is on no block device (device {os.major(number)}:{os.minor(number)}: "
            "tmpfs, overlay or a network file system); name a path on a local disk"
        )
    return link.resolve().name
