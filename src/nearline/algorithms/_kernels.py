"""nearline's compiled numba kernels, handed to sandboxed runs.

numba uses only a cache folder it can write to, and a run may write nowhere but its own
folder, so a run of the built-in composite would compile every kernel again (about 12 s on
two cores, longer than compositing a day's first orbits). Each run gets a private copy of
the kernels an unsandboxed run compiled into nearline's ``__pycache__`` folders, laid out as
numba's ``NUMBA_CACHE_DIR`` locator looks for them, so it starts warm; what it compiles more
stays in its own folder. A copy, never a link: a run must not change what the next one loads.
Only kernels of modules that still exist are copied: a renamed module leaves its old kernels
behind in ``__pycache__``, which every run would otherwise carry.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

NEARLINE = Path(__file__).resolve().parents[1]  # the nearline package folder
SUFFIXES = (".nbi", ".nbc")  # numba's index and compiled-code files


def seed_kernel_cache(into: Path, *, package: Path = NEARLINE) -> int:
    """Copy ``package``'s cached kernels into ``into`` (a ``NUMBA_CACHE_DIR``); returns how
    many files were copied."""
    copied = 0
    for cache in package.rglob("__pycache__"):
        files = [
            path
            for path in cache.iterdir()
            if path.suffix in SUFFIXES and (cache.parent / f"{_module_of(path)}.py").is_file()
        ]
        if not files:
            continue
        source = os.path.abspath(cache.parent)  # as numba names a module's folder
        digest = hashlib.sha1(source.encode()).hexdigest()
        target = into / f"{Path(source).name}_{digest}"
        target.mkdir(parents=True, exist_ok=True)
        for path in files:
            shutil.copy2(path, target / path.name)
            copied += 1
    return copied


def _module_of(cache_file: Path) -> str:
    """The module a numba cache file belongs to: ``mod.func-10.py311.1.nbc`` -> ``mod``."""
    return cache_file.name.split(".", 1)[0]
