"""modis-aerosol-geos5: MOD04_L2 aerosol optical depth at 550 nm, one day's mean, count and
standard deviation per GEOS-5 cell.

The field is ``AOD_550_Dark_Target_Deep_Blue_Combined`` where the file has it (Collections 6
and 6.1: the Dark Target retrieval over ocean and dark land merged with Deep Blue over bright
land), else ``Optical_Depth_Land_And_Ocean`` (Collections 4 and 5: Dark Target, land and
ocean). Kept: every value that is neither the field's ``_FillValue`` nor outside its
``valid_range``, decoded as MODIS defines it (``scale_factor * (stored - add_offset)``). No
quality flag is applied (``Land_Ocean_Quality_Flag`` or the combined field's own QA flag), so
each cell's mean is the plain mean of the file's valid values. Each value sits on the
granule's own 10 km ``Latitude``/``Longitude``.
"""

from __future__ import annotations

from collections.abc import Iterator

from modis_l2grid import (
    Geos5Grid,
    Granule,
    Observations,
    Reduction,
    ReductionError,
    Variable,
    main,
    scaled,
    valid,
)

FIELDS = ("AOD_550_Dark_Target_Deep_Blue_Combined", "Optical_Depth_Land_And_Ocean")
AOD = Variable(
    name="aod_550",
    long_name="aerosol optical depth at 550 nm",
    units="1",
    standard_name="atmosphere_optical_thickness_due_to_ambient_aerosol_particles",
    source="MOD04_L2 AOD_550_Dark_Target_Deep_Blue_Combined (Collections 6, 6.1) or "
    "Optical_Depth_Land_And_Ocean (Collections 4, 5)",
    quality="every valid value (not its _FillValue, within its valid_range); no quality flag "
    "applied: the plain mean of the file's valid values",
)


def observe(granule: Granule, grid: Geos5Grid) -> Iterator[Observations]:
    for name in FIELDS:
        try:
            stored, attrs = granule.read(name)
        except ReductionError:
            continue
        keep = valid(stored, attrs)
        lon, lat = granule.lonlat_5km()  # the file's own geolocation, 10 km here
        yield AOD.name, grid.cells(lon[keep], lat[keep]), scaled(stored[keep], attrs)
        return
    raise ReductionError(f"{granule.name}: has neither {' nor '.join(FIELDS)}")


REDUCTION = Reduction(
    algorithm="modis-aerosol-geos5",
    products=("MOD04_L2", "MYD04_L2"),
    prefix="aerosol",
    title="MODIS aerosol optical depth at 550 nm (MOD04_L2)",
    variables=(AOD,),
    observe=observe,
)

if __name__ == "__main__":
    main(REDUCTION)
