"""composite: the AVHRR Pathfinder chain — calibrate, cloud-mask, terrain-correct, register
and composite a period of orbits into one global image, partitioned into latitude bands, out
of core when needed, fed by input data servers; and Climate's 10-day and monthly composites.

``run(inputs, out=..., grid="igh-8km")`` does it all; the pieces are importable for use on
their own.
"""

from __future__ import annotations

from nearline.composite._base import OutputVariable, Reducer
from nearline.composite._climate import temporal_composite
from nearline.composite._driver import CompositeResult, run
from nearline.composite._mpi_run import world
from nearline.composite._reducers import REDUCERS, get_reducer
from nearline.composite._settings import CompositeSettings, OnError, Period
from nearline.composite._skill import SKILL_HEADERS, score_day, skill_table

__all__ = [
    "REDUCERS",
    "SKILL_HEADERS",
    "CompositeResult",
    "CompositeSettings",
    "OnError",
    "OutputVariable",
    "Period",
    "Reducer",
    "get_reducer",
    "run",
    "score_day",
    "skill_table",
    "temporal_composite",
    "world",
]
