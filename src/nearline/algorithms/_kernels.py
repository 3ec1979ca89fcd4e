"""nearline's compiled numba kernels, handed to sandboxed runs.

numba uses only a cache folder it can write to, and a run may write nowhere but its own
folder, so a run of the built-in composite would compile every kernel again (about 12 s on
two cores, longer than compositing a day's first orbits). Each run's ``NUMBA_CACHE_DIR``
therefore gets folders of its own laid out as numba's locator looks for them, holding links
to the kernels an unsandboxed run compiled into nearline's ``__pycache__`` folders, so it
starts warm; what it compiles more stays in its own folder.

Links, not copies: nearline's source is mounted read-only into every run, so a run can read
those kernels but never change what the next one loads, and numba saves an index by writing
a new file and renaming it over the old name, which replaces the link in the run's own
folder and leaves the kernel it pointed to alone. The links are made once a process
(:func:`kernel_links`) and copied into each run's disk as it is made, never into its folder
on the service's own file system: copies cost a small run about 60 ms and 10 MB of writes,
twice, and links made and deleted there each run most of a loaded server's time. Only
kernels of modules that still exist are linked: a renamed module leaves its old kernels
behind in ``__pycache__``.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

NEARLINE = Path(__file__).resolve().parents[1]  # the nearline package folder
SUFFIXES = (".nbi", ".nbc")  # numba's index and compiled-code files


def seed_kernel_cache(into: Path, *, package: Path = NEARLINE) -> int:
    """Link ``package``'s cached kernels into ``into`` (a ``NUMBA_CACHE_DIR``); returns how
    many were linked."""
    linked = 0
    for cache, target in _caches(package):
        files = [
            entry.name
            for entry in os.scandir(cache)
            if entry.name.endswith(SUFFIXES)
            and (cache.parent / f"{_module_of(entry.name)}.py").is_file()
        ]
        if not files:
            continue
        folder = into / target
        folder.mkdir(parents=True, exist_ok=True)
        for name in files:
            os.symlink(cache / name, folder / name)
            linked += 1
    return linked


@functools.cache
def kernel_links(package: Path = NEARLINE) -> Path:
    """A folder of links to ``package``'s kernels, laid out for ``NUMBA_CACHE_DIR``: made
    once a process (a kernel compiled again under its name is still what its link reads),
    removed when the process ends."""
    folder = Path(tempfile.mkdtemp(prefix="nearline-kernels-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    seed_kernel_cache(folder / "numba", package=package)
    (folder / "numba").mkdir(exist_ok=True)
    return folder / "numba"


@functools.cache
def _caches(package: Path) -> tuple[tuple[Path, str], ...]:
    """The ``__pycache__`` folders of ``package`` (found once a process: walking the whole
    package every run cost more than the run), with the folder name numba's
    ``NUMBA_CACHE_DIR`` locator gives each module folder."""
    found = []
    for cache in sorted(package.rglob("__pycache__")):
        source = os.path.abspath(cache.parent)  # as numba names a module's folder
        digest = hashlib.sha1(source.encode()).hexdigest()
        found.append((cache, f"{Path(source).name}_{digest}"))
    return tuple(found)


def _module_of(name: str) -> str:
    """The module a numba cache file belongs to: ``mod.func-10.py311.1.nbc`` -> ``mod``."""
    return name.split(".", 1)[0]
