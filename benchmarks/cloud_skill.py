"""Benchmark: the cloud mask's skill and the composite's NDVI against a synthetic day's truth.

In one run:

1. a synthetic day with its truth (``nearline synth avhrr --truth``: the cloud fraction and
   surface NDVI the generator drew at every pixel);
2. the day composited to igh-8km (``nearline.composite.run``);
3. every pixel through the chain again, its cloud bits scored against the truth per surface
   (hit rate on pixels with true cloud fraction > 0.5 under cloud of optical depth >= 0.3,
   false alarms on those < 0.05; thinner cloud's flagged share apart), and the composite's
   NDVI against the true NDVI over clear land (``nearline.composite._skill``);
4. the cost of the cloud-mask stage alone on one block, per pixel.

The targets (issue 22): by day over land and over sea hit rate >= 95 % and false alarms
<= 5 %; NDVI RMSE over clear land <= 0.02. Exit status 1 if one is missed.

``--satellite metopa --snow`` scores a satellite that sends channel 3a (1.6 um) by day, on
a day with snow, into a section of its own in benchmarks.md.

    .venv/bin/python benchmarks/cloud_skill.py [--orbits 14] [--lines 13000] [--update-docs]
        [--satellite noaa19|noaa17|metopa] [--snow]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import command_line, machine_summary, markdown_table, now_stamp, replace_section

PROJECT = Path(__file__).resolve().parents[1]
DOCS = PROJECT / "docs" / "benchmarks.md"
SATELLITES = {
    "noaa19": "NOAA-19, channel 3b day and night",
    "noaa17": "NOAA-17 (on NOAA-19's orbit), channel 3a by day and 3b by night",
    "metopa": "MetOp-A, channel 3a by day and 3b by night",
}
DOCS_HEADER = "# Benchmarks\n"
DATE = "2012-12-12"
BLOCK_LINES = 1024  # the composite's block


def progress(message: str) -> None:
    print(f"[cloud skill bench] {message}", file=sys.stderr, flush=True)


def mask_seconds_per_pixel(granule: Path, repeats: int) -> float:
    """Median time of the cloud-mask stage (``cloud_tests``) on one block, per pixel."""
    from nearline.composite._ancillary import Ancillary
    from nearline.composite._calibration import line_calibration
    from nearline.composite._cloudmask import cloud_tests
    from nearline.composite._observe import observe
    from nearline.swath import interpolate_tiepoints, open_granule

    with open_granule(granule) as opened:
        cal = line_calibration(opened.read_telemetry(), opened.platform)
        block = opened.read(4096, 4096 + BLOCK_LINES)
    obs = observe(block, cal.slice(4096, 4096 + BLOCK_LINES), Ancillary.load())
    land = Ancillary.load().is_land(obs.lon, obs.lat)
    channels = (obs.refl1, obs.refl2, obs.bt3, obs.bt4, obs.bt5)
    sat = interpolate_tiepoints(block.tie_sat_zenith)
    times = []
    for _ in range(repeats + 1):  # the first compiles or loads the cache
        began = time.perf_counter()
        cloud_tests(channels, obs.sun_zenith, land, sat_zenith=sat,
                    rel_azimuth=obs.rel_azimuth, first_line=block.first_line)  # fmt: skip
        times.append(time.perf_counter() - began)
    return float(np.median(times[1:])) / obs.bt4.size


def markers(args: argparse.Namespace) -> tuple[str, str]:
    """The section of benchmarks.md this run writes: NOAA-19 without snow keeps the first."""
    name = "cloud-skill"
    if args.satellite != "noaa19" or args.snow:
        name += f"-{args.satellite}" + ("-snow" if args.snow else "")
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def report(args: argparse.Namespace, skill, seconds: dict[str, float], per_pixel: float) -> str:
    from nearline.composite._skill import (
        CLEAR_BELOW,
        CLOUDY_ABOVE,
        SKILL_HEADERS,
        TARGETS,
        THIN_BELOW,
        skill_table,
    )

    ndvi = skill.ndvi
    title = "## Cloud mask skill"
    if args.satellite != "noaa19" or args.snow:
        title += f": {SATELLITES[args.satellite].split(',')[0]}" + (", snow" if args.snow else "")
    options = f" --satellite {args.satellite}" if args.satellite != "noaa19" else ""
    options += " --snow" if args.snow else ""
    lines = [
        title,
        "",
        f"`{command_line()}` — {now_stamp()}",
        "",
        f"Machine: {machine_summary(Path(args.out))}.",
        "",
        f"Input: `nearline synth avhrr --date {DATE} --orbits {args.orbits} --lines "
        f"{args.lines}{options} --truth` ({SATELLITES[args.satellite]}), composited to igh-8km. "
        f"Cloudy: true cloud fraction > {CLOUDY_ABOVE} under cloud of optical depth >= "
        f"{THIN_BELOW}; thin: the same under thinner cloud (no target); clear: fraction < "
        f"{CLEAR_BELOW}; the {skill.mask.partly_cloudy:,} pixels in between "
        f"({skill.mask.partly_cloudy / skill.mask.pixels:.1%}) are not scored. Day: solar "
        "zenith < 85 degrees; sea glint: by day within 40 degrees of the mirror direction.",
        "",
        markdown_table(SKILL_HEADERS, skill_table(skill.mask)),
        "",
        f"Targets by day over land and sea (hit >= {TARGETS['hit']:.0%}, false alarms <= "
        f"{TARGETS['false_alarm']:.0%}): **{'met' if skill.mask.meets_targets() else 'MISSED'}**.",
        "",
        f"Composite NDVI over clear land (cells where the chain registered a truly clear "
        f"daytime land pixel): RMSE **{ndvi.rmse:.4f}** (bias {ndvi.bias:+.4f}, target <= "
        f"{TARGETS['ndvi_rmse']}) over the {ndvi.cells - ndvi.cloudy_cells:,} cells the "
        f"composite calls clear; {ndvi.cloudy_cells:,} of {ndvi.cells:,} clear-land cells "
        f"were left cloudy (every clear pixel there a false alarm); RMSE counting them "
        f"{ndvi.rmse_all:.4f}.",
        "",
        f"Cloud-mask stage alone (`cloudmask.cloud_tests` on one {BLOCK_LINES}-line block): "
        f"{per_pixel * 1e9:.0f} ns a pixel. Synthesis {seconds['synth']:.0f} s, composite "
        f"{seconds['composite']:.0f} s, scoring {seconds['score']:.0f} s.",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orbits", type=int, default=14)
    parser.add_argument("--lines", type=int, default=13000)
    parser.add_argument("--repeats", type=int, default=5, help="timings of the mask stage")
    parser.add_argument("--satellite", default="noaa19", choices=list(SATELLITES))
    parser.add_argument("--snow", action="store_true", help="snow on the land")
    parser.add_argument("--out", default=str(PROJECT / "bench-output" / "cloud-skill"))
    parser.add_argument("--update-docs", action="store_true", help=f"rewrite docs/{DOCS.name}")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    import shutil

    from nearline.composite import run
    from nearline.composite._skill import TARGETS, score_day
    from nearline.swath import synthesize_day

    args = parse_args(argv)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    seconds = {}
    progress(f"synthesizing {args.orbits} orbits of {args.lines} lines with their truth")
    began = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # pyorbital's legacy notice
        paths = synthesize_day(DATE, args.orbits, out / "day", lines_per_orbit=args.lines,
                               truth=True, satellite=args.satellite, snow=args.snow)  # fmt: skip
    seconds["synth"] = time.perf_counter() - began
    progress("compositing")
    began = time.perf_counter()
    result = run([out / "day"], out=out / "ndvi.nc", grid="igh-8km")
    seconds["composite"] = time.perf_counter() - began
    progress("scoring every pixel")
    began = time.perf_counter()
    skill = score_day(result.granules, composite=result.out)
    seconds["score"] = time.perf_counter() - began
    per_pixel = mask_seconds_per_pixel(paths[0], args.repeats)
    text = report(args, skill, seconds, per_pixel)
    print(text)
    if args.update_docs:
        replace_section(DOCS, *markers(args), text, DOCS_HEADER)
    met = skill.mask.meets_targets() and skill.ndvi.rmse <= TARGETS["ndvi_rmse"]
    shutil.rmtree(out, ignore_errors=True)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
