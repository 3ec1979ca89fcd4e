"""The load study's figures drawn from samples of known values: the right lines, points and
marks, and PNGs of the right size that are not blank."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from nearline.errors import MonitorError
from nearline.monitor import DiskRate, Mark, Recording, SystemSample, plot_run
from nearline.monitor._plots import DPI, WIDTH, cpu_figure, disk_figure, scatter_figure
from nearline.monitor._records import RecordFile

T0 = 1_780_000_000.0
GiB = 2**30
MINUTE = 60


def known(seconds: int = 60, *, step: float = 1.0) -> Recording:
    """CPU rising 0 to 100 %, memory a quarter used, no swap, sda writing 1000 sectors/s and
    sdb reading 2000 * i; run "MOD06_L2 #1" from the 10th to the 40th step."""
    samples = [
        SystemSample(
            time=T0 + (i + 1) * step,
            seconds=step,
            cpu=100.0 * i / (seconds - 1),
            iowait=5.0,
            memory_used=4 * GiB,
            memory_total=16 * GiB,
            swap_used=0,
            swap_total=0,
            disks={
                "sda": DiskRate(read_sectors=0.0, write_sectors=1000.0),
                "sdb": DiskRate(read_sectors=2000.0 * i, write_sectors=0.0),
            },
        )
        for i in range(seconds)
    ]
    marks = [
        Mark(time=T0 + 10 * step, event="start", name="MOD06_L2 #1"),
        Mark(time=T0 + 40 * step, event="end", name="MOD06_L2 #1"),
    ]
    return Recording(folder=Path("known"), samples=samples, marks=marks)


def write(recording: Recording, folder: Path) -> Path:
    record = RecordFile(folder, fsync=False)
    for item in sorted([*recording.samples, *recording.marks], key=lambda r: r.time):
        record.write(item)
    record.close()
    return folder


def vertical_lines(axes) -> list[float]:  # type: ignore[no-untyped-def]
    return [line.get_xdata()[0] for line in axes.lines if len(line.get_xdata()) == 2]


def test_cpu_over_time_with_the_run_marked() -> None:
    recording = known()
    figure = cpu_figure(recording)
    (axes,) = figure.axes
    busy, iowait = axes.lines[:2]
    # seconds since the recording began; each value held over the second it measured
    assert list(busy.get_xdata()) == list(range(61))
    assert list(busy.get_ydata()[1:]) == [s.cpu for s in recording.samples]
    assert np.isnan(busy.get_ydata()[0])
    assert set(iowait.get_ydata()[1:]) == {5.0}
    assert vertical_lines(axes) == [10.0, 40.0]
    labels = [text.get_text() for text in axes.texts]
    assert labels == ["start MOD06_L2 #1", "end MOD06_L2 #1"]
    assert axes.get_xlabel().endswith("(s)")


def test_a_second_recording_in_the_same_folder_is_drawn_apart_from_the_first() -> None:
    first, second = known(3), known(2)
    later = [SystemSample(**{**vars(s), "time": s.time + 100}) for s in second.samples]
    recording = Recording(folder=Path("two"), samples=first.samples + later, marks=[])
    busy = cpu_figure(recording).axes[0].lines[0]
    assert list(busy.get_xdata()) == [0, 1, 2, 3, 100, 101, 102]
    assert np.isnan(busy.get_ydata()[[0, 4]]).all()  # nothing drawn from 3 s to 100 s
    assert list(busy.get_ydata()[[1, 2, 3, 5, 6]]) == [0.0, 50.0, 100.0, 0.0, 100.0]


def test_a_long_run_is_shown_in_minutes() -> None:
    figure = cpu_figure(known(60, step=MINUTE))
    (axes,) = figure.axes
    assert axes.get_xlabel().endswith("(min)")
    assert axes.lines[0].get_xdata()[-1] == 60.0
    assert vertical_lines(axes) == [10.0, 40.0]


def test_disk_over_time_has_a_panel_per_device_in_sectors_and_mb() -> None:
    recording = known()
    figure = disk_figure(recording)
    panels = [ax for ax in figure.axes if ax.get_ylabel().endswith("sectors/s")]
    assert [ax.get_ylabel() for ax in panels] == ["sda\nsectors/s", "sdb\nsectors/s"]
    sda_read, sda_written = panels[0].lines[:2]
    assert set(sda_read.get_ydata()[1:]) == {0.0}
    assert set(sda_written.get_ydata()[1:]) == {1000.0}
    assert list(panels[1].lines[0].get_ydata()[1:]) == [2000.0 * i for i in range(60)]
    assert all(vertical_lines(ax) == [10.0, 40.0] for ax in panels)
    # the MB/s axis on the right: 1000 sectors/s are 0.512 MB/s
    (mb,) = panels[0].child_axes
    assert mb.get_ylabel() == "MB/s"
    assert mb.yaxis.get_transform().transform(0.512) == pytest.approx(1000.0)
    only = disk_figure(recording, devices=["sdb"])
    assert [ax.get_ylabel() for ax in only.axes if ax.get_ylabel().endswith("/s")] == [
        "sdb\nsectors/s"
    ]


def test_the_three_d_view_as_scatters_coloured_by_time() -> None:
    recording = known()
    figure = scatter_figure(recording)
    memory, sda, sdb = figure.axes[:3]
    points = memory.collections[0]
    cpu = [s.cpu for s in recording.samples]
    assert np.array_equal(points.get_offsets(), np.column_stack([cpu, [25.0] * 60]))
    assert list(points.get_array()) == list(range(1, 61))  # colour: seconds since the start
    sizes = points.get_sizes()  # all devices' sectors/s: 1000 + 2000 i, so growing
    assert sizes[0] < sizes[30] < sizes[-1] == pytest.approx(200.0)
    assert list(sdb.collections[0].get_offsets()[:, 1]) == [2000.0 * i for i in range(60)]
    assert set(sda.collections[0].get_offsets()[:, 1]) == {1000.0}
    assert figure.axes[-1].get_ylabel().startswith("time since")  # the colour bar


def test_many_devices_wrap_onto_rows_of_three_scatters() -> None:
    recording = known(5)
    many = [
        SystemSample(**{**vars(s), "disks": {f"sd{c}": DiskRate(1.0, 1.0) for c in "abcd"}})
        for s in recording.samples
    ]
    figure = scatter_figure(Recording(folder=Path("known"), samples=many, marks=[]))
    shown = [ax for ax in figure.axes if ax.get_visible() and ax.get_xlabel() == "CPU busy (%)"]
    assert [ax.get_title() for ax in shown] == [
        "marker size: disk sectors/s", "sda", "sdb", "sdc", "sdd",
    ]  # fmt: skip
    assert [ax.get_subplotspec().rowspan.start for ax in shown] == [0, 0, 0, 1, 1]
    assert tuple(figure.get_size_inches()) == (WIDTH, 8.0)


def test_plot_run_writes_four_pngs_of_the_right_size_that_are_not_blank(tmp_path: Path) -> None:
    folder = write(known(), tmp_path / "run")
    paths = plot_run(folder, tmp_path / "figures")
    assert [p.name for p in paths] == ["cpu.png", "disk.png", "memory.png", "scatter.png"]
    heights = {"cpu.png": 4.0, "disk.png": 1.0 + 2.5 * 2, "memory.png": 4.0, "scatter.png": 4.0}
    for path in paths:
        with Image.open(path) as image:
            assert image.format == "PNG"
            assert image.size == (WIDTH * DPI, heights[path.name] * DPI)
            pixels = np.asarray(image.convert("RGB")).reshape(-1, 3).astype(np.uint32)
        packed = pixels[:, 0] << 16 | pixels[:, 1] << 8 | pixels[:, 2]
        assert len(np.unique(packed)) > 50, path.name  # text, lines, points: not blank
        white = (packed == 0xFFFFFF).mean()
        assert 0.3 < white < 0.99, path.name
    with Image.open(paths[0]) as cpu:
        rgb = np.asarray(cpu.convert("RGB"))
    assert np.all(rgb == (0x1F, 0x77, 0xB4), axis=2).sum() > 500  # the CPU line, tab:blue
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == sorted(heights)


def test_nothing_to_plot_is_said_plainly(tmp_path: Path) -> None:
    with pytest.raises(MonitorError, match=r"no run folder .*nowhere; record one with"):
        plot_run(tmp_path / "nowhere", tmp_path / "out")
    folder = tmp_path / "marks-only"
    record = RecordFile(folder, fsync=False)
    record.write(Mark(time=T0, event="start", name="a"))
    record.close()
    with pytest.raises(MonitorError, match="marks-only holds no samples yet"):
        plot_run(folder, tmp_path / "out")
    with pytest.raises(MonitorError, match="no samples of device sdz; it has sda, sdb"):
        plot_run(write(known(), tmp_path / "run"), tmp_path / "out", devices=["sdz"])
    assert not (tmp_path / "out").exists()
