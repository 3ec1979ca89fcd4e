"""The S4PM-DM load study, through nearline's service: the GMAO scientists' three MODIS
reductions (MOD11_L2, MOD06_L2, MOD05_L2 to a GEOS-5 grid), uploaded as any user's
algorithms, run under a light load (each alone, then the three together) and a heavy load
(six of each at once).

The heavy load runs twice inside the same memory budget (a memory cgroup the service runs
in, so the host is never at risk): with nearline's admission control, and with it off, every
run started at once as in 2005. The day's size is chosen so that the heavy load declares
about twice the budget. The machine is sampled every second all along (``nearline serve
--record``) and the report's figures are drawn from the samples.

    python benchmarks/load.py [--granules N] [--instances 6] [--update-docs]

Needs root (or a delegated cgroup) for the budget.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.live_service import LiveService, nearline  # noqa: E402
from tests.service.conftest import zip_folder  # noqa: E402
from tests.service.memory_budget import Budget, BudgetedService, memory_budget  # noqa: E402

from _common import (  # noqa: E402
    command_line,
    epoch,
    machine_summary,
    markdown_table,
    now_stamp,
    replace_section,
)
from nearline.monitor import plot_run, read_recording  # noqa: E402
from nearline.units import format_size, parse_size  # noqa: E402

DOCS = ROOT / "docs" / "benchmarks.md"
FIGURES = ROOT / "docs" / "load"
BEGIN, END = "<!-- load:begin -->", "<!-- load:end -->"
DOCS_HEADER = "# Benchmarks"
USER = "gmao"
DATE = "2005-05-27"  # the heavy load's day in the report
# product -> the package that reduces it (examples/algorithms/), in the report's order
PACKAGES = {
    "MOD06_L2": "modis-cloud-geos5",
    "MOD11_L2": "modis-lst-geos5",
    "MOD05_L2": "modis-water-vapour-geos5",
}
ALGORITHMS = ROOT / "examples" / "algorithms"
PARAMETERS = {"grid": "geos5-0.5x0.625"}
GRANULES = "MOD06_L2=288,MOD11_L2=96,MOD05_L2=24"
CORES = len(os.sched_getaffinity(0))
MODES = {"admission": (), "all at once": ("--admission", "off")}  # mode -> `nearline serve` flags
SUMMARY_COLUMNS = [
    "load", "runs", "wall s", "ideal s", "throughput", "ok / killed / failed",
    "peak memory", "most at once", "disk MB/s",
]  # fmt: skip


@dataclass
class RunRecord:
    """One order's one run, as the service reported it."""

    phase: str
    product: str
    instance: int
    status: str
    message: str
    started: float | None
    finished: float | None
    cpu_seconds: float
    peak_memory: int
    bytes_read: int


@dataclass
class Phase:
    """One load: its runs, its span, and what the budget saw."""

    name: str
    runs: list[RunRecord]
    began: float
    ended: float
    peak: int
    record: Path  # the recording of the machine it ran in


def granule_counts(text: str) -> dict[str, int]:
    """``24`` (every product) or ``MOD06_L2=288,MOD11_L2=96,MOD05_L2=24``."""
    if "=" not in text:
        return dict.fromkeys(PACKAGES, int(text))
    counts = {name: int(n) for name, n in (part.split("=") for part in text.split(","))}
    if set(counts) != set(PACKAGES):
        raise SystemExit(f"--granules names each of {', '.join(PACKAGES)}: got {text}")
    return counts


def make_day(out: Path, counts: dict[str, int], data: Path, source: Path | None) -> None:
    """The day's granules of each product, ingested into the collection its package reads:
    the first ones of ``source``/PRODUCT (a day made earlier by `nearline synth modis`),
    linked, or synthesized here."""
    for product, granules in counts.items():
        folder = out / "granules" / product
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        made = sorted((source / product).glob(f"{product}.*.hdf")) if source else []
        if len(made) >= granules:
            for path in made[:granules]:
                (folder / path.name).hardlink_to(path)
        else:
            print(f"  synthesizing {granules} {product} granules ...", flush=True)
            nearline(
                "synth", "modis", "--product", product, "--date", DATE,
                "--granules", str(granules), "--out", str(folder), data=data,
            )  # fmt: skip
        collection = manifest(product)["inputs"][0]["collection"]
        nearline("ingest", str(folder), "--collection", collection, data=data)


def manifest(product: str) -> dict[str, Any]:
    return yaml.safe_load((ALGORITHMS / PACKAGES[product] / "algorithm.yaml").read_text())


def declared_memory(product: str) -> int:
    return parse_size(str(manifest(product)["resources"]["memory"]))


def deploy_all(live: LiveService) -> None:
    """Upload the three packages through the API, as the scientists would (the service
    builds the C one and runs each package's own tests)."""
    with live.client(USER) as client:
        for package in PACKAGES.values():
            response = client.post(
                "/processes",
                content=zip_folder(ALGORITHMS / package),
                headers={"Content-Type": "application/zip"},
                timeout=900,
            )
            if response.status_code != 201:
                raise SystemExit(f"deploying {package} failed: {response.text}")


def order(live: LiveService, process: str, product: str) -> str:
    collection = manifest(product)["inputs"][0]["collection"]
    with live.client(USER) as client:
        response = client.post(
            f"/processes/{process}/execution",
            json={"inputs": {"granules": {"collections": [collection]}, **PARAMETERS}},
            headers={"Prefer": "respond-async"},
        )
    if response.status_code != 201:
        raise SystemExit(f"ordering {process} failed: {response.text}")
    return response.json()["jobID"]


def run_phase(
    name: str,
    live: LiveService,
    budget: Budget | None,
    instances: dict[str, int],
    record: Path,
) -> Phase:
    """Submit ``instances`` orders of each product at once (in quick succession, as the
    report did), wait for all, and read back every run."""
    print(f"  {name}: {sum(instances.values())} runs ...", flush=True)
    if budget is not None:
        (budget.folder / "memory.max_usage_in_bytes").write_text("0")
    began = time.time()
    jobs = [
        (product, k, order(live, PACKAGES[product], product))
        for k in range(max(instances.values()))
        for product in PACKAGES
        if k < instances.get(product, 0)
    ]
    runs = [_record(name, product, k, live.wait_for_job(USER, job, timeout=7200))
            for product, k, job in jobs]  # fmt: skip
    ended = max([r.finished or began for r in runs] + [time.time()])
    peak = budget.read("memory.max_usage_in_bytes") if budget else max(r.peak_memory for r in runs)
    return Phase(name, runs, began, ended, peak, record)


def _record(phase: str, product: str, instance: int, status: dict[str, Any]) -> RunRecord:
    (run,) = status["nearline:runs"]
    usage = run["usage"] or {}
    return RunRecord(
        phase=phase,
        product=product,
        instance=instance,
        status=status["status"],
        message=run["message"] or status.get("message", ""),
        started=epoch(run["started"]) if run["started"] else None,
        finished=epoch(run["finished"]) if run["finished"] else None,
        cpu_seconds=usage.get("cpu_seconds", 0.0),
        peak_memory=usage.get("peak_memory", 0),
        bytes_read=usage.get("bytes_read", 0),
    )


def redeclare(live: LiveService, product: str, memory: int, out: Path) -> None:
    """Upload ``product``'s package again as version 1.1 declaring ``memory``: what the
    scientist declares once a run on the day's granules has shown its peak."""
    copy = out / "declared" / PACKAGES[product]
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(ALGORITHMS / PACKAGES[product], copy)
    text = manifest(product)
    text["version"] = "1.1"
    text["resources"]["memory"] = f"{-(-memory // 2**20)}MiB"
    (copy / "algorithm.yaml").write_text(yaml.safe_dump(text, sort_keys=False))
    with live.client(USER) as client:
        response = client.put(
            f"/processes/{PACKAGES[product]}",
            content=zip_folder(copy),
            headers={"Content-Type": "application/zip"},
            timeout=900,
        )
    if response.status_code not in (200, 201):
        raise SystemExit(f"re-declaring {PACKAGES[product]} failed: {response.text}")


def served(data: Path, record: Path, *extra: str, budget: Budget | None = None) -> LiveService:
    """`nearline serve` (inside ``budget`` if given), recording the machine into ``record``."""
    live = BudgetedService(data, budget=budget) if budget else LiveService(data)
    live.tokens[USER] = (data.parent / "token").read_text().strip()
    live.start("--cpus", str(CORES), "--record", str(record), *extra)
    return live


def measure(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The light load's single runs (which also measure each reduction's peak), then the
    rest of the light load and the heavy load with admission control, then the heavy load
    all at once: the last two inside the same budget."""
    data = out / "data"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    (out / "token").write_text(nearline("users", "add", USER, data=data).stdout.strip())
    make_day(out, granule_counts(args.granules), data, args.source)
    heavy = dict.fromkeys(PACKAGES, args.instances)
    figures: dict[str, Any] = {"phases": {}, "recordings": {}}
    record = out / "record-single"
    shutil.rmtree(record, ignore_errors=True)
    live = served(data, record)
    try:
        deploy_all(live)
        for product in PACKAGES:
            phase = run_phase(f"single {product}", live, None, {product: 1}, record)
            figures["phases"][phase.name] = phase
        declared = {}
        for product in PACKAGES:
            peak = figures["phases"][f"single {product}"].runs[0].peak_memory
            declared[product] = int(peak * args.headroom)
            redeclare(live, product, declared[product], out)
    finally:
        live.stop()
    figures["recordings"]["single"] = record
    figures["declared"] = declared
    figures["budget"] = int(sum(declared[p] * n for p, n in heavy.items()) / args.overload)
    for repeat in range(1, args.repeats + 1):  # alternating, so drift in the host hits both
        for mode, extra in MODES.items():
            record = out / f"record-{mode.replace(' ', '-')}-{repeat}"
            shutil.rmtree(record, ignore_errors=True)
            with memory_budget(figures["budget"]) as budget:
                live = served(data, record, *extra, budget=budget)
                try:
                    if mode == "admission" and repeat == 1:
                        light = dict.fromkeys(PACKAGES, 1)
                        phase = run_phase("comb 1", live, budget, light, record)
                        figures["phases"][phase.name] = phase
                    phase = run_phase(heavy_name(mode, repeat), live, budget, heavy, record)
                    figures["phases"][phase.name] = phase
                finally:
                    live.stop()
            if repeat == 1:
                figures["recordings"][mode] = record
    return figures


def heavy_name(mode: str, repeat: int) -> str:
    return f"heavy, {mode} #{repeat}"


# -- figures -----------------------------------------------------------------------------
def clock(epoch: float | None) -> str:
    return "—" if epoch is None else datetime.fromtimestamp(epoch, UTC).strftime("%H:%M:%S")


def day_fraction(epoch: float | None) -> str:
    if epoch is None:
        return "—"
    moment = datetime.fromtimestamp(epoch, UTC)
    seconds = moment.hour * 3600 + moment.minute * 60 + moment.second + moment.microsecond / 1e6
    return f"{seconds / 86400:.6f}"


def report_rows(phases: dict[str, Phase]) -> list[list[str]]:
    """The report's Tables 1 and 2: run type, algorithm, start and end (first and last end
    where several instances ran), as hour of day and fraction of day."""
    rows = []
    for phase in phases.values():
        for product in PACKAGES:
            runs = [r for r in phase.runs if r.product == product]
            if not runs:
                continue
            starts = [r.started for r in runs if r.started]
            ends = sorted(r.finished for r in runs if r.finished)
            start = min(starts) if starts else None
            if len(ends) > 1:
                end_clock = f"{clock(ends[0])}–{clock(ends[-1])}"
                end_fraction = f"{day_fraction(ends[0])}–{day_fraction(ends[-1])}"
            else:
                end_clock = clock(ends[0] if ends else None)
                end_fraction = day_fraction(ends[0] if ends else None)
            kind = phase.name.split(",")[0].replace("single", "Single").replace("comb", "Comb")
            if len(runs) > 1 and phase.name.startswith("heavy"):
                kind = f"Comb {len(runs)} runs ({phase.name.split(', ')[1]})"
            rows.append([kind, product, clock(start), end_clock, day_fraction(start), end_fraction])
    return rows


def most_at_once(runs: list[RunRecord]) -> int:
    """The most runs that were running at the same moment."""
    events = sorted(
        [(r.started, 1) for r in runs if r.started] + [(r.finished, -1) for r in runs if r.finished]
    )
    running = most = 0
    for _, step in events:  # at equal times an end (-1) sorts before a start
        running += step
        most = max(most, running)
    return most


def _killed(run: RunRecord) -> bool:
    """Stopped for memory: by its own limit, or by the kernel when the budget ran out."""
    return run.status != "successful" and ("killed" in run.message or "memory" in run.message)


def summary_rows(figures: dict[str, Any], cores: int) -> tuple[list[list[str]], dict[str, float]]:
    """Per load: wall time, against the ideal (single-run CPU seconds over the cores), runs
    that succeeded / were killed / failed, the budget's peak, the disks' rates."""
    phases: dict[str, Phase] = figures["phases"]
    single = {p: phases[f"single {p}"].runs[0].cpu_seconds for p in PACKAGES}
    rows, ratios = [], {}
    for phase in phases.values():
        counts = {p: sum(r.product == p for r in phase.runs) for p in PACKAGES}
        ideal = max(
            sum(single[p] * n for p, n in counts.items()) / cores,
            max(single[p] for p, n in counts.items() if n),
        )
        wall = phase.ended - phase.began
        ok = sum(r.status == "successful" for r in phase.runs)
        killed = sum(_killed(r) for r in phase.runs)
        failed = len(phase.runs) - ok - killed
        throughput = ideal / wall if ok == len(phase.runs) else ideal / wall * ok / len(phase.runs)
        ratios[phase.name] = throughput
        rows.append([
            phase.name, str(len(phase.runs)), f"{wall:.0f}", f"{ideal:.0f}",
            f"{throughput:.0%}", f"{ok} / {killed} / {failed}",
            f"{format_size(phase.peak)} of {format_size(figures['budget'])}",
            str(most_at_once(phase.runs)),
        ])  # fmt: skip
    return rows, ratios


def disk_rates(record: Path, began: float, ended: float) -> str:
    """Median and peak MB/s (read + write) over the load, per device that moved data."""
    samples = [s for s in read_recording(record).samples if began <= s.time <= ended + 1]
    shown = []
    for device in sorted({d for s in samples for d in s.disks}):
        rates = [s.disks[device].read_mb + s.disks[device].write_mb for s in samples
                 if device in s.disks]  # fmt: skip
        if rates and max(rates) >= 1:
            shown.append(f"{device} {np.median(rates):.0f} / {max(rates):.0f}")
    return ", ".join(shown) or "idle"


def granule_text(text: str) -> str:
    return ", ".join(f"{product} {n}" for product, n in granule_counts(text).items())


def lost_text(phases: dict[str, Phase]) -> str:
    """Why runs were lost, in the service's words, counted per load."""
    lines = []
    for phase in phases.values():
        said: dict[str, int] = {}
        for run in phase.runs:
            if run.status != "successful":
                said[run.message] = said.get(run.message, 0) + 1
        lines += [f"- {phase.name}, {n} runs: {message}" for message, n in said.items()]
    return "Runs lost, as their jobs said:\n\n" + "\n".join(lines) if lines else "No run was lost."


def figures_text(figures: dict[str, Any], out: Path, args: argparse.Namespace) -> str:
    cores = CORES
    phases: dict[str, Phase] = figures["phases"]
    rows, ratios = summary_rows(figures, cores)
    for row, phase in zip(rows, phases.values(), strict=True):
        row.append(disk_rates(phase.record, phase.began, phase.ended))
    pictures = []
    for mode, record in figures["recordings"].items():
        target = FIGURES / mode.replace(" ", "-")
        target.mkdir(parents=True, exist_ok=True)
        for path in plot_run(record, target):
            pictures.append(f"![{mode}: {path.stem}](load/{target.name}/{path.name})")
    return "\n\n".join(
        [
            "## Load: the GMAO reductions under a light and a heavy load (S4PM-DM, 2005)",
            f"`{command_line()}` on {now_stamp()}. Machine: {machine_summary(out)}. "
            f"Inputs: one synthetic day of {args.granules} granules of each product "
            f"(`nearline synth modis`), ingested and ordered whole; the three packages of "
            f"examples/algorithms/ uploaded through the API; grid {PARAMETERS['grid']}. The "
            f"service ran inside a memory budget of {format_size(figures['budget'])} (a memory "
            f"cgroup; the heavy load declares {args.overload:g}x that) with `--cpus {cores}`; "
            f"the heavy load ran {args.repeats} times each way, alternating, in a fresh server "
            "and budget each time: with nearline's admission control and with it off "
            "(`nearline serve --admission off`: every run starts at once, as in 2005).",
            "The single runs ran first, in a server without a budget, each package as uploaded "
            "(declaring enough for a full 288-granule day); each was then uploaded again as "
            f"version 1.1 declaring {args.headroom:g}x the peak its single run measured ("
            + ", ".join(f"{p} {format_size(m)}" for p, m in figures["declared"].items())
            + "), as a scientist declares once a run has shown what it takes, and the budget "
            f"set to 1/{args.overload:g} of what the heavy load declares.",
            "The report's form (Tables 1 and 2; times UTC):",
            markdown_table(
                ["Run type", "Algorithm", "Start", "End", "Start (day)", "End (day)"],
                report_rows(phases),
            ),
            "Each load: wall time from the first order to the last run's end; the ideal, every "
            "run's single-run CPU time over the cores (the physical limit); throughput, the ideal "
            "of the runs that succeeded over the wall time; runs succeeded / killed / failed; "
            "the budget's peak memory; the most runs running at once; disk MB/s, median / "
            "peak, per device:",
            markdown_table(
                SUMMARY_COLUMNS,
                rows,
            ),
            heavy_text(phases, ratios, args.repeats),
            lost_text(phases),
            "The monitor's figures (`nearline monitor plot`), admission control first:",
            "\n".join(pictures),
        ]
    )


def heavy_text(phases: dict[str, Phase], ratios: dict[str, float], repeats: int) -> str:
    """The heavy load's medians over the repeats, admission control against all at once."""
    said = {}
    for mode in MODES:
        runs = [phases[heavy_name(mode, k)] for k in range(1, repeats + 1)]
        said[mode] = (
            float(np.median([p.ended - p.began for p in runs])),
            [sum(r.status != "successful" for r in p.runs) for p in runs],
            float(np.median([ratios[p.name] for p in runs])),
        )
    (on_wall, on_lost, on_ratio), (off_wall, off_lost, _) = said.values()
    return (
        f"Heavy load, medians of {repeats}: admission control took {on_wall:.0f} s and lost "
        f"{' / '.join(map(str, on_lost))} runs; all at once took {off_wall:.0f} s and lost "
        f"{' / '.join(map(str, off_lost))}: admission control's wall time is "
        f"{on_wall / off_wall:.2f}x all at once's (target: at most 1), its throughput "
        f"{on_ratio:.0%} of the ideal (target 80%)."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--granules",
        default=GRANULES,
        help="granules in the day, per product (N, or PRODUCT=N,...); default: about 20 s of "
        "CPU per run, the cloud reduction a whole day",
    )
    parser.add_argument(
        "--source", type=Path, help="take the granules from SOURCE/PRODUCT/ (made earlier)"
    )
    parser.add_argument("--instances", type=int, default=6, help="heavy load: runs of each")
    parser.add_argument(
        "--headroom", type=float, default=1.1, help="declared memory over the measured peak"
    )
    parser.add_argument(
        "--overload",
        type=float,
        default=2.25,
        help="the heavy load's declared memory over the budget (about 2, as the issue asks; "
        "2.25 because the runs' peaks do not all coincide: at 2 the heavy load all at once "
        "peaked at 3.1 of 3.3 GiB and fitted)",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="heavy load: times each way (medians quoted)"
    )
    parser.add_argument("--out", default="bench-output/load")
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    figures = measure(args, out)
    text = figures_text(figures, out, args)
    print(text)
    if args.update_docs:
        replace_section(DOCS, BEGIN, END, text, DOCS_HEADER)
    return 0


if __name__ == "__main__":
    sys.exit(main())
