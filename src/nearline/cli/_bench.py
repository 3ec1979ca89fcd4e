"""``nearline bench NAME [OPTIONS]``: run one of benchmarks/ from a source checkout."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from nearline.errors import NearlineError


def add_bench_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``bench NAME [OPTIONS]`` to ``commands``.

    Parameters
    ----------
    commands
        The ``nearline`` command's sub-parsers.
    """
    bench = commands.add_parser("bench")
    bench.add_argument("name", choices=["burst", "layout", "composite", "service", "load"])
    bench.add_argument("rest", nargs=argparse.REMAINDER, help="the benchmark's own options")
    bench.set_defaults(func=run_bench)
    return bench


def run_bench(args: argparse.Namespace) -> int:
    """Run ``benchmarks/<name>.py``'s ``main`` with the options after the name.

    Parameters
    ----------
    args
        The parsed command line: ``name`` and ``rest``.
    """
    import importlib

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
    try:
        benchmark = importlib.import_module(args.name)  # benchmarks/<name>.py in a checkout
    except ImportError:
        raise NearlineError(
            "benchmarks/ is not next to this nearline install; run `make bench` in a checkout"
        ) from None
    return benchmark.main(args.rest)
