"""The seed's set-up: a model writes steps through burst while the migrator empties the tree."""

from __future__ import annotations

import functools
import os
import threading

import numpy as np
import xarray as xr

from nearline import burst
from nearline.layout import Migrator, Phase, restore


def count_files(root) -> int:
    """netCDF files below ``root``; os.walk skips folders the migrator removes meanwhile."""
    return sum(name.endswith(".nc") for _, _, names in os.walk(root) for name in names)


def test_migrate_watch_keeps_the_source_bounded_while_burst_writes(tmp_path):
    """The model computes each step for as long as the watcher needs to archive the step
    before (at most 60 s): the source then never holds more than three steps' files, which
    it would not if the watcher only caught up after the run."""
    source, archive, back = tmp_path / "run", tmp_path / "archive", tmp_path / "back"
    source.mkdir()
    steps = 12  # two file groups a step: 24 files in all
    on_disk: list[int] = []
    archived: set[tuple[int, str]] = set()
    caught_up = threading.Condition()
    model_done = threading.Event()

    def sample(event) -> None:
        on_disk.append(count_files(source))
        if event.phase is Phase.DONE:
            with caught_up:
                archived.add((event.step, event.file))
                caught_up.notify_all()

    def behind_by_one(step: int) -> bool:
        return all((done, file) in archived for done in range(step) for file in ("dyn", "sfc"))

    migrator = Migrator(source, archive, progress=sample)
    watcher = threading.Thread(
        target=migrator.watch, kwargs={"interval": 0.05, "until": model_done.is_set}
    )
    watcher.start()
    try:
        with burst.open(source, memory="4MiB") as io:
            for step in range(steps):
                io.write("dyn", "u", np.full((64, 64), step, "f4"), step=step)
                io.write("sfc", "t", np.full(32, step, "f8"), step=step, start=(0,), shape=(32,))
                io.flush()
                io.wait()
                on_disk.append(count_files(source))
                with caught_up:  # the model computes its next step meanwhile
                    archived_before = functools.partial(behind_by_one, step)
                    assert caught_up.wait_for(archived_before, timeout=60), archived
    finally:
        model_done.set()
        watcher.join(timeout=120)
        migrator.close()
    assert not watcher.is_alive()
    assert count_files(source) == 0  # everything migrated, nothing left behind
    assert len(archived) == 2 * steps
    assert max(on_disk) <= 6  # never more than three steps' files of the run's 24 at once
    restore(archive, back)
    for step in range(steps):
        with xr.open_dataset(back / f"{step:06d}" / "dyn" / f"dyn.{step:06d}.00000.nc") as ds:
            assert (ds["u"].values == step).all()
        with xr.open_dataset(back / f"{step:06d}" / f"sfc.{step:06d}.nc") as ds:
            assert (ds["t"].values == step).all()
