"""Compile the chain's numba kernels into their caches once: ``python -m nearline.composite.warm``.

Every kernel is compiled with ``cache=True``, but a process compiles (about 12 s of processor
time on two cores) whatever it finds no cache for, and processes started together before any
cache exists (a test session's workers, a composite's MPI ranks) each compile all of them. A
sandboxed run is worse off: it can write nowhere numba's next run would look, so it starts
warm only from the kernels already in nearline's ``__pycache__`` folders
(``nearline.algorithms``' kernel links) and compiles the rest again every run. This makes
those caches before anything else needs them: it synthesizes a short orbit and, for each
reducer, plans its composite and warms it up as a composite's driver does before its workers
fork (every kernel compiled for the types a day's composite calls it with); then it places
points on each kind of grid, as coverages, tiles and the skill scores do. With the caches there
it only loads them (a few seconds).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from nearline.composite._context import prepare
from nearline.composite._reducers import REDUCERS
from nearline.composite._settings import CompositeSettings
from nearline.grid import get_grid
from nearline.swath import synthesize_day

WARM_DAY = "2012-12-12"
WARM_LINES = 60  # scan lines, the fewest an orbit may have: warming up reads two
WARM_GRIDS = ("igh-8km", "latlon-0.25")  # one grid of each kind: each kind has its kernels


def warm_kernels() -> list[str]:
    """Compile (or load from their caches) the kernels of a day's composite, each reducer's.

    Returns
    -------
    list[str]
        The reducers whose kernels were run, in the order they ran.
    """
    with tempfile.TemporaryDirectory(prefix="nearline-warm-") as folder:
        granules = synthesize_day(WARM_DAY, 1, Path(folder), lines_per_orbit=WARM_LINES)
        for reducer in REDUCERS:
            prepare(granules, CompositeSettings.parse(reducer=reducer, workers=1)).warm_up()
    for name in WARM_GRIDS:
        get_grid(name).cell_index(np.array([10.0, -120.0]), np.array([45.0, -30.0]))
    return list(REDUCERS)


if __name__ == "__main__":
    print(f"numba kernels ready for {', '.join(warm_kernels())}")
