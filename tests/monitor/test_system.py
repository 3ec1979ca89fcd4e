"""The machine monitor on this machine: a real load it makes is seen in CPU and in sectors
written to the disk under the test's folder, about once a second, and what a killed recorder
sampled stays readable."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from nearline.errors import ConfigError, MonitorError
from nearline.monitor import (
    SystemSampler,
    device_of,
    is_virtual,
    read_recording,
)
from nearline.monitor._records import FILE
from nearline.monitor._system import Counters, take_sample

from .test_usage import wait_for

MiB = 2**20
WRITTEN = 100 * MiB
# burns 1.5 CPU seconds, then writes 100 MiB and fsyncs it
LOAD = f"""
import os, sys, time
while time.process_time() < 1.5:
    pass
block = os.urandom({MiB})
with open(sys.argv[1], "wb") as sink:
    for _ in range({WRITTEN // MiB}):
        sink.write(block)
    sink.flush()
    os.fsync(sink.fileno())
"""


def test_the_sampler_sees_a_real_load_on_cpu_and_on_the_disk_under_it(tmp_path: Path) -> None:
    device = device_of(tmp_path)
    with SystemSampler(tmp_path / "run", interval=1.0) as sampler:
        assert wait_for(lambda: sampler.taken >= 1)
        sampler.mark("start", "load #1")
        load = subprocess.Popen([sys.executable, "-c", LOAD, str(tmp_path / "data")])
        _, status, rusage = os.wait4(load.pid, 0)
        load.returncode = os.waitstatus_to_exitcode(status)
        assert load.returncode == 0
        sampler.mark("end", "load #1")
        after = sampler.taken
        assert wait_for(lambda: sampler.taken > after)  # a whole sample after the load
    recording = read_recording(tmp_path / "run")
    samples = recording.samples
    assert len(samples) == sampler.taken >= 3  # one before the load, one or more in, one after
    # about once a second: every interval but the shorter last one (taken at close)
    assert all(0.8 < s.seconds < 1.3 for s in samples[:-1])
    assert all(0.8 < b.time - a.time < 1.3 for a, b in itertools.pairwise(samples[:-1]))

    cores = psutil.cpu_count()
    busy = sum(s.cpu / 100 * cores * s.seconds for s in samples)
    load_cpu = rusage.ru_utime + rusage.ru_stime
    assert load_cpu >= 1.5
    assert busy >= 0.9 * load_cpu  # the whole machine was busy at least as long as the load
    assert max(s.cpu for s in samples) >= 0.9 * 100 / cores  # a second with a core all busy

    assert device in recording.devices
    assert not any(is_virtual(name) for name in recording.devices)
    written = sum(s.disks[device].write_sectors * s.seconds for s in samples)
    assert written >= 0.95 * WRITTEN / 512
    peak = max(samples, key=lambda s: s.disks[device].write_sectors).disks[device]
    assert peak.write_mb == pytest.approx(peak.write_sectors * 512 / 1e6)

    memory = psutil.virtual_memory().total
    assert all(s.memory_total == memory and 0 < s.memory_used < memory for s in samples)
    assert all(s.swap_used <= s.swap_total for s in samples)

    start, end = recording.marks
    assert (start.event, start.name, end.event, end.name) == ("start", "load #1", "end", "load #1")
    assert samples[0].time <= start.time < end.time <= samples[-1].time
    assert end.time - start.time >= 1.5
    lines = (tmp_path / "run" / FILE).read_text().splitlines()
    assert len(lines) == len(samples) + 2


def test_rates_are_the_counters_differences_over_the_seconds_between() -> None:
    before = Counters(monotonic=100.0, busy=10.0, iowait=2.0, total=40.0, disks={"sda": (0, 1000)})
    after = Counters(
        monotonic=102.0,
        busy=15.0,
        iowait=3.0,
        total=50.0,
        disks={"sda": (4000, 3000), "sdb": (7, 7)},  # sdb appeared: no rate yet
    )
    sample = take_sample(before, after)
    assert (sample.seconds, sample.cpu, sample.iowait) == (2.0, 50.0, 10.0)
    assert list(sample.disks) == ["sda"]
    rate = sample.disks["sda"]
    assert (rate.read_sectors, rate.write_sectors, rate.sectors) == (2000.0, 1000.0, 3000.0)
    assert (rate.read_mb, rate.write_mb) == (1.024, 0.512)


def test_a_killed_recorder_leaves_the_samples_it_took_readable(tmp_path: Path) -> None:
    nearline = Path(sys.executable).parent / "nearline"
    recorder = subprocess.Popen(
        [str(nearline), "monitor", "record", "run", "--interval", "0.2"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    path = tmp_path / "run" / FILE
    try:
        assert wait_for(lambda: path.exists() and path.read_text().count("\n") >= 5, seconds=30)
    finally:
        recorder.send_signal(signal.SIGKILL)
        _, stderr = recorder.communicate()
    assert recorder.returncode == -signal.SIGKILL, stderr
    recording = read_recording(tmp_path / "run")
    assert len(recording.samples) >= 5
    assert all(0.1 < s.seconds < 0.5 for s in recording.samples)
    assert all(0 <= s.cpu <= 100 for s in recording.samples)
    assert {s.memory_total for s in recording.samples} == {psutil.virtual_memory().total}
    # a line torn by a crash mid-write is left out; every whole line before it stands
    with path.open("a") as torn:
        torn.write('{"kind":"sample","time":17')
    assert read_recording(tmp_path / "run").samples == recording.samples


def test_a_bad_line_in_the_middle_is_named(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / FILE).write_text('{"kind":"mark","time":1,"event":"start","name":"a"}\nnot json\n{}\n')
    with pytest.raises(MonitorError, match=r"system\.ndjson:2: not a monitor record"):
        read_recording(run)


def test_a_path_on_no_block_device_and_a_bad_interval_are_refused(tmp_path: Path) -> None:
    with pytest.raises(MonitorError, match="/dev/shm is on no block device"):
        device_of("/dev/shm")
    with pytest.raises(ConfigError, match="interval: must be more than 0 seconds, got 0"):
        SystemSampler(tmp_path / "run", interval=0)
    assert [is_virtual(n) for n in ("loop3", "ram0", "zram0", "vda", "sda1", "nvme0n1")] == [
        True, True, True, False, False, False,
    ]  # fmt: skip


def test_only_the_named_devices_are_watched_and_an_unknown_one_is_refused(
    tmp_path: Path,
) -> None:
    device = device_of(tmp_path)
    with SystemSampler(tmp_path / "run", interval=0.1, devices=[device], fsync=False) as sampler:
        assert wait_for(lambda: sampler.taken >= 2)
    assert read_recording(tmp_path / "run").devices == [device]
    with pytest.raises(
        MonitorError, match=f"no block device sdz9 on this machine; it has .*{device}"
    ):
        SystemSampler(tmp_path / "other", devices=["sdz9"])
    assert not (tmp_path / "other").exists()


def test_marks_and_samples_of_two_recordings_add_up(tmp_path: Path) -> None:
    for name in ("first", "second"):
        with SystemSampler(tmp_path / "run", interval=0.1, fsync=False) as sampler:
            sampler.mark("start", name)
            time.sleep(0.25)
        with pytest.raises(MonitorError, match="is closed; mark while it samples"):
            sampler.mark("end", name)
    recording = read_recording(tmp_path / "run")
    assert [m.name for m in recording.marks] == ["first", "second"]
    assert len(recording.samples) >= 4
    times = [s.time for s in recording.samples]
    assert times == sorted(times)
