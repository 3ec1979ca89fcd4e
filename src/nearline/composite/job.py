"""The built-in Pathfinder algorithm's program: ``python -m nearline.composite.job``.

It follows the runtime contract every deployed algorithm follows (docs/algorithms.md): read
the ``job.json`` that ``NEARLINE_JOB`` names, composite the staged ``granules`` with
:func:`nearline.composite.run`, and leave the composite (netCDF) and its NDVI quicklook (PNG)
in the outputs folder. ``NEARLINE_CPUS`` and ``NEARLINE_MEMORY`` (what the run is given) size
the workers and the bands' memory.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nearline.composite._driver import CompositeResult, run
from nearline.errors import NearlineError

log = logging.getLogger("nearline.composite.job")
INPUT = "granules"
DEFAULTS = {"grid": "igh-8km", "reducer": "max-ndvi", "period": "day", "on_error": "fail"}
MIN_BAND_MEMORY = 256 * 1024**2


def run_job(job: Mapping[str, Any], *, env: Mapping[str, str] | None = None) -> CompositeResult:
    """Composite the job's granules into its outputs folder; return what ``run`` made."""
    env = os.environ if env is None else env
    parameters = {**DEFAULTS, **job.get("parameters", {})}
    granules = [entry["path"] for entry in job["inputs"].get(INPUT, [])]
    if not granules:
        raise NearlineError(f"job.json has no {INPUT!r} input: nothing to composite")
    outputs = Path(job["outputs"])
    name = output_name(job["inputs"][INPUT], grid=parameters["grid"], period=parameters["period"])
    workers = max(1, int(float(env.get("NEARLINE_CPUS", "1"))))
    memory = int(env.get("NEARLINE_MEMORY", str(3 * 1024**3)))
    result = run(
        granules,
        out=outputs / f"{name}.nc",
        png=outputs / f"{name}.png",
        grid=parameters["grid"],
        reducer=parameters["reducer"],
        period=parameters["period"],
        on_error=parameters["on_error"],
        workers=workers,
        memory=max(MIN_BAND_MEMORY, memory // 3),  # the bands' share; the rest is the chain's
        progress=_progress,
    )
    assert result is not None  # no MPI here: this process is the whole run
    for path, reason in result.skipped:
        log.warning("skipped %s: %s", Path(path).name, reason)
    return result


def output_name(entries: Sequence[Mapping[str, Any]], *, grid: str, period: str) -> str:
    """``pathfinder-<grid>-<period>-<first day>`` from the items' start times, when known."""
    days = sorted(
        str(stamp)[:10] for entry in entries for stamp in [_start(entry.get("item") or {})] if stamp
    )
    return "-".join(["pathfinder", grid, period, *days[:1]])


def _start(item: Mapping[str, Any]) -> str | None:
    properties = item.get("properties") or {}
    return properties.get("start_datetime") or properties.get("datetime")


def _progress(phase: str, done: int, total: int) -> None:
    if done == total or done % max(1, total // 10) == 0:
        log.info("%s %d/%d", phase, done, total)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job ``NEARLINE_JOB`` names (or the job file given as the one argument)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    args = list(sys.argv[1:] if argv is None else argv)
    path = args[0] if args else os.environ.get("NEARLINE_JOB")
    if not path:
        print("nearline.composite.job: set NEARLINE_JOB to the job.json to run", file=sys.stderr)
        return 2
    try:
        result = run_job(json.loads(Path(path).read_text()))
    except (NearlineError, OSError, KeyError, ValueError) as error:
        print(f"nearline.composite.job: error: {error}", file=sys.stderr)
        return 1
    log.info(
        "composited %d granules (%d skipped) into %s in %.1f s",
        len(result.granules), len(result.skipped), result.out.name, result.wall_seconds,
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
