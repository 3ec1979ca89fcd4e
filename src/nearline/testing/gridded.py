"""Gridded collections for tests and conformance runs: a composite made from a short
synthetic day, and catalogue items for composites as the composites' reader catalogues them
(``nearline:grid``, ``nearline:bands``, the day's period, the file as the ``data`` asset)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import netCDF4

from nearline.archive import Asset, Item
from nearline.grid import get_grid


def make_composite(folder: Path, day: str = "2012-12-12", *, orbits: int = 2) -> Path:
    """``orbits`` short NOAA-19 orbits of ``day`` (2,000 lines each) composited to igh-8km in
    ``folder`` (two: 4 MB, a minute on one core); the composite's path."""
    import nearline.composite as composite
    from nearline.swath import synthesize_day

    granules = synthesize_day(day, orbits, folder / "orbits", lines_per_orbit=2000)
    out = folder / f"pathfinder-igh-8km-day-{day}.nc"
    composite.run(granules, out=out, grid="igh-8km", workers=1)
    return out


def composite_item(path: Path, collection: str, day: datetime, owner: str | None = None) -> Item:
    """The composite at ``path`` as an item of ``collection`` covering ``day`` (UTC).

    Parameters
    ----------
    path
        A composite nearline wrote.
    collection
        The gridded collection's id.
    day
        The composite's day, timezone-aware.
    owner
        None for the archive's own; else the user who alone sees it.
    """
    with netCDF4.Dataset(path) as dataset:
        grid = str(dataset.grid)
        bands = [name for name, v in dataset.variables.items() if v.dimensions == ("y", "x")]
    # the grid's own latitudes (igh-8km stops 0.13 degrees short of the poles): a box to the
    # poles has no place in Web Mercator, and GDAL 3.6 fails on one it projects there
    south, north = get_grid(grid).latitude_range((0, get_grid(grid).height))
    ring = [[-180.0, south], [180.0, south], [180.0, north], [-180.0, north], [-180.0, south]]
    return Item(
        id=f"{collection}-{day:%Y-%m-%d}",
        collection=collection,
        start=day,
        end=day + timedelta(days=1) - timedelta(seconds=1),
        geometry={"type": "Polygon", "coordinates": [ring]},
        bbox=(-180.0, south, 180.0, north),
        properties={"nearline:grid": grid, "nearline:bands": bands},
        assets={"data": Asset(location=str(path), media_type="application/x-netcdf")},
        owner=owner,
    )
