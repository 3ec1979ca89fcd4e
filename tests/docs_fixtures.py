"""Small real inputs for the docs' examples, made by nearline itself
(``<!-- docs: before python -m tests.docs_fixtures ... -->`` on a page).

    python -m tests.docs_fixtures burst-tree OUT          4 steps of burst output, closed sets
    python -m tests.docs_fixtures daily-copies DAY.nc FOLDER YYYY-MM-DD..YYYY-MM-DD
                                                          one daily composite, re-dated per day
    python -m tests.docs_fixtures cf-swath OUT.nc         a small CF swath: 20 lines, 60 pixels
    python -m tests.docs_fixtures real-files FOLDER       the real product files copied into
                                                          the project (tests/data/real)
"""

from __future__ import annotations

import shutil
import sys
from datetime import date, timedelta
from pathlib import Path

import netCDF4
import numpy as np

from nearline import burst


def burst_tree(out: Path) -> None:
    """Steps 0-3: an assembled ``dynamics`` file and two ranks' ``physics`` files each."""
    t = np.zeros((4, 18, 36), np.float32)
    with burst.open(out, memory="64MiB", sink="netcdf") as io:
        for step in range(4):
            t += 0.5
            io.write("dynamics", "t", t, step=step, start=(0, 0, 0), shape=t.shape)
            io.write("physics", "rain", t[0], step=step)
            io.flush()


def daily_copies(day: Path, folder: Path, days: str) -> None:
    """``day`` copied as FOLDER/YYYY-MM-DD.nc for each day of ``first..last``."""
    first, last = (date.fromisoformat(text) for text in days.split(".."))
    folder.mkdir(parents=True, exist_ok=True)
    current = first
    while current <= last:
        copy = folder / f"{current.isoformat()}.nc"
        shutil.copyfile(day, copy)
        with netCDF4.Dataset(copy, "a") as dataset:
            stamp = current.isoformat()
            dataset.setncatts({"time_coverage_start": stamp, "time_coverage_end": stamp})
        current += timedelta(days=1)


def cf_swath(out: Path) -> None:
    """A CF-1.8 swath of 20 lines of 60 pixels over the Atlantic, a time per line (0.5 s)."""
    line, pixel = np.mgrid[0:20, 0:60].astype(np.float32)
    with netCDF4.Dataset(out, "w") as dataset:
        dataset.setncatts({"Conventions": "CF-1.8 ACDD-1.3", "short_name": "DEMO_L1",
                           "platform": "Earth Observation Satellites > METOP > METOP-B",
                           "instrument": "AVHRR"})  # fmt: skip
        dataset.createDimension("y", 20)
        dataset.createDimension("x", 60)
        for name, units, values in (("lat", "degrees_north", 30 + 0.04 * line),
                                    ("lon", "degrees_east", -40 + 0.05 * pixel)):  # fmt: skip
            dataset.createVariable(name, "f4", ("y", "x")).setncatts({"units": units})
            dataset[name][:] = values
        time = dataset.createVariable("time", "f8", ("y",))
        time.setncatts({"standard_name": "time", "units": "seconds since 2012-12-12 10:00:00"})
        time[:] = 0.5 * np.arange(20)


def real_files(folder: Path) -> None:
    """The real product files of tests/data/real (MOD04_L2, MOD09GA, GLM L2), copied."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in (Path(__file__).parent / "data" / "real").iterdir():
        shutil.copyfile(path, folder / path.name)


def main(argv: list[str]) -> None:
    if argv[:1] == ["burst-tree"] and len(argv) == 2:
        burst_tree(Path(argv[1]))
    elif argv[:1] == ["daily-copies"] and len(argv) == 4:
        daily_copies(Path(argv[1]), Path(argv[2]), argv[3])
    elif argv[:1] == ["cf-swath"] and len(argv) == 2:
        cf_swath(Path(argv[1]))
    elif argv[:1] == ["real-files"] and len(argv) == 2:
        real_files(Path(argv[1]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
