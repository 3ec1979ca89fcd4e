"""Hierarchical Data Structuring (the paper's T3E runs): one flat output folder against nearline's
folder tree, as the files pile up.

R ranks x F file groups write one small file each per step (500 x 2 by default, up to 10^5
files; ``--max-files 1000000`` for 10^6). Flat: every file in one folder, named as in the seed
(``file1.00.0000``). HDS: ``nearline.layout`` paths, ``Layout.for_run(ranks=R)``. Measured in
one run, at 10^3, 10^4, 10^5 (10^6) files present: (1) create+write+close cost per file, (2)
finding and opening one step's files, (3) stat of one file; and (4) nearline's Migrator on
closed, marked sets against a raw copy (+fsync) of the same bytes.

    .venv/bin/python benchmarks/layout.py [--quick] [--max-files N] [--scale 1.0]
        [--out bench-output/layout] [--update-docs]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import fsync_path, median, remove_path, replace_section
from _layout_helpers import EMPTY, MIGRATOR, RAW, TREES, Row, report
from nearline.layout import Layout, MigrationEvent, Migrator, Phase, mark_complete

PROJECT = Path(__file__).resolve().parents[1]
DOCS = PROJECT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- layout:begin -->", "<!-- layout:end -->"
DOCS_HEADER = "# Benchmarks\n\nEach section is rewritten by its script's `--update-docs`.\n"
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
DEFAULTS = {"ranks": 500, "max_files": 100_000, "repeats": 15, "cold_repeats": 5}
DEFAULTS |= {"stat_samples": 2000, "scale": 1.0, "migrate_repeats": 3}
QUICK = {"ranks": 100, "max_files": 10_000, "repeats": 7, "cold_repeats": 3}
QUICK |= {"stat_samples": 300, "scale": 0.25, "migrate_repeats": 2}
STAGES = {  # what the Migrator did between its previous progress event and this one
    (Phase.COPY, True): "find + check the set",
    (Phase.COPY, False): "read + tar + SHA-256 + write",
    (Phase.VERIFY, True): "fsync + publish + journal",
    (Phase.VERIFY, False): "read back + SHA-256",
    (Phase.REMOVE, False): "manifest + journal",
    (Phase.DONE, False): "remove source + journal",
}


# -- timing -------------------------------------------------------------------------------------
def compare(
    runs: Mapping[str, Callable[[], object]],
    repeats: int,
    *,
    warmup: int = 1,
    reset: Callable[[str], object] | None = None,
) -> dict[str, list[float]]:
    """Seconds of each run, interleaved round by round (a, b, a, b, ...) so that every run
    sees the same machine; ``reset(name)`` runs untimed before each; warm-up rounds are dropped."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(warmup + repeats):
        for name, run in runs.items():
            if reset is not None:
                reset(name)
            began = time.perf_counter()
            run()
            elapsed = time.perf_counter() - began
            if round_ >= warmup:
                times[name].append(elapsed)
    return times


def cycling(targets: Sequence[Any], operation: Callable[[Any], object]) -> Callable[[], object]:
    """A run that applies ``operation`` to the next target on each call (round and round)."""
    queue = itertools.cycle(targets)
    return lambda: operation(next(queue))


def drop_caches(_: object = None) -> bool:
    """sync, then drop the page, dentry and inode caches; False if this machine forbids it."""
    os.sync()
    try:
        DROP_CACHES.write_text("3\n")
    except OSError:
        return False
    return True


# -- the two trees ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tree:
    """Where R ranks x F groups x S steps of files go: one flat folder, or nearline's HDS."""

    name: str
    root: Path
    ranks: int
    groups: int
    steps: int

    @property
    def layout(self) -> Layout:
        return Layout.for_run(ranks=self.ranks, steps=self.steps)

    @property
    def width(self) -> int:
        return max(2, len(str(self.steps - 1)))

    def path(self, step: int, group: int, rank: int) -> str:
        if self.name == "flat":
            return f"{self.root}/file{group + 1}.{step:0{self.width}d}.{rank:04d}"
        file = f"file{group + 1}"
        return str(self.layout.path(self.root, step=step, file=file, rank=rank, ext="dat"))

    def folders(self, step: int) -> list[str]:
        """Folders to make, parents first, before the step's files are written (one pass)."""
        if self.name == "flat":
            return []
        names = [f"file{g + 1}" for g in range(self.groups)]
        return [str(p) for p in self.layout.folders(self.root, step=step, files=names)]

    def bury(self, step: int, grave: Path) -> None:
        """Move one step's files out of the tree by renaming: deleting them would free inodes,
        and ext4 without a journal makes the next creates skip recently freed inodes."""
        if self.name != "flat":
            os.rename(self.layout.step_dir(self.root, step), grave)
            return
        grave.mkdir(parents=True)
        for path in self.step_paths(step):
            os.rename(path, grave / os.path.basename(path))

    def step_paths(self, step: int) -> list[str]:
        return [self.path(step, g, r) for g in range(self.groups) for r in range(self.ranks)]

    def find(self, step: int) -> list[str]:
        """One step's files, found as a reader would: by listing folders."""
        if self.name == "flat":
            wanted = re.compile(rf"file\d+\.{step:0{self.width}d}\.\d+")
            with os.scandir(self.root) as entries:
                return [e.path for e in entries if wanted.fullmatch(e.name)]
        return list(_files_below(str(self.layout.step_dir(self.root, step))))


def _files_below(folder: str) -> Iterator[str]:
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                yield from _files_below(entry.path)
            elif not entry.name.startswith("."):
                yield entry.path


def write_files(folders: Sequence[str], paths: Sequence[str], payload: bytes) -> None:
    """mkdir ``folders`` (parents first), then create, write and close each file; no fsync."""
    for folder in folders:
        if not os.path.isdir(folder):
            os.mkdir(folder)
    for path in paths:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        os.write(fd, payload)
        os.close(fd)


def open_all(paths: Sequence[str]) -> None:
    for path in paths:
        os.close(os.open(path, os.O_RDONLY | os.O_CLOEXEC))


# -- (1)-(3): files piling up -------------------------------------------------------------------
def checkpoints(max_files: int) -> list[int]:
    """10^3, 10^4, ... up to ``max_files``, and ``max_files`` itself."""
    points = [10**k for k in range(3, 8) if 10**k <= max_files]
    return points + ([max_files] if not points or points[-1] < max_files else [])


def measure(
    trees: Sequence[Tree], steps: int, args: argparse.Namespace, payload: bytes, cold: bool
) -> Row:
    """Measurements (1)-(3) on trees holding ``steps`` full steps."""
    rng = random.Random(steps)
    per_step = args.ranks * args.groups
    row = Row(steps * per_step)
    batch = {t.name: (t.folders(steps), t.step_paths(steps)) for t in trees}  # the next step
    runs = {name: lambda b=b: write_files(*b, payload) for name, b in batch.items()}
    graveyard, graves = trees[0].root.parent / "graveyard", itertools.count()
    names = [os.path.basename(p) for p in batch["flat"][1]]
    empty = [graveyard / f"{EMPTY}.{steps}.{n}" for n in range(args.repeats + 1)]
    empty_batches = [([str(e)], [f"{e}/{n}" for n in names]) for e in empty]
    runs[EMPTY] = cycling(empty_batches, lambda b: write_files(*b, payload))  # machine drift

    def clean(name: str) -> None:
        tree = next((t for t in trees if t.name == name), None)
        if tree and os.path.exists(batch[name][1][0]):
            tree.bury(steps, graveyard / f"{name}.{steps}.{next(graves)}")
        os.sync()  # start from a clean page cache: no writeback of earlier files meanwhile

    row.add("create", compare(runs, args.repeats, reset=clean), per_step)
    for tree in trees:
        clean(tree.name)

    picks = [rng.randrange(steps) for _ in range(args.repeats)]
    files = [
        (rng.randrange(steps), rng.randrange(args.groups), rng.randrange(args.ranks))
        for _ in range(args.stat_samples)
    ]
    probes = {
        "find": {t.name: (picks, lambda s, t=t: open_all(t.find(s))) for t in trees},
        "stat": {t.name: ([t.path(*f) for f in files], os.stat) for t in trees},
    }
    for tree in trees:
        if len(tree.find(picks[0])) != per_step:
            raise RuntimeError(f"{tree.name}: {len(tree.find(picks[0]))} files, not {per_step}")
    for state in ("warm", "cold") if cold else ("warm",):
        for what, per_tree in probes.items():
            runs = {name: cycling(*probe) for name, probe in per_tree.items()}
            if state == "warm":  # one untimed pass over the same targets first
                count = len(picks) if what == "find" else len(files)
                times = compare(runs, count, warmup=count)
            else:
                times = compare(runs, args.cold_repeats, warmup=0, reset=drop_caches)
            row.add(f"{what} {state}", times)
    return row


def run_trees(args: argparse.Namespace, root: Path, cold: bool) -> tuple[list[Row], dict]:
    """Fill both trees step by step (interleaved), measuring at each checkpoint."""
    per_step = args.ranks * args.groups
    points = checkpoints(args.max_files)
    steps = -(-points[-1] // per_step) + 1  # +1: the timed batch
    trees = [Tree(name, root / name, args.ranks, args.groups, steps) for name in TREES]
    for folder in [*(t.root for t in trees), root / "graveyard"]:
        folder.mkdir(parents=True)
    payload = os.urandom(args.file_bytes)
    fill = dict.fromkeys(TREES, 0.0)
    rows, written = [], 0
    for point in points:
        while written < -(-point // per_step):
            for tree in trees:
                step = (tree.folders(written), tree.step_paths(written))
                run = {tree.name: lambda step=step: write_files(*step, payload)}
                fill[tree.name] += sum(compare(run, 1, warmup=0)[tree.name])
            written += 1
        progress(f"{written * per_step:,} files in each tree: measuring")
        rows.append(measure(trees, written, args, payload, cold))
    return rows, fill


# -- (4): migration -----------------------------------------------------------------------------
def run_migration(args: argparse.Namespace, root: Path, cold: bool) -> tuple[dict, int, dict]:
    """Migrator.run_once on 2 closed steps x R ranks against copying the same files + fsync.

    The files are written once; each Migrator run gets them hard-linked into a fresh source
    root (so it removes links, and no inode is freed: see Tree.bury) and a fresh archive."""
    size = max(4096, int(args.scale * 2**20))
    layout = Layout.for_run(ranks=args.ranks, steps=2)

    def hds(base: Path) -> tuple[list[str], list[str]]:
        """The folders and files of 2 steps x 1 group (file1) in nearline's layout."""
        tree = Tree("HDS", base, args.ranks, 1, 2)
        files = tree.step_paths(0) + tree.step_paths(1)
        return [str(base), *tree.folders(0), *tree.folders(1)], files

    root.mkdir(parents=True)
    write_files(*hds(root / "master"), os.urandom(size))
    os.sync()  # durable before marked, as mark_complete requires
    sources = hds(root / "master")[1]
    rounds, now = itertools.count(), {}
    stages: list[dict[str, float]] = []  # seconds per stage, one dict per Migrator run

    def progress_event(event: MigrationEvent) -> None:
        stamp, stage = time.perf_counter(), STAGES[event.phase, event.done == 0]
        stages[-1][stage] = stages[-1].get(stage, 0.0) + stamp - now["clock"]
        now["clock"] = stamp

    def reset(name: str) -> None:
        for old in root.glob("out-*"):  # few inodes to free: one tar or file
            if len(os.listdir(old)) < 10:
                remove_path(old)
        n = next(rounds)
        now["out"], now["source"] = root / f"out-{n}", root / f"source-{n}"
        now["out"].mkdir()
        if name == MIGRATOR:
            folders, links = hds(now["source"])
            write_files(folders, [], b"")
            for master_file, link in zip(sources, links, strict=True):
                os.link(master_file, link)
            for step in (0, 1):
                mark_complete(now["source"], step=step, file="file1", layout=layout)
        if not (cold and drop_caches()):  # else the same warm page cache for every run
            for path in sources:
                Path(path).read_bytes()

    def raw() -> None:
        for path in sources:
            shutil.copyfile(path, now["out"] / os.path.basename(path))
        fsync_path(now["out"])  # every copy, the folder and its parent

    def one_file() -> None:
        with open(now["out"] / "all", "wb") as out:
            for path in sources:
                with open(path, "rb") as member:
                    shutil.copyfileobj(member, out, 8 * 2**20)
        fsync_path(now["out"] / "all")

    def migrate() -> None:
        stages.append({})
        now["clock"] = time.perf_counter()
        with Migrator(now["source"], now["out"], progress=progress_event) as migrator:
            if len(migrator.run_once()) != 2:
                raise RuntimeError("the Migrator did not archive both closed sets")

    runs = {RAW: raw, "all files into one file + fsync": one_file, MIGRATOR: migrate}
    times = compare(runs, args.migrate_repeats, reset=reset)
    split = {stage: median([run.get(stage, 0.0) for run in stages[1:]]) for stage in stages[-1]}
    return times, size * len(sources), split


# -- the command line ---------------------------------------------------------------------------
def progress(message: str) -> None:
    print(f"layout.py: {message}", file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="layout.py", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="CI smoke run: 100 ranks, 10^4 files, 25 MB")
    add("--ranks", type=int, help="ranks (default 500)")
    add("--groups", type=int, default=2, help="file groups per step (default 2)")
    add("--max-files", type=int, help="files in each tree at the end (default 10^5)")
    add("--file-bytes", type=int, default=4096, help="bytes per small file (default 4096)")
    add("--repeats", type=int, help="timed repeats of create and warm find (default 15)")
    add("--cold-repeats", type=int, help="cold samples of find and stat (default 5)")
    add("--stat-samples", type=int, help="random files stat-ed warm (default 2000)")
    add("--scale", type=float, help="migration file size in MiB (default 1: ~1 GiB in all)")
    add("--migrate-repeats", type=int, help="timed migration repeats (default 3)")
    add("--no-drop-caches", action="store_true", help="never drop the page cache")
    add("--out", default=str(PROJECT / "bench-output" / "layout"), help="a disk folder")
    add("--update-docs", action="store_true", help=f"rewrite docs/{DOCS.name}")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run all four measurements, print the markdown report, optionally update the docs."""
    args = build_parser().parse_args(argv)
    for key, value in {**DEFAULTS, **(QUICK if args.quick else {})}.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    counts = (args.ranks, args.groups, args.repeats, args.cold_repeats, args.stat_samples)
    if min(counts) < 1 or args.max_files < 1000 or args.scale <= 0:
        print("layout.py: counts must be >= 1, --max-files >= 1000, --scale > 0", file=sys.stderr)
        return 2
    Path(args.out).mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="run-", dir=args.out))  # only this is removed after
    cold = not args.no_drop_caches and drop_caches()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # still clean up when stopped
    try:  # migration first, and nothing deleted until the end (see Tree.bury)
        progress("migration")
        migration = run_migration(args, root / "migrate", cold)
        rows, fill = run_trees(args, root / "trees", cold)
    finally:
        progress(f"removing {root}")
        remove_path(root)
    text = report(args, rows, fill, migration, cold)
    print(text)
    if args.update_docs:
        replace_section(DOCS, BEGIN, END, text, DOCS_HEADER)
        progress(f"wrote {DOCS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
