"""The load study's figures from a run folder, as PNG: CPU, disk and memory over the run's
time with each run's start and end marked, and the report's 3-D view (CPU, memory, disk) as
2-D scatters coloured by time.

Figures are drawn on matplotlib's Agg canvas directly (no pyplot), so nothing needs a display
and no global figure state is touched.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from nearline.durable import publish, temporary_path
from nearline.errors import MonitorError
from nearline.monitor._records import MB, SECTOR, Recording, SystemSample, read_recording

DPI = 100
WIDTH = 10.0  # inches; a figure is WIDTH * DPI pixels wide
SCATTER_COLUMNS = 3
_UNITS = [(3600.0, "h", 7200), (60.0, "min", 300), (1.0, "s", 0)]  # unit, once a span exceeds
EVENT_STYLE = {"start": ("tab:green", "-"), "end": ("tab:red", "--")}


class Clock:
    """Seconds since the recording began, shown in seconds, minutes or hours by its span."""

    def __init__(self, recording: Recording) -> None:
        self.start = recording.start
        span = max([s.time for s in recording.samples] + [m.time for m in recording.marks])
        span -= self.start
        self.scale, unit = next(
            (scale, unit) for scale, unit, above in _UNITS if span > above or unit == "s"
        )
        self.label = f"time since {_utc(self.start)} ({unit})"

    def __call__(self, times: Iterable[float]) -> np.ndarray:
        return (np.asarray(list(times), dtype=float) - self.start) / self.scale


def _utc(seconds: float) -> str:
    from datetime import UTC, datetime

    return f"{datetime.fromtimestamp(seconds, UTC):%Y-%m-%d %H:%M:%S} UTC"


def _figure(rows: int, *, height: float, columns: int = 1) -> tuple[Figure, list[Axes]]:
    figure = Figure(figsize=(WIDTH, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False, sharex=columns == 1)
    return figure, list(axes.flat)


def _grid(panels: int) -> tuple[Figure, list[Axes]]:
    """``panels`` scatter panels, at most SCATTER_COLUMNS to a row, the unused ones hidden."""
    columns = min(panels, SCATTER_COLUMNS)
    rows = -(-panels // columns)
    figure, axes = _figure(rows, columns=columns, height=4.0 * rows)
    for spare in axes[panels:]:
        spare.set_visible(False)
    return figure, axes[:panels]


def mark_runs(axes: Axes, recording: Recording, clock: Clock, *, labels: bool = True) -> None:
    """Each mark as a vertical line (starts solid green, ends dashed red), and the span from a
    run's start to its end shaded; names written along the top of the axes."""
    started: dict[str, float] = {}
    for mark in recording.marks:
        (at,) = clock([mark.time])
        colour, style = EVENT_STYLE.get(mark.event, ("tab:gray", ":"))
        axes.axvline(at, color=colour, linestyle=style, linewidth=1)
        if mark.event == "start":
            started[mark.name] = at
        elif mark.event == "end" and mark.name in started:
            axes.axvspan(started.pop(mark.name), at, color="tab:green", alpha=0.08)
        if labels:
            axes.annotate(
                f"{mark.event} {mark.name}",
                (at, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(2, -2),
                textcoords="offset points",
                rotation=90,
                va="top",
                fontsize=7,
                color=colour,
            )


def steps(
    samples: Sequence[SystemSample], value: Callable[[SystemSample], float], clock: Clock
) -> tuple[np.ndarray, np.ndarray]:
    """Points for a ``where="pre"`` step line on which each sample's value spans the interval
    it measured: a gap-opening point (value NaN, so nothing is drawn up to it) at the start of
    the first interval and of any interval that does not follow on from the one before (a
    second recording appended to the folder, a stalled sampler)."""
    times: list[float] = []
    values: list[float] = []
    previous = None
    for sample in samples:
        begun = sample.time - sample.seconds
        if previous is None or begun - previous > 0.5 * sample.seconds:
            times.append(begun)
            values.append(float("nan"))
        times.append(sample.time)
        values.append(value(sample))
        previous = sample.time
    return clock(times), np.asarray(values, dtype=float)


def _over_time(
    recording: Recording,
    title: str,
    panels: Sequence[tuple[str, list[tuple[str, Callable[[SystemSample], float]]]]],
    *,
    height: float,
    percent: bool = False,
) -> Figure:
    """One panel per (y label, [(line label, value of a sample)]) over the run's time;
    ``percent`` panels run from 0 to 100."""
    clock = Clock(recording)
    figure, axes = _figure(len(panels), height=height)
    for index, (ax, (ylabel, lines)) in enumerate(zip(axes, panels, strict=True)):
        for label, value in lines:
            ax.step(*steps(recording.samples, value, clock), where="pre", label=label)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
        if percent:
            ax.set_ylim(0, 105)
        mark_runs(ax, recording, clock, labels=index == 0)
    axes[-1].set_xlabel(clock.label)
    figure.suptitle(title)
    return figure


def cpu_figure(recording: Recording) -> Figure:
    """CPU busy and waiting for I/O, percent of all cores, over time."""
    return _over_time(
        recording,
        "CPU",
        [("% of all CPUs", [("busy", lambda s: s.cpu), ("waiting for I/O", lambda s: s.iowait)])],
        height=4.0,
        percent=True,
    )


def memory_figure(recording: Recording) -> Figure:
    """Memory and swap in use, percent of each total, over time."""
    from nearline.units import format_size

    last = recording.samples[-1]
    swap = f"of {format_size(last.swap_total)}" if last.swap_total else "no swap"
    return _over_time(
        recording,
        "memory and swap",
        [
            (
                "% in use",
                [
                    (f"memory (of {format_size(last.memory_total)})", lambda s: s.memory_percent),
                    (f"swap ({swap})", lambda s: s.swap_percent),
                ],
            )
        ],
        height=4.0,
        percent=True,
    )


def _rate(device: str, field: str) -> Callable[[SystemSample], float]:
    def value(sample: SystemSample) -> float:
        rate = sample.disks.get(device)
        return float("nan") if rate is None else getattr(rate, field)

    return value


def _with_mb_axis(axes: Axes) -> None:
    axes.secondary_yaxis(
        "right", functions=(lambda s: s * SECTOR / MB, lambda mb: mb * MB / SECTOR)
    ).set_ylabel("MB/s")


def disk_figure(recording: Recording, devices: Sequence[str] | None = None) -> Figure:
    """Sectors/s read and written over time, one panel per device (MB/s on the right)."""
    devices = list(devices or recording.devices)
    if not devices:
        raise MonitorError(f"{recording.folder}: no block device was sampled; nothing to plot")
    figure = _over_time(
        recording,
        "disk throughput",
        [
            (
                f"{name}\nsectors/s",
                [("read", _rate(name, "read_sectors")), ("written", _rate(name, "write_sectors"))],
            )
            for name in devices
        ],
        height=1.0 + 2.5 * len(devices),
    )
    for axes in figure.axes[: len(devices)]:
        _with_mb_axis(axes)
    return figure


def scatter_figure(recording: Recording, devices: Sequence[str] | None = None) -> Figure:
    """The report's 3-D view flattened: CPU against memory (marker size: all devices' sectors/s)
    and CPU against each device's sectors/s, every point coloured by its time."""
    devices = list(devices or recording.devices)
    samples = recording.samples
    clock = Clock(recording)
    figure, axes = _grid(1 + len(devices))
    when = clock(s.time for s in samples)
    cpu = [s.cpu for s in samples]
    disk = np.array([sum(s.disks[d].sectors for d in devices if d in s.disks) for s in samples])
    size = 10 + 190 * disk / disk.max() if disk.max() > 0 else np.full(len(samples), 20.0)
    points = axes[0].scatter(cpu, [s.memory_percent for s in samples], c=when, s=size)
    axes[0].set_ylabel("memory in use (%)")
    axes[0].set_ylim(0, 105)
    axes[0].set_title("marker size: disk sectors/s", fontsize=9)
    for ax, name in zip(axes[1:], devices, strict=True):
        ax.scatter(cpu, [_rate(name, "sectors")(s) for s in samples], c=when, s=20)
        ax.set_ylabel(f"{name} sectors/s (read + written)")
        ax.set_title(name, fontsize=9)
    for ax in axes:
        ax.set_xlabel("CPU busy (%)")
        ax.set_xlim(-2, 102)
        ax.grid(alpha=0.3)
    figure.colorbar(points, ax=axes, label=clock.label)
    figure.suptitle("CPU, memory and disk")
    return figure


FIGURES: dict[str, Callable[..., Figure]] = {
    "cpu": lambda recording, devices: cpu_figure(recording),
    "disk": disk_figure,
    "memory": lambda recording, devices: memory_figure(recording),
    "scatter": scatter_figure,
}


def save(figure: Figure, path: Path) -> Path:
    """Write ``figure`` as a PNG under a temporary name and publish it as ``path``."""
    partial = temporary_path(path)
    figure.savefig(partial, format="png", dpi=DPI)
    publish(partial, path)
    return path


def plot_run(
    folder: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    devices: Sequence[str] | None = None,
) -> list[Path]:
    """Draw every figure of the run folder ``folder`` into ``out`` (cpu.png, disk.png,
    memory.png, scatter.png) and return their paths."""
    recording = read_recording(folder)
    if not recording.samples:
        raise MonitorError(
            f"{folder} holds no samples yet; record some with `nearline monitor record {folder}`"
        )
    unknown = sorted(set(devices or ()) - set(recording.devices))
    if unknown:
        raise MonitorError(
            f"{folder} has no samples of device {', '.join(unknown)}; "
            f"it has {', '.join(recording.devices) or 'none'}"
        )
    target = Path(out)
    target.mkdir(parents=True, exist_ok=True)
    return [
        save(draw(recording, devices), target / f"{name}.png") for name, draw in FIGURES.items()
    ]
