"""The report of benchmarks/layout.py: measured rows, the tables, the targets and the notes."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from _common import (
    MB,
    command_line,
    filesystem,
    fmt,
    machine_summary,
    markdown_table,
    median,
    now_stamp,
)

TREES = ("flat", "HDS")
EMPTY = "empty"  # the same batch into a new, empty folder: how fast the machine is just then
RAW, MIGRATOR = "copy each file + fsync each copy", "nearline Migrator"


@dataclass
class Row:
    """Median seconds per measurement and tree, with ``present`` files in each tree."""

    present: int
    values: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, measure: str, times: dict[str, list[float]], per: int = 1) -> None:
        self.values[measure] = {name: (median(t) or 0.0) / per for name, t in times.items()}


def ratio(a: float | None, b: float | None) -> str:
    return fmt(a / b if a and b else None, 2, "×")


def tree_table(rows: Sequence[Row], measures: Sequence[str], unit: str, factor: float) -> str:
    """One row per checkpoint: flat, HDS and flat ÷ HDS for each measure; for "create" also
    the same batch into a new empty folder, and each cost relative to the first checkpoint."""
    headers = ["files present"]
    for m in measures:
        headers += [f"flat {m} ({unit})", f"HDS {m} ({unit})", f"flat ÷ HDS {m}"]
    growth = measures == ["create"]
    extra = ["new empty folder (µs/file)", "flat ÷ first row", "HDS ÷ first row", "HDS ÷ empty"]
    headers += extra if growth else []
    body = []
    for row in rows:
        cells = [f"{row.present:,}"]
        for m in measures:
            flat, hds = (row.values.get(m, {}).get(name) for name in TREES)
            cells += [fmt(flat and flat * factor), fmt(hds and hds * factor), ratio(flat, hds)]
        now, first = row.values["create"], rows[0].values["create"]
        relative = [ratio(now[n], first[n]) for n in TREES] + [ratio(now["HDS"], now[EMPTY])]
        cells += [fmt(now[EMPTY] * factor), *relative] if growth else []
        body.append(cells)
    return markdown_table(headers, body)


def targets(rows: Sequence[Row], speed: dict[str, float]) -> str:
    """The issue's three targets, measured."""
    first, last = rows[0], rows[-1]
    ref = max((r for r in rows if r.present <= 100_000), key=lambda r: r.present)
    lines = []
    for label, per in (
        ("", lambda c: c["HDS"]),
        (" (÷ new empty folder)", lambda c: c["HDS"] / c[EMPTY]),
    ):
        growth = per(last.values["create"]) / per(first.values["create"])
        label = f"HDS per-file cost{label} at {last.present:,} ÷ at {first.present:,} ≤ 1.2×"
        lines.append((label, ratio(growth, 1), growth <= 1.2))
    for state in ("warm", "cold"):
        if f"find {state}" in ref.values:
            v = ref.values[f"find {state}"]
            label = f"find+open one step: flat ÷ HDS ≥ 10× at {ref.present:,} ({state})"
            lines.append((label, ratio(v["flat"], v["HDS"]), v["flat"] >= 10 * v["HDS"]))
    for name, raw in speed.items():
        if name != MIGRATOR:
            label, ours = f"Migrator ≥ 70 % of the throughput of: {name}", speed[MIGRATOR]
            lines.append((label, fmt(100 * ours / raw, 1, " %"), ours >= 0.7 * raw))
    body = [[label, value, "yes" if met else "**no**"] for label, value, met in lines]
    return markdown_table(["target", "measured", "met"], body)


def report(
    args: argparse.Namespace, rows: list[Row], fill: dict, migration: tuple, cold: bool
) -> str:
    """The markdown section: machine, command, targets, the four tables and what they mean."""
    times, nbytes, split = migration
    speed = {name: nbytes / (median(t) or 1.0) for name, t in times.items()}
    migrated = [
        [name, f"{fmt(median(t))} [{fmt(min(t))}–{fmt(max(t))}]", fmt(speed[name] / MB, 0)]
        for name, t in times.items()
    ]
    fstype, _ = filesystem(Path(args.out))
    no_journal = "" if Path("/proc/fs/jbd2").exists() else " (as here: no /proc/fs/jbd2)"
    cache = (
        "dropped (sync; echo 3 > /proc/sys/vm/drop_caches) before each cold sample and each "
        "migration run; warm rows follow an untimed pass over the same steps/files"
        if cold
        else "**could not be dropped here** (or --no-drop-caches): no cold rows; before each "
        "migration run every source file was read once, so both sides read a warm cache"
    )
    notes = [
        f"- Scenario: {args.ranks} ranks × {args.groups} file groups, one {args.file_bytes:,}-byte "
        "file per rank and group per step (os.open, os.write, os.close; **no fsync**), both "
        "trees filled step by step, interleaved. Flat: one folder, the paper's names "
        "`file1.00.0000`. "
        f"HDS: `Layout.for_run(ranks={args.ranks})` paths, a step's folders made in one pass. "
        f"Writing all {rows[-1].present:,} files took flat {fill['flat']:.1f} s, HDS "
        f"{fill['HDS']:.1f} s (flat ÷ HDS {ratio(fill['flat'], fill['HDS'])}).",
        f"- (1) One more step ({args.ranks * args.groups:,} files, HDS: with its mkdirs) created, "
        f"timed, then moved out of the tree (renamed) and `sync`ed untimed; median of "
        f"{args.repeats} after a warm-up; paths computed before timing. Flat and HDS alternate "
        "in every measurement; here with a third run, the same batch into a new empty folder, "
        "whose cost shows how fast the machine was at that moment (HDS ÷ empty removes drift). "
        "Nothing is deleted before the end of the run: ext4 without a "
        f"journal{no_journal} makes each create skip the inodes freed in the last 1–6 minutes "
        "(`recently_deleted`), which made creates after deletes up to 50× slower here; so a "
        "run started within minutes of deleting many files (e.g. another run) creates slower.",
        "- (2) List the folder(s), keep one step's names (flat: a regex on every name), open and "
        f"close each file; a random step each time; median of {args.repeats} warm, "
        f"{args.cold_repeats} cold. (3) os.stat of a random file: median over "
        f"{args.stat_samples:,} files warm, {args.cold_repeats} cold.",
        f"- (4) 2 closed steps × {args.ranks} ranks × {nbytes // (2 * args.ranks):,} bytes "
        f"({nbytes / MB:,.0f} MB, marked with `mark_complete`, hard-linked into a fresh source "
        "root for each run): `Migrator(source, archive, bundle='tar', delete_source=True)"
        ".run_once()` (tar with SHA-256, fsync, read-back verify, source removal: here of links, "
        "journal) against two raw copies to another folder: "
        "`shutil.copyfile` of every file then an fsync of every copy and the folder (the "
        "issue's baseline), and every file appended to one file (8 MiB copyfileobj) then one "
        f"fsync; median [min–max] of {args.migrate_repeats} after a warm-up, interleaved.",
        "- The Migrator's time by stage (median s; from its progress events): "
        + ", ".join(f"{stage} {seconds:.2f}" for stage, seconds in split.items())
        + ".",
        f"- Caches: {cache}. Output on {fstype}. MB = 10⁶ bytes.",
    ]

    def table(prefix: str, unit: str, factor: float) -> str:
        return tree_table(rows, [m for m in rows[0].values if m.startswith(prefix)], unit, factor)

    title = "## layout: one flat folder against HDS (Werne, Adams & Sanders, ARSC 193)"
    machine = f"- Machine: {machine_summary(Path(args.out))}\n- Date: {now_stamp()}"
    sections = [
        f"{title}\n\n{machine}\n- Command: `{command_line()}`",
        targets(rows, speed),
        "(1) create + write + close, per file, as files pile up:",
        table("create", "µs/file", 1e6),
        "(2) find and open one step's files:",
        table("find", "ms", 1e3),
        "(3) stat one file:",
        table("stat", "µs", 1e6),
        "(4) migrating closed sets:",
        markdown_table(["method", "seconds", "MB/s"], migrated),
        "\n".join(notes),
    ]
    return "\n\n".join(sections) + "\n"
