"""The example packages' test data (examples/algorithms/*/tests), made by nearline itself and
computed independently of the examples' own programs:

    python -m tests.algorithms.example_data              (re)write inputs and expected outputs
    python -m tests.algorithms.example_data copy NAME...  copy example packages here (docs)

A six-line synthetic NOAA-19 orbit, as nearline's netCDF granule (counts-histogram) and as
NOAA KLM GAC Level 1b (gac-quicklook); the expected outputs come from the counts nearline's
readers decode (pygac for the Level 1b), not from the examples' code.
"""

from __future__ import annotations

import csv
import io
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import netCDF4
import numpy as np

from nearline.swath import open_granule
from nearline.swath._synth import synthesize_orbit

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "algorithms"
START = datetime(2012, 12, 12, 13, 40, tzinfo=UTC)  # daylight: counts that vary
LINES = 6
CHANNEL_NAMES = ("1", "2", "3b", "4", "5")


def granule(file_format: str, folder: Path) -> Path:
    return synthesize_orbit(
        START, LINES, folder, platform="noaa19", seed=0, file_format=file_format
    )


def counts_of(path: Path) -> np.ndarray:
    """(channel, line, pixel) counts as nearline's reader for the file decodes them."""
    with open_granule(path) as opened:
        return opened.read(0, opened.n_lines).counts.astype(np.int64)


def histogram_outputs(path: Path, *, channel: str, bins: int, into: Path) -> None:
    """counts-histogram's expected histogram.nc and summary.csv for the one granule."""
    counts = counts_of(path)[CHANNEL_NAMES.index(channel)]
    edges = np.linspace(0, 1024, bins + 1)
    with netCDF4.Dataset(into / "histogram.nc", "w") as out:
        out.createDimension("granule", 1)
        out.createDimension("bin", bins)
        out.createDimension("edge", bins + 1)
        out.createVariable("edges", "f8", ("edge",))[:] = edges
        out.createVariable("histogram", "i8", ("granule", "bin"))[:] = [
            np.histogram(counts, edges)[0]
        ]
        out.createVariable("granule", str, ("granule",))[0] = path.name
    rows = [
        ["granule", "lines", f"mean_count_ch{channel}"],
        [path.name, counts.shape[0], f"{counts.mean():.3f}"],
    ]
    (into / "summary.csv").write_text(_csv(rows))


def quicklook_outputs(path: Path, *, channel: int, into: Path) -> None:
    """gac-quicklook's expected PGM and summary.csv for the one Level 1b granule."""
    counts = counts_of(path)
    image = (counts[channel - 1] >> 2).astype(np.uint8)
    header = f"P5\n{image.shape[1]} {image.shape[0]}\n255\n".encode()
    (into / "quicklook.pgm").write_bytes(header + image.tobytes())
    means = counts.reshape(5, -1).mean(axis=1)
    rows = [
        ["granule", "lines", *(f"mean_ch{i}" for i in range(1, 6))],
        [path.name, counts.shape[1], *(f"{m:.3f}" for m in means)],
    ]
    (into / "summary.csv").write_text(_csv(rows))


def _csv(rows: list[list]) -> str:
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(rows)
    return text.getvalue()


def write_all() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        for name, file_format in (("counts-histogram", "netcdf"), ("gac-quicklook", "l1b")):
            tests = EXAMPLES / name / "tests"
            made = granule(file_format, Path(scratch))
            shutil.copyfile(made, tests / made.name)
            (tests / "expected").mkdir(exist_ok=True)
            if name == "counts-histogram":
                histogram_outputs(tests / made.name, channel="2", bins=16, into=tests / "expected")
            else:
                quicklook_outputs(tests / made.name, channel=2, into=tests / "expected")
            print(f"wrote {tests}")


def main(argv: list[str]) -> None:
    if not argv:
        write_all()
    elif argv[0] == "copy" and len(argv) > 1:
        for name in argv[1:]:
            shutil.copytree(EXAMPLES / name, Path(name))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
