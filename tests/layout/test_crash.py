"""A migrator killed with SIGKILL at random points, then started again, archives every file
in exactly one verified bundle; SIGTERM stops it cleanly. Real processes, real signals."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nearline.layout import verify_archive
from nearline.layout._journal import Journal, State
from nearline.layout._restore import manifests
from nearline.layout._tier_registry import open_tier
from tests.layout.crash_worker import archived_files, make_run

WORKER = Path(__file__).with_name("crash_worker.py")
TRIALS = 24
STEPS = range(3)
CHUNK = "16KiB"  # small buffers: many progress events, so many places to be killed
# read at import: the suite's autouse fixture clears NEARLINE_* variables before each test
SEED = int(os.environ.get("NEARLINE_TEST_SEED", "20000414"))


def worker(*args: str) -> list[str]:
    return [sys.executable, str(WORKER), *args]


def run_and_kill(source: Path, archive: Path, bundle: str, *, after: int, delay: float) -> bool:
    """Run a migrator; SIGKILL it ``delay`` s after its ``after``-th progress line. Returns
    whether it was killed (it may have finished first)."""
    command = worker("once", str(source), str(archive), bundle, CHUNK)
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdout is not None
        for seen, _ in enumerate(process.stdout, start=1):
            if seen >= after:
                time.sleep(delay)
                process.send_signal(signal.SIGKILL)
                break
        process.stdout.read()
        return process.wait(timeout=60) == -signal.SIGKILL


def run_to_end(source: Path, archive: Path, bundle: str) -> list[str]:
    command = worker("once", str(source), str(archive), bundle, CHUNK)
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def check_archived_exactly_once(source: Path, archive: Path, expected: dict[str, str]) -> None:
    found = archived_files(archive)
    assert sorted(found) == sorted(expected), "a file is missing from, or foreign to, the archive"
    duplicated = {path: shas for path, shas in found.items() if len(shas) != 1}
    assert duplicated == {}
    assert {path: shas[0] for path, shas in found.items()} == expected
    assert len(verify_archive(archive)) == len(STEPS) * 2  # every bundle reads back whole
    left = sorted(p.name for p in source.rglob("*") if p.is_file())
    assert left == [".nearline-migrate.lock", ".nearline-migrate.sqlite"]
    on_archive = {p.relative_to(archive).as_posix() for p in archive.rglob("*") if p.is_file()}
    referenced = set()
    for manifest in manifests(open_tier(archive)):
        referenced.add(manifest.name)
        referenced.update(name for name, _ in manifest.objects)
    assert on_archive == referenced  # no partial bundle, no stray copy
    with Journal(source) as journal:
        assert {record.state for record in journal.records()} == {State.DONE}


def test_killed_migrator_restarts_and_archives_every_file_exactly_once(tmp_path):
    seed = SEED
    rng = random.Random(seed)
    events = {}
    for bundle in ("tar", "none"):  # how many progress lines a whole run prints
        source = tmp_path / f"calibrate-{bundle}"
        make_run(source, steps=STEPS, seed=seed)
        events[bundle] = len(run_to_end(source, tmp_path / f"calibrate-{bundle}-archive", bundle))
    killed = 0
    for trial in range(TRIALS):
        bundle = ("tar", "none")[trial % 2]
        source, archive = tmp_path / f"{trial}" / "source", tmp_path / f"{trial}" / "archive"
        expected = make_run(source, steps=STEPS, seed=seed)
        for attempt in range(rng.randint(1, 3)):
            after = rng.randint(1, max(1, events[bundle] - 1) // (attempt + 1))
            delay = rng.choice([0.0, rng.uniform(0, 0.004)])
            killed += run_and_kill(source, archive, bundle, after=after, delay=delay)
        run_to_end(source, archive, bundle)
        check_archived_exactly_once(source, archive, expected)
    assert killed >= TRIALS, f"only {killed} kills landed mid-run (seed {seed})"


def test_sigterm_stops_a_watching_migrator_cleanly_and_it_resumes(tmp_path):
    source, archive = tmp_path / "source", tmp_path / "archive"
    expected = make_run(source, steps=range(4), size=1_500_000)
    command = worker(
        "cli", "migrate", str(source), str(archive), "--watch", "--interval", "0.1",
        "--chunk-size", "16KiB",
    )  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("archived step"):  # one set is done, the next is moving
                process.send_signal(signal.SIGTERM)
                break
        rest = process.stdout.read()
        assert process.wait(timeout=30) == 0
    assert "stopped on request" in rest
    done = archived_files(archive)
    assert 1 <= len(done) // 4 < 8  # some sets archived (4 files each), not all
    assert not [p for p in archive.rglob(".*")]  # the set in progress was rolled back
    with Journal(source) as journal:
        assert {r.state for r in journal.records()} <= {State.DONE, State.STARTED}
    result = subprocess.run(
        worker("cli", "migrate", str(source), str(archive), "--once"),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert {path: shas[0] for path, shas in archived_files(archive).items()} == expected


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_wait_between_polls(tmp_path, signum):
    source, archive = tmp_path / "source", tmp_path / "archive"
    make_run(source, steps=range(1), files=("dyn",), ranks=1, size=100)
    command = worker("cli", "migrate", str(source), str(archive), "--watch", "--interval", "30")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("archived step"):
                break
        time.sleep(0.2)  # now asleep between polls: the first signal ends the wait
        process.send_signal(signum)
        assert process.wait(timeout=10) == 0
