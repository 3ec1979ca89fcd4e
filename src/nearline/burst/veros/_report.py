"""The runner's last line, ``nearline.burst.veros: {JSON}``: written by rank 0 of ``python -m
nearline.burst.veros`` and read back by whoever ran it (the tests, benchmarks/veros.py)."""

from __future__ import annotations

import json
from typing import Any

PREFIX = "nearline.burst.veros: "


def report_line(report: dict[str, Any]) -> str:
    """The line rank 0 prints at the end of a run.

    Parameters
    ----------
    report
        The pauses, clock and timers the compute ranks gathered.
    """
    return PREFIX + json.dumps(report)


def report_of(stdout: str) -> dict[str, Any]:
    """The report in a run's standard output.

    Parameters
    ----------
    stdout
        Everything the run printed.

    Returns
    -------
    dict
        ``pauses``, ``clock`` and ``timers`` (docs/burst.md, "A real model: Veros").

    Raises
    ------
    ValueError
        The output holds no report line, or more than one.
    """
    lines = [line for line in stdout.splitlines() if line.startswith(PREFIX)]
    if len(lines) != 1:
        raise ValueError(
            f"expected one line starting {PREFIX!r} in the run's output, found {len(lines)}"
        )
    return json.loads(lines[0][len(PREFIX) :])
