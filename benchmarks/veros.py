"""Veros through burst at a size where output matters: acc raised to a snapshot of >= 100 MB.

Three things, in one run, at the same resolution (examples/veros/acc.py with ``-s nx -s ny
-s nz``):

- Veros's own serial writer: ``Snapshot.write_output`` of a serial Veros process, timed
  record by record (what a model's ranks wait for when Veros writes itself);
- burst: ``mpiexec`` with compute ranks and one I/O rank through ``python -m
  nearline.burst.veros``; the compute ranks' pause per snapshot record (from the runner's
  report) and the time to solution (the whole job, until every file is on disk);
- the limit: the same job with ``--diskless-mode`` (Veros writes nothing).

    flock /tmp/nearline-bench.lock .venv/bin/python benchmarks/veros.py [--update-docs]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import psutil

sys.path.insert(0, str(Path(__file__).parent))
from _common import (
    MPI_ENV,
    command_line,
    fmt,
    machine_summary,
    markdown_table,
    now_stamp,
    replace_section,
)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "veros" / "acc.py"
DOCS = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- veros:begin -->", "<!-- veros:end -->"
DAY = 86400
BIN = Path(sys.executable).parent

SERIAL_WRITER = """
import json, sys, time
sys.argv = ["veros"]
from veros import runtime_settings
runtime_settings.setup_file = "acc.py"
sys.path.insert(0, ".")
import acc
sim = acc.ACCThroughBurst(override=json.loads(sys.argv_json))
sim.setup()
snapshot = sim.state.diagnostics["snapshot"]
seconds = []
for _ in range(RECORDS):
    began = time.perf_counter()
    snapshot.write_output(sim.state)  # Veros's own writer: masks, transposes, h5netcdf, gzip 1
    seconds.append(time.perf_counter() - began)
print("SECONDS " + json.dumps(seconds))
"""


def settings_args(settings: dict[str, float]) -> list[str]:
    return [arg for key, value in settings.items() for arg in ("-s", key, str(value))]


def veros_own_writer(folder: Path, settings: dict[str, float], records: int) -> list[float]:
    """Seconds per snapshot record written by Veros itself, serially."""
    code = SERIAL_WRITER.replace("sys.argv_json", repr(json.dumps(settings)))
    code = code.replace("RECORDS", str(records))
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"veros.py: Veros's serial writer failed:\n{done.stderr[-3000:]}")
    line = next(x for x in done.stdout.splitlines() if x.startswith("SECONDS "))
    return json.loads(line.split(" ", 1)[1])


def job(folder: Path, settings: dict, compute: tuple[int, int], *extra: str) -> tuple[float, dict]:
    """One mpiexec job through burst: (seconds to solution, the runner's report)."""
    ranks = compute[0] * compute[1] + 1
    command = [
        str(BIN / "mpiexec"), "-n", str(ranks), "--bind-to", "core", sys.executable, "-m",
        "nearline.burst.veros",
        "--io-ranks", "1", "--memory", "1GiB", "acc.py", "-n", str(compute[0]),
        str(compute[1]), *settings_args(settings), *extra,
    ]  # fmt: skip
    env = {**os.environ, **MPI_ENV}
    began = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - began
    if done.returncode:
        raise SystemExit(f"veros.py: the job failed:\n{done.stderr[-3000:]}")
    line = next(x for x in done.stdout.splitlines() if x.startswith("nearline.burst.veros: "))
    return seconds, json.loads(line.split(": ", 1)[1])


def samples(seconds: list[float]) -> str:
    """Every sample, in the order run (burst and output off alternate)."""
    return f"{len(seconds)}: " + ", ".join(f"{x:.1f}" for x in seconds)


def record_bytes(path: Path) -> int:
    """Bytes of one time record of a Veros file: its variables along Time, uncompressed."""
    with h5py.File(path) as file:
        return sum(
            v.dtype.itemsize * int(v.size // v.shape[0])
            for name, v in file.items()
            if v.shape and v.maxshape[0] is None and name != "Time"
        )


def under_flock() -> str:
    """The lock the benchmark ran under, as the command's prefix (benchmarks never overlap)."""
    parent = psutil.Process().parent()
    if parent is not None and parent.name() == "flock":
        return shlex.join(parent.cmdline()[: -len(sys.orig_argv)] or ["flock"]) + " "
    return ""


def fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy(EXAMPLE, folder / "acc.py")
    return folder


def main() -> int:
    ask = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ask.add_argument("--nx", type=int, default=120)
    ask.add_argument("--ny", type=int, default=168)
    ask.add_argument("--nz", type=int, default=40)
    ask.add_argument("--days", type=int, default=4, help="model days (2 steps each)")
    ask.add_argument("--compute", type=int, nargs=2, default=(1, 1), metavar=("NX", "NY"))
    ask.add_argument("--repeats", type=int, default=3)
    ask.add_argument("--update-docs", action="store_true")
    args = ask.parse_args()
    settings = {"nx": args.nx, "ny": args.ny, "nz": args.nz, "runlen": args.days * DAY}
    compute = tuple(args.compute)
    load = os.getloadavg()
    own, pauses, burst, off = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="veros-bench-", dir=ROOT) as scratch:
        base = Path(scratch)
        for repeat in range(args.repeats):
            print(f"veros.py: repeat {repeat + 1} of {args.repeats}", file=sys.stderr, flush=True)
            own += veros_own_writer(fresh(base / "serial"), settings, records=3)
            size = record_bytes(base / "serial" / "acc.snapshot.nc")
            seconds, report = job(fresh(base / "burst"), settings, compute)
            snapshot = report["pauses"]["snapshot"]
            pauses += snapshot[1:]  # the first is the file's header, at set-up
            burst.append(seconds)
            seconds, _ = job(fresh(base / "off"), settings, compute, "--diskless-mode")
            off.append(seconds)
        on_disk = (base / "burst" / "acc.snapshot.nc").stat().st_size
    load_after = os.getloadavg()
    med = statistics.median
    rows = [
        ["Veros's own serial writer, one snapshot record", f"{fmt(med(own), 3)} s", f"{len(own)}"],
        ["burst: compute ranks' pause per snapshot record", f"{fmt(med(pauses), 3)} s",
         f"{len(pauses)}"],
        ["burst: time to solution", f"{fmt(med(burst), 1)} s", samples(burst)],
        ["output off (--diskless-mode): time to solution", f"{fmt(med(off), 1)} s",
         samples(off)],
    ]  # fmt: skip
    ranks = compute[0] * compute[1]
    text = "\n".join(
        [
            "## Veros through burst: acc with a snapshot of over 100 MB",
            "",
            f"- Machine: {machine_summary(ROOT)}",
            f"- Date: {now_stamp()}; load average {load[0]:.1f} before, "
            f"{load_after[0]:.1f} after (1 min; the machine is shared)",
            f"- Command: `{under_flock()}{command_line()}`",
            f"- Setup: examples/veros/acc.py at nx, ny, nz = {args.nx}, {args.ny}, {args.nz}, "
            f"{args.days} model days (2 steps a day, every diagnostic written daily); a "
            f"snapshot record is {size / 1e6:.0f} MB of float64 "
            f"({on_disk / 1e6:.0f} MB on disk for all records, gzip 1 as Veros writes)",
            f"- Ranks: burst runs {ranks} compute rank{'s' * (ranks > 1)} and 1 I/O rank "
            f"(`mpiexec -n {ranks + 1} python -m nearline.burst.veros --io-ranks 1 acc.py "
            f"-n {compute[0]} {compute[1]}`); output off is the same job with "
            "`--diskless-mode`; Veros's own writer is a serial Veros process",
            "",
            markdown_table(["what", "median", "samples"], rows),
            "",
            f"- Pause: Veros's own write / burst's pause = **{med(own) / med(pauses):.1f}x** "
            "(target: at least 5x)",
            f"- Time to solution: burst / output off = **{med(burst) / med(off):.3f}x** "
            "(target: at most 1.05x)",
            "",
            "Output off is a fair baseline: with `--diskless-mode` Veros still calls every "
            "diagnostic's `diagnose` and `output` at the same steps (the averages, energy and "
            "overturning are summed, divided and reset as when writing); only "
            "`initialize_output`, `write_output` and the restart file return at once "
            "(veros/diagnostics/api.py, base.py, restart.py). Veros's own timers agree: its "
            "main loop and its diagnostics take the same time in both jobs; the difference is "
            "burst's set-up (each file created before the first step) and the last records "
            "and the restart file written after the last step.",
        ]
    )
    print(text)
    if args.update_docs:
        replace_section(DOCS, BEGIN, END, text, "# Benchmarks\n")
        print(f"veros.py: wrote {DOCS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
