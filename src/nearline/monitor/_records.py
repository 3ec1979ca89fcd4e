"""What the machine monitor keeps: one run folder's ``system.ndjson``, a JSON line per sample
or mark, appended and fsynced as it is taken.

A line is written with one ``write`` on a file opened for appending, so a killed recorder
leaves every whole line it wrote, and a second process may append marks to the same file (the
kernel appends each such write whole). A torn last line (power lost mid-write) is skipped
when the file is read.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nearline.durable import fsync_path
from nearline.errors import MonitorError

FILE = "system.ndjson"
SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's own sector size
MB = 1_000_000  # MB/s as disk vendors and iostat -m... count them: 10**6 bytes


@dataclass(frozen=True)
class DiskRate:
    """One device's throughput over one sample, in 512-byte sectors per second."""

    read_sectors: float = 0.0
    write_sectors: float = 0.0

    @property
    def sectors(self) -> float:
        """Read and written together, the report's "sectors/second"."""
        return self.read_sectors + self.write_sectors

    @property
    def read_mb(self) -> float:
        return self.read_sectors * SECTOR / MB

    @property
    def write_mb(self) -> float:
        return self.write_sectors * SECTOR / MB


@dataclass(frozen=True)
class SystemSample:
    """The whole machine over the ``seconds`` that ended at ``time`` (Unix seconds).

    ``cpu`` is the percent of all CPUs' time spent busy (100 is every core busy), ``iowait``
    the percent spent idle waiting for disk; memory in use is what the kernel could not hand
    out without swapping (total minus available), so the page cache does not count.
    """

    time: float
    seconds: float
    cpu: float
    iowait: float
    memory_used: int
    memory_total: int
    swap_used: int
    swap_total: int
    disks: dict[str, DiskRate] = field(default_factory=dict)

    @property
    def memory_percent(self) -> float:
        return 100.0 * self.memory_used / self.memory_total if self.memory_total else 0.0

    @property
    def swap_percent(self) -> float:
        return 100.0 * self.swap_used / self.swap_total if self.swap_total else 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["disks"] = {
            name: {
                "read_sectors": rate.read_sectors,
                "write_sectors": rate.write_sectors,
                "read_mb": rate.read_mb,
                "write_mb": rate.write_mb,
            }
            for name, rate in self.disks.items()
        }
        return {"kind": "sample", **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SystemSample:
        disks = {
            name: DiskRate(read_sectors=rate["read_sectors"], write_sectors=rate["write_sectors"])
            for name, rate in data.get("disks", {}).items()
        }
        names = set(cls.__dataclass_fields__) - {"disks"}
        return cls(**{name: data[name] for name in names}, disks=disks)


@dataclass(frozen=True)
class Mark:
    """Something that happened during the recording: ``event`` ("start", "end", ...) of the
    run called ``name``, at ``time`` (Unix seconds)."""

    time: float
    event: str
    name: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "mark", **asdict(self)}


@dataclass(frozen=True)
class Recording:
    """A run folder's samples and marks, in the order they were written."""

    folder: Path
    samples: list[SystemSample]
    marks: list[Mark]

    @property
    def devices(self) -> list[str]:
        """Every device any sample measured, in the order first seen."""
        return list(dict.fromkeys(name for s in self.samples for name in s.disks))

    @property
    def start(self) -> float:
        """When the first sample's interval began (Unix seconds)."""
        return min([s.time - s.seconds for s in self.samples] + [m.time for m in self.marks])


def samples_file(folder: str | os.PathLike[str]) -> Path:
    return Path(folder) / FILE


class RecordFile:
    """An open run folder's ``system.ndjson``, appended one durable line at a time."""

    def __init__(self, folder: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(samples_file(folder), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            fsync_path(self.folder)  # the file's name survives a crash too
        except OSError as error:
            raise MonitorError(f"cannot record into {self.folder}: {error.strerror}") from error
        self._fsync = fsync

    def write(self, record: SystemSample | Mark) -> None:
        line = json.dumps(record.to_dict(), separators=(",", ":")) + "\n"
        os.write(self._fd, line.encode())
        if self._fsync:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def add_mark(folder: str | os.PathLike[str], event: str, name: str, *, time: float) -> Mark:
    """Append one mark to a run folder, from any process (a load driver marking its runs while
    ``nearline monitor record`` samples)."""
    mark = Mark(time=time, event=event, name=name)
    record = RecordFile(folder)
    try:
        record.write(mark)
    finally:
        record.close()
    return mark


def read_recording(folder: str | os.PathLike[str]) -> Recording:
    """Read a run folder back; raises :class:`MonitorError` when there is none."""
    path = samples_file(folder)
    if not Path(folder).is_dir():
        raise MonitorError(
            f"no run folder {folder}; record one with `nearline monitor record {folder}`"
        )
    if not path.is_file():
        raise MonitorError(
            f"{folder} holds no {FILE}; record into it with `nearline monitor record {folder}`"
        )
    text = path.read_text()
    lines = text.splitlines()
    if lines and not text.endswith("\n"):
        lines.pop()  # torn by a crash mid-write: every whole line before it stands
    samples: list[SystemSample] = []
    marks: list[Mark] = []
    for number, line in enumerate(lines, start=1):
        try:
            data = json.loads(line)
            if data["kind"] == "sample":
                samples.append(SystemSample.from_dict(data))
            elif data["kind"] == "mark":
                marks.append(Mark(time=data["time"], event=data["event"], name=data["name"]))
        except (ValueError, KeyError, TypeError) as error:
            raise MonitorError(f"{path}:{number}: not a monitor record ({error})") from error
    return Recording(folder=Path(folder), samples=samples, marks=marks)
