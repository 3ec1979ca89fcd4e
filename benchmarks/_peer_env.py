"""The peer's own Python environment: pgstac's loader and stac-fastapi-pgstac, installed from
PyPI into ``bench-output/peer-env`` on first use, with the versions pinned in
benchmarks/peer-requirements.txt, and kept apart from nearline's .venv so that neither
constrains the other's versions (the peer users would pick, as they would install it).

    python = peer_python()          # the environment's interpreter, made if missing
    subprocess.run([python, "-m", "uvicorn", ...])
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "peer-requirements.txt"
ENV = HERE.parent / "bench-output" / "peer-env"


class PeerEnvError(RuntimeError):
    """The peer's environment could not be made (no network to PyPI, or no uv)."""


def peer_python(env: Path = ENV, requirements: Path = REQUIREMENTS) -> Path:
    """The interpreter of the peer's environment, made (or remade, when the pins changed)
    with uv, which nearline's .venv holds; ``env`` and ``requirements``: another peer's."""
    python = env / "bin" / "python"
    pins = hashlib.sha256(requirements.read_bytes()).hexdigest()
    stamp = env / "requirements.sha256"
    if python.exists() and stamp.exists() and stamp.read_text() == pins:
        return python
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is None:
        raise PeerEnvError("uv is not installed in .venv: run `make bench`, which installs it")
    shutil.rmtree(env, ignore_errors=True)
    print(f"making the peer's environment in {env} ...", flush=True)
    steps = [
        [uv, "venv", "--quiet", "--python", sys.executable, str(env)],
        [uv, "pip", "sync", "--quiet", "--python", str(python), str(requirements)],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(env, ignore_errors=True)
            raise PeerEnvError(f"{' '.join(step[:3])} failed: {done.stderr.strip()[-2000:]}")
    stamp.write_text(pins)
    return python


def run_peer(python: Path, script: str, *args: str) -> str:
    """Run ``script`` (Python source) in the peer's environment with ``args``; its output."""
    done = subprocess.run(
        [str(python), "-c", script, *args], capture_output=True, text=True, cwd=HERE.parent
    )
    if done.returncode != 0:
        raise PeerEnvError(f"the peer's script failed:\n{done.stderr.strip()[-3000:]}")
    return done.stdout
