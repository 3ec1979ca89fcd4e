"""A migrator in its own process, for tests that kill it (SIGKILL) or stop it (SIGTERM).

    python crash_worker.py once SOURCE ARCHIVE BUNDLE CHUNK   run_once; one line per event
    python crash_worker.py cli ARG...                          the `nearline migrate` sub-command

Also home of :func:`make_run`, the synthetic model output the layout tests migrate.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
from pathlib import Path

from nearline.layout import MigrationEvent, Migrator, hds_path, mark_complete


def make_run(
    root: Path,
    *,
    steps: range,
    files: tuple[str, ...] = ("dyn", "phy"),
    ranks: int = 3,
    size: int = 40_000,
    seed: int = 0,
) -> dict[str, str]:
    """Write per-rank files ``<root>/<step>/<file>/`` and an assembled file
    ``<root>/<step>/<file>.<step>.nc`` for each (step, file), mark each set complete, and
    return {path relative to root: SHA-256} of every file written."""
    rng = random.Random(seed)
    written = {}
    for step in steps:
        for file in files:
            paths = [hds_path(root, step=step, file=file, rank=r, ext="nc") for r in range(ranks)]
            paths.append(hds_path(root, step=step, file=file, ext="nc"))
            for path in paths:
                path.parent.mkdir(parents=True, exist_ok=True)
                data = rng.randbytes(rng.randint(size // 2, size))
                path.write_bytes(data)
                written[path.relative_to(root).as_posix()] = hashlib.sha256(data).hexdigest()
            mark_complete(root, step=step, file=file)
    return written


def archived_files(archive: str | Path) -> dict[str, list[str]]:
    """{path relative to the source root: [SHA-256 in each manifest that lists it]}."""
    from nearline.layout._restore import manifests
    from nearline.layout._tier_registry import open_tier

    found: dict[str, list[str]] = {}
    for manifest in manifests(open_tier(archive)):
        for entry in manifest.entries:
            path = f"{manifest.folder}/{entry.path}"
            found.setdefault(path, []).append(entry.sha256)
    return found


def _print_event(event: MigrationEvent) -> None:
    print(f"{event.phase.value} {event.step} {event.file} {event.done}", flush=True)


def once(source: str, archive: str, bundle: str, chunk: str) -> int:
    with Migrator(source, archive, bundle=bundle, chunk_size=chunk, progress=_print_event) as m:
        archived = m.run_once()
    print(f"finished {len(archived)}", flush=True)
    return 0


def cli(argv: list[str]) -> int:
    """The migrate sub-command, parsed and run as ``nearline.cli.main`` runs sub-commands."""
    from nearline.cli._migrate import add_migrate_parser, add_restore_parser
    from nearline.errors import NearlineError

    parser = argparse.ArgumentParser(prog="nearline")
    commands = parser.add_subparsers(dest="command", required=True)
    add_migrate_parser(commands)
    add_restore_parser(commands)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except NearlineError as error:
        print(f"nearline: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    if sys.argv[1] == "once":
        sys.exit(once(*sys.argv[2:6]))
    sys.exit(cli(sys.argv[2:]))
