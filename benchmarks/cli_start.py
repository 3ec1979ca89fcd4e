"""How long the ``nearline`` command takes to start, beside the physical floor of the same
interpreter, measured side by side in one run.

The commands users type most (``nearline --help``, ``nearline jobs --help``,
``nearline token --help``, ``nearline ls --help``, and ``nearline token`` with a kept sign-in
still valid, as a script asks for a token before each request) each as a new process, as a
shell starts them, against the floor: ``python -c pass`` (the interpreter's own start) and
``python -c "import argparse"`` (the least an argparse command can import). The commands run
in rounds, one of each a round, so a neighbour's load falls on all of them alike; the table
has each one's median over the rounds, after untimed warm-up rounds, and its ratio to each
floor.

The warm-up also compiles nearline's modules to bytecode, as an installed wheel ships them
(PYTHONDONTWRITEBYTECODE is dropped for the commands).

    .venv/bin/python benchmarks/cli_start.py [--rounds 30] [--warmup 3] [--bin DIR]
        [--update-docs]

``--bin`` takes the interpreter and the ``nearline`` script from another environment's bin/
(another checkout's .venv/bin, to compare two versions of the command).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import command_line, machine_summary, markdown_table, now_stamp, replace_section

PROJECT = Path(__file__).resolve().parents[1]
DOCS = PROJECT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- cli-start:begin -->", "<!-- cli-start:end -->"
DOCS_HEADER = "# Benchmarks\n\nEach section is rewritten by its script's `--update-docs`.\n"
FLOORS = ("`python -c pass`", '`python -c "import argparse"`')


def commands(bin_dir: Path) -> dict[str, list[str]]:
    """What is timed: a row's name -> the command it runs."""
    python, nearline = str(bin_dir / "python"), str(bin_dir / "nearline")
    return {
        FLOORS[0]: [python, "-c", "pass"],
        FLOORS[1]: [python, "-c", "import argparse"],
        "`nearline --help`": [nearline, "--help"],
        "`nearline jobs --help`": [nearline, "jobs", "--help"],
        "`nearline token --help`": [nearline, "token", "--help"],
        "`nearline ls --help`": [nearline, "ls", "--help"],
        "`nearline token`, a kept sign-in still valid": [nearline, "token"],
    }


def kept_sign_in(folder: Path) -> Path:
    """A sign-in as `nearline login` keeps it, valid for a day: `nearline token` prints its
    access token without asking the provider."""
    path = folder / "login.json"
    kept = {
        "url": "http://127.0.0.1:8000",
        "issuer": "http://127.0.0.1:8080/realms/nearline",
        "client_id": "nearline-cli",
        "token_endpoint": "http://127.0.0.1:8080/realms/nearline/token",
        "access_token": "eyJ.bench.token",
        "refresh_token": None,
        "expires_at": time.time() + 86400,
    }
    path.write_text(json.dumps(kept))
    return path


def run_once(command: list[str], env: dict[str, str]) -> float:
    """Seconds from starting ``command`` to its exit; it must succeed."""
    began = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.decode()[-500:]}")
    return seconds


def measure(runs: dict[str, list[str]], env: dict[str, str], *, rounds: int, warmup: int):
    """Each command's times over ``rounds`` rounds (one of each a round), after ``warmup``."""
    for _ in range(warmup):
        for command in runs.values():
            run_once(command, env)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, command in runs.items():
            times[name].append(run_once(command, env))
    return times


def table(times: dict[str, list[float]]) -> str:
    medians = {name: statistics.median(values) for name, values in times.items()}
    quartiles = {name: statistics.quantiles(values, n=4) for name, values in times.items()}
    rows = [
        [
            name,
            f"{medians[name] * 1000:.0f}",
            f"{quartiles[name][0] * 1000:.0f}-{quartiles[name][2] * 1000:.0f}",
            f"{medians[name] / medians[FLOORS[0]]:.1f}",
            f"{medians[name] / medians[FLOORS[1]]:.1f}",
        ]
        for name in times
    ]
    headers = ["command", "median (ms)", "quartiles (ms)", "/ `-c pass`", "/ `import argparse`"]
    return markdown_table(headers, rows)


def load_average() -> str:
    with open("/proc/loadavg") as load:
        return " ".join(load.read().split()[:3])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="timed runs of each (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first (default 3)")
    parser.add_argument(
        "--bin", type=Path, default=Path(sys.executable).parent, help="the environment's bin/"
    )
    parser.add_argument("--update-docs", action="store_true")
    args = parser.parse_args(argv)
    if args.rounds < 20:
        parser.error("--rounds: at least 20, for medians worth reading")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["COLUMNS"] = "100"  # help is wrapped alike wherever it runs
    started = load_average()
    with tempfile.TemporaryDirectory(prefix="nearline-cli-start-") as scratch:
        env["NEARLINE_LOGIN"] = str(kept_sign_in(Path(scratch)))
        times = measure(commands(args.bin), env, rounds=args.rounds, warmup=args.warmup)
    text = (
        f"`{command_line()}` on {now_stamp()}; machine: {machine_summary(PROJECT)}; "
        f"load average {started} at the start, {load_average()} at the end; {args.rounds} "
        f"rounds of each command after {args.warmup} untimed, in turn; each a new process, "
        "its output to /dev/null.\n\n" + table(times)
    )
    print(text)
    if args.update_docs:
        header = "## The command's start"
        replace_section(DOCS, BEGIN, END, f"{header}\n\n{text}", DOCS_HEADER)
    return 0


if __name__ == "__main__":
    sys.exit(main())
