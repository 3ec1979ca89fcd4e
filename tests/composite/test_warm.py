"""``python -m nearline.composite.warm`` leaves the kernels compiled where the next process
finds them: a second run, from another folder, loads every one from numba's cache and
compiles none."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nearline.composite import REDUCERS


def warm(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NUMBA_DEBUG_CACHE": "1"}
    command = [sys.executable, "-m", "nearline.composite.warm"]
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=True
    )


def cache_events(output: str) -> list[str]:
    """numba's cache lines (``[cache] data loaded: ...``), as ``data loaded`` and the like."""
    return [line.split()[1] + " " + line.split()[2].rstrip(":") for line in
            output.splitlines() if line.startswith("[cache] ")]  # fmt: skip


def test_after_the_warm_up_another_process_compiles_no_kernel(tmp_path):
    first = warm(tmp_path)  # compiles what is missing (nothing, after `make test`'s own)
    said = first.stdout.splitlines()[-1]  # after numba's own lines
    assert said == f"numba kernels ready for {', '.join(REDUCERS)}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    events = cache_events(warm(elsewhere).stdout)
    assert "data loaded" in events
    assert [event for event in events if event.endswith("saved")] == []
