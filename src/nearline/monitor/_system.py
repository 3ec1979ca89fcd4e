"""Sampling the whole machine every ``interval`` seconds: CPU, memory, swap and each block
device's throughput, as the S4PM-DM load study read them from SAR (there every three
minutes; here every second by default).

psutil reads the same kernel counters as /proc/stat, /proc/meminfo and /proc/diskstats would
(its per-device bytes are diskstats' 512-byte sectors times 512) and handles the older
kernels' line formats, so it is used rather than parsing /proc here.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import psutil

from nearline.closing import Closing
from nearline.errors import ConfigError, MonitorError
from nearline.monitor._devices import is_virtual
from nearline.monitor._records import SECTOR, DiskRate, Mark, RecordFile, SystemSample

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Counters:
    """The kernel's running totals at one moment: CPU seconds (busy, iowait, all) over every
    core, and sectors read and written per device."""

    monotonic: float
    busy: float
    iowait: float
    total: float
    disks: dict[str, tuple[int, int]]


def read_counters(keep: Callable[[str], bool]) -> Counters:
    """Read the totals now, for the devices ``keep`` accepts."""
    cpu = psutil.cpu_times()
    # guest time is already inside user time (/proc/stat counts it twice)
    total = sum(cpu) - getattr(cpu, "guest", 0.0) - getattr(cpu, "guest_nice", 0.0)
    iowait = getattr(cpu, "iowait", 0.0)
    disks = {
        name: (io.read_bytes // SECTOR, io.write_bytes // SECTOR)
        for name, io in psutil.disk_io_counters(perdisk=True).items()
        if keep(name)
    }
    return Counters(
        monotonic=time.monotonic(),
        busy=total - cpu.idle - iowait,
        iowait=iowait,
        total=total,
        disks=disks,
    )


def take_sample(before: Counters, after: Counters) -> SystemSample:
    """The machine between two readings, with memory and swap as they are now."""
    seconds = after.monotonic - before.monotonic
    spent = after.total - before.total
    memory = psutil.virtual_memory()
    swap = psutil.swap_memory()
    disks = {}
    for name, (read, written) in after.disks.items():
        if name in before.disks and seconds > 0:
            was_read, was_written = before.disks[name]
            disks[name] = DiskRate(
                read_sectors=max(0, read - was_read) / seconds,
                write_sectors=max(0, written - was_written) / seconds,
            )
    return SystemSample(
        time=time.time(),
        seconds=seconds,
        cpu=_percent(after.busy - before.busy, spent),
        iowait=_percent(after.iowait - before.iowait, spent),
        memory_used=memory.total - memory.available,
        memory_total=memory.total,
        swap_used=swap.used,
        swap_total=swap.total,
        disks=disks,
    )


def _percent(part: float, whole: float) -> float:
    return min(100.0, max(0.0, 100.0 * part / whole)) if whole > 0 else 0.0


class SystemSampler(Closing):
    """Samples the machine in a background thread into ``folder``/system.ndjson until closed.

    Every sample is on disk (fsynced) before the next is taken, so a killed recorder keeps
    what it measured. ``devices`` names the block devices to watch (default: every device
    /proc/diskstats lists, whole disks and partitions, but loop, RAM and zram devices).
    ``on_sample(sample)`` is called from the sampling thread after each sample is written.
    Mark the runs being measured with :meth:`mark`; :meth:`close` takes a last, shorter
    sample so the tail of the recording is not lost.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        interval: float = 1.0,
        devices: Iterable[str] | None = None,
        on_sample: Callable[[SystemSample], None] | None = None,
        fsync: bool = True,
    ) -> None:
        if not interval > 0:
            raise ConfigError(f"interval: must be more than 0 seconds, got {interval}")
        wanted = None if devices is None else set(devices)
        self._keep = (lambda name: not is_virtual(name)) if wanted is None else wanted.__contains__
        self.interval = interval
        self.taken = 0
        self.last: SystemSample | None = None
        self._on_sample = on_sample
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._before = read_counters(self._keep)
        missing = sorted((wanted or set()) - set(self._before.disks))
        if missing:
            known = sorted(name for name in psutil.disk_io_counters(perdisk=True))
            raise MonitorError(
                f"no block device {', '.join(missing)} on this machine; it has {', '.join(known)}"
            )
        self._record = RecordFile(folder, fsync=fsync)
        self.folder = self._record.folder
        self._thread = threading.Thread(target=self._run, name="nearline-monitor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        due = self._before.monotonic + self.interval
        try:
            while not self._stop.wait(max(0.0, due - time.monotonic())):
                self._sample()
                due += self.interval
                if due < time.monotonic():  # fell behind (a stalled disk): skip the lost ticks
                    log.warning("monitor sampling fell behind by %.1f s", time.monotonic() - due)
                    due = time.monotonic() + self.interval
        except Exception as error:  # reported by close() and mark()
            log.exception("monitor sampling stopped")
            self._error = error

    def _sample(self) -> None:
        after = read_counters(self._keep)
        sample = take_sample(self._before, after)
        self._before = after
        self._write(sample)
        self.taken += 1
        self.last = sample
        if self._on_sample is not None:
            self._on_sample(sample)

    def _write(self, record: SystemSample | Mark) -> None:
        with self._lock:
            self._record.write(record)

    def _check(self) -> None:
        if self._error is not None:
            raise MonitorError(
                f"sampling into {self.folder} stopped: {self._error}"
            ) from self._error

    def mark(self, event: str, name: str) -> Mark:
        """Record that ``event`` ("start", "end") happened now to the run called ``name``."""
        self._check()
        if self._stop.is_set():
            raise MonitorError(f"the sampler of {self.folder} is closed; mark while it samples")
        mark = Mark(time=time.time(), event=event, name=name)
        self._write(mark)
        return mark

    def close(self, *, tail: bool = True) -> None:
        """Stop sampling; with ``tail``, first take a last, shorter sample of the time since
        the one before (a recording ended by Ctrl-C keeps its end; one of a set number of
        samples wants none)."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join()
        try:
            if tail and self._error is None and time.monotonic() - self._before.monotonic > 0.1:
                self._sample()
        finally:
            self._record.close()
        self._check()
