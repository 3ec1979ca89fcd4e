"""modis-lst-geos5: MOD11_L2 land surface temperature, one day's mean, count and standard
deviation per GEOS-5 cell.

Kept: pixels whose ``LST`` is neither its ``_FillValue`` nor outside its ``valid_range`` and
whose ``QC`` mandatory QA (bits 0-1) is 00, "LST produced, good quality". (``QC``'s own
``_FillValue`` is 0, which is also "good quality, nothing to report": QC is read as bits
only.) LST is on the 1 km swath; each kept pixel is placed by interpolating the 5 km
geolocation (modis_l2grid.Granule.lonlat_1km).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from modis_l2grid import Geos5Grid, Granule, Observations, Reduction, Variable, main, observe_1km
from modis_l2grid import valid as valid_values

LST = Variable(
    name="lst",
    long_name="land surface temperature",
    units="K",
    standard_name="surface_temperature",
    source="MOD11_L2 LST",
    quality="LST valid and QC mandatory QA bits 0-1 equal to 00 (good quality)",
)


def observe(granule: Granule, grid: Geos5Grid) -> Iterator[Observations]:
    lst, attrs = granule.read("LST")
    qc, _ = granule.read("QC")
    keep = valid_values(lst, attrs) & ((qc.astype(np.uint8) & 0b11) == 0)
    for cells, values in observe_1km(granule, grid, keep, lst, attrs):
        yield "lst", cells, values


REDUCTION = Reduction(
    algorithm="modis-lst-geos5",
    products=("MOD11_L2", "MYD11_L2"),
    prefix="lst",
    title="MODIS land surface temperature (MOD11_L2)",
    variables=(LST,),
    observe=observe,
)

if __name__ == "__main__":
    main(REDUCTION)
