"""modis-water-vapour-geos5: MOD05_L2 precipitable water, near-infrared (1 km, daytime) and
infrared (5 km), one day's mean, count and standard deviation per GEOS-5 cell.

Kept: pixels whose value is neither its ``_FillValue`` nor outside its ``valid_range`` and
whose quality byte 0 (``Quality_Assurance_Near_Infrared`` for the near-infrared retrieval,
``Quality_Assurance_Infrared`` for the infrared) says the retrieval is useful (bit 0 set)
with good confidence or better (bits 1-3 at least 2), as the MODIS atmosphere QA plan
defines them. Near-infrared pixels are placed by interpolating the 5 km geolocation
(modis_l2grid.Granule.lonlat_1km); infrared cells sit on the geolocation itself.
"""

from __future__ import annotations

from collections.abc import Iterator

from modis_l2grid import (
    Geos5Grid,
    Granule,
    Observations,
    Reduction,
    Variable,
    main,
    observe_1km,
    qa_byte,
    scaled,
    useful_and_confident,
    valid,
)

QUALITY = "{} valid, and {} byte 0 useful (bit 0) with confidence (bits 1-3) good or very good"
NEAR = Variable(
    name="water_vapour_nir",
    long_name="total column precipitable water vapour, near-infrared retrieval",
    units="cm",
    standard_name="lwe_thickness_of_atmosphere_mass_content_of_water_vapor",
    source="MOD05_L2 Water_Vapor_Near_Infrared",
    quality=QUALITY.format("Water_Vapor_Near_Infrared", "Quality_Assurance_Near_Infrared"),
)
INFRARED = Variable(
    name="water_vapour_ir",
    long_name="total column precipitable water vapour, infrared retrieval",
    units="cm",
    standard_name="lwe_thickness_of_atmosphere_mass_content_of_water_vapor",
    source="MOD05_L2 Water_Vapor_Infrared",
    quality=QUALITY.format("Water_Vapor_Infrared", "Quality_Assurance_Infrared"),
)


def observe(granule: Granule, grid: Geos5Grid) -> Iterator[Observations]:
    near, attrs = granule.read("Water_Vapor_Near_Infrared")
    qa, _ = granule.read("Quality_Assurance_Near_Infrared")
    keep = valid(near, attrs) & useful_and_confident(qa_byte(qa))
    for cells, values in observe_1km(granule, grid, keep, near, attrs):
        yield NEAR.name, cells, values
    del near, qa, keep
    infrared, attrs = granule.read("Water_Vapor_Infrared")
    qa, _ = granule.read("Quality_Assurance_Infrared")
    keep = valid(infrared, attrs) & useful_and_confident(qa_byte(qa))
    lon, lat = granule.lonlat_5km()
    yield INFRARED.name, grid.cells(lon[keep], lat[keep]), scaled(infrared[keep], attrs)


REDUCTION = Reduction(
    algorithm="modis-water-vapour-geos5",
    products=("MOD05_L2", "MYD05_L2"),
    prefix="water-vapour",
    title="MODIS total precipitable water vapour (MOD05_L2)",
    variables=(NEAR, INFRARED),
    observe=observe,
)

if __name__ == "__main__":
    main(REDUCTION)
