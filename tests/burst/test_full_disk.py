"""A full output disk, on a real 6 MiB tmpfs: said plainly under on_full="fail"; waited out
with nothing lost under on_full="wait", while `nearline migrate --watch` frees the disk."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from nearline import burst
from nearline.errors import BurstError
from nearline.layout import hds_path

from .expected import expected_array

SHAPE = (256, 512)  # 1 MiB of float64 a step
BIN = Path(sys.executable).parent


@pytest.fixture
def small_disk(tmp_path):
    """A 6 MiB tmpfs of its own (root only: CI runs as root)."""
    assert os.geteuid() == 0, "mounting a small tmpfs needs root (CI runs the tests as root)"
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(disk)], check=True)
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


def write_steps(root: Path, steps: int) -> None:
    """A model writing a 1 MiB step at a time (on_full="fail", the default)."""
    with burst.open(root, memory="64MiB") as io:
        for step in range(steps):
            io.write("big", "t", expected_array("t", step, SHAPE, "f8"), step=step)
            io.flush()
        io.wait()


def test_a_full_disk_fails_the_file_naming_free_and_needed(small_disk):
    root = small_disk / "out"
    with pytest.raises(BurstError) as raised:
        write_steps(root, 8)
    said = str(raised.value)
    assert "no space left on the device holding" in said
    assert "file 'big' step " in said
    assert " free, " in said
    assert "needs 1.2 MiB" in said  # the 1 MiB block and room for the format's metadata
    assert "on_full='wait'" in said  # the fix
    published = sorted(root.rglob("big.*.nc"))
    assert 0 < len(published) < 8
    for path in published:  # what was published is whole
        step = int(path.name.split(".")[1])
        with xr.open_dataset(path) as ds:
            np.testing.assert_array_equal(ds["t"].values, expected_array("t", step, SHAPE, "f8"))
    assert not [p for p in root.rglob("*") if ".partial" in p.name]


def test_a_full_disk_is_waited_out_while_the_migrator_frees_it(small_disk, tmp_path):
    """Twelve 1 MiB steps through a 6 MiB disk: the servers stall, say so in stats(), and
    go on as `nearline migrate --watch` moves closed steps to the archive; every step
    arrives whole."""
    root, archive, restored = small_disk / "out", tmp_path / "archive", tmp_path / "restored"
    root.mkdir()
    migrator = subprocess.Popen(
        [str(BIN / "nearline"), "migrate", str(root), str(archive), "--watch", "--interval",
         "0.3"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    stalls = []
    try:
        with burst.open(root, memory="64MiB", on_full="wait", full_timeout=60) as io:
            for step in range(12):
                io.write("big", "t", expected_array("t", step, SHAPE, "f8"), step=step)
                io.flush()
                stalls.append(io.stats().waiting_for_space)
            io.wait()
            stats = io.stats()
        last = hds_path(root, step=11, file="big", rank=0, ext="nc")
        deadline = time.monotonic() + 60
        while last.exists() and time.monotonic() < deadline:  # the last step migrated too
            time.sleep(0.2)
    finally:
        migrator.terminate()
        migrator.communicate(timeout=30)
    assert stats.seconds_stalled > 0  # it did wait for room
    assert stats.waiting_for_space == 0  # and is not waiting any more
    done = subprocess.run(
        [str(BIN / "nearline"), "restore", str(archive), str(restored)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for step in range(12):
        path = hds_path(restored, step=step, file="big", rank=0, ext="nc")
        with xr.open_dataset(path) as ds:
            np.testing.assert_array_equal(ds["t"].values, expected_array("t", step, SHAPE, "f8"))
