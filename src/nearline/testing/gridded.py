"""Gridded collections for tests and conformance runs.

- :func:`write_gridded`: a hand-made gridded file on a named grid, laid out as nearline's
  composites are (one CF netCDF-4 file of (y, x) bands chunked 128 x 1024,
  ``product = "nearline-composite"``, the period in ``time_coverage_start/end``), whose every
  cell holds a value of its own: what a coverage test reads back exactly, and what the EDR and
  Coverages suites' servers serve, in a second or two rather than the minute a synthetic
  day's composite takes.
- :func:`write_reduction`: a hand-made daily file laid out as the GEOS-5 reductions write
  theirs (docs/reductions.md): (time, lat, lon) variables with one time, latitudes south to
  north, no ``product`` attribute, the grid named by ``grid``; its cell (row, col), counted
  from the north as the grid counts, holds :func:`cell_value` of that row and column.
- :func:`make_composite`: a real composite of a short synthetic day (the tiles' tests draw its
  bands and NDVI); ``nearline.archive.ingest`` catalogues either as a gridded item.
"""

from __future__ import annotations

from pathlib import Path

import netCDF4
import numpy as np

from nearline.grid import get_grid

FILL = -32768
SCALE = 1e-4
CHUNKS = (128, 1024)
AEROSOL_OPTICAL_DEPTH = "atmosphere_optical_thickness_due_to_ambient_aerosol_particles"
REDUCTION_FILL = 9.96921e36  # netCDF's default float fill, which the reductions keep


def cell_value(row: np.ndarray, col: np.ndarray, day: int = 0, *, width: int = 5004) -> np.ndarray:
    """The stored value of cell (``row``, ``col``) on ``day``: scrambled so that chunks
    compress as real data does (a smooth pattern would make the file a few kilobytes).

    Parameters
    ----------
    row, col
        Cell indices (broadcast together).
    day
        Which day's file.
    width
        The grid's width, in cells.
    """
    mixed = (np.asarray(row, np.int64) * width + col + day * 7) * 2654435761 % 4294967296
    return (mixed % 20001 - 10000).astype(np.int16)


def write_gridded(path: Path, *, day: str = "2012-12-12", number: int = 0,
                  grid: str = "igh-8km", bands: tuple[str, ...] = ("ndvi",)) -> Path:  # fmt: skip
    """Write a gridded file of ``bands`` (packed int16, scale 1e-4) at ``path``: the first
    holds :func:`cell_value` of day ``number``, the k-th that of day ``number + 31 * k``
    (its magnitude for any band but ``ndvi``: reflectances are not negative).

    Parameters
    ----------
    path
        The file to write.
    day
        Its period (an ISO date), as a daily composite's.
    number
        Which day this is, for :func:`cell_value`.
    grid
        The grid's name.
    bands
        The bands' names (the composites' red and near-infrared: ``refl1``, ``refl2``).
    """
    chosen = get_grid(grid)
    x, y, crs_attrs = chosen.coordinates()
    x_attrs, y_attrs = chosen.axis_attributes()
    with netCDF4.Dataset(path, "w") as dataset:
        dataset.setncatts({"product": "nearline-composite", "grid": chosen.name,
                           "Conventions": "CF-1.10", "time_coverage_start": day,
                           "time_coverage_end": day, "title": f"test grid, {day}"})  # fmt: skip
        for name, values, attrs in (("y", y, y_attrs), ("x", x, x_attrs)):
            dataset.createDimension(name, values.size)
            axis = dataset.createVariable(name, "f8", (name,))
            axis.setncatts(attrs)
            axis[:] = values
        dataset.createVariable("crs", "i4", ()).setncatts(crs_attrs)
        rows = np.arange(chosen.height)[:, None]
        for k, name in enumerate(bands):
            band = dataset.createVariable(name, "i2", ("y", "x"), fill_value=FILL, zlib=True,
                                          complevel=1, chunksizes=CHUNKS)  # fmt: skip
            long_name = ("normalized difference vegetation index" if name == "ndvi"
                         else f"test band {name}")  # fmt: skip
            band.setncatts({"scale_factor": SCALE, "grid_mapping": "crs", "units": "1",
                            "long_name": long_name})  # fmt: skip
            band.set_auto_maskandscale(False)
            columns = np.arange(chosen.width)[None, :]
            values = cell_value(rows, columns, number + 31 * k, width=chosen.width)
            band[...] = values if name == "ndvi" else np.abs(values)
    return path


def write_reduction(path: Path, *, day: str = "2012-12-12", number: int = 0,
                    grid: str = "geos5-1x1.25") -> Path:  # fmt: skip
    """Write a reduction-like daily file of two variables, ``aod_550_mean`` (float32, the
    grid's cell value / 1000, fill 9.96921e36 in every 7th cell) and ``aod_550_count``
    (int32), at ``path``.

    Parameters
    ----------
    path
        The file to write.
    day
        The day it reduces (an ISO date).
    number
        Which day this is, for :func:`cell_value`.
    grid
        A GEOS-5 (or other lat-lon) grid's name.
    """
    from datetime import date

    chosen = get_grid(grid)
    lon, lat = chosen.centre_lonlat()
    latitudes = lat[::-1, 0]  # south to north, as CF files usually are
    longitudes = lon[0, :]
    rows = np.arange(chosen.height)[:, None]
    values = cell_value(rows, np.arange(chosen.width)[None, :], number, width=chosen.width)
    mean = (values / 1000.0).astype(np.float32)
    mean[(rows + np.arange(chosen.width)[None, :]) % 7 == 0] = REDUCTION_FILL
    epoch_days = (date.fromisoformat(day) - date(1970, 1, 1)).days
    with netCDF4.Dataset(path, "w") as dataset:
        dataset.setncatts({"Conventions": "CF-1.8", "grid": chosen.name,
                           "title": f"test reduction on {chosen.name}, {day}",
                           "time_coverage_start": f"{day}T00:00:00Z",
                           "time_coverage_end": f"{day}T23:59:59Z"})  # fmt: skip
        for name, size in (("time", 1), ("lat", chosen.height), ("lon", chosen.width)):
            dataset.createDimension(name, size)
        axes = (("time", [epoch_days + 0.5], {"units": "days since 1970-01-01 00:00:00",
                                              "standard_name": "time", "axis": "T"}),
                ("lat", latitudes, {"units": "degrees_north", "standard_name": "latitude",
                                    "axis": "Y"}),
                ("lon", longitudes, {"units": "degrees_east", "standard_name": "longitude",
                                     "axis": "X"}))  # fmt: skip
        for name, axis_values, attrs in axes:
            axis = dataset.createVariable(name, "f8", (name,))
            axis.setncatts(attrs)
            axis[:] = axis_values
        band = dataset.createVariable("aod_550_mean", "f4", ("time", "lat", "lon"), zlib=True,
                                      fill_value=np.float32(REDUCTION_FILL))  # fmt: skip
        band.setncatts({"units": "1", "long_name": "daily mean aerosol optical depth at 550 nm",
                        "standard_name": AEROSOL_OPTICAL_DEPTH})  # fmt: skip
        band.set_auto_maskandscale(False)
        band[0] = mean[::-1]
        count = dataset.createVariable("aod_550_count", "i4", ("time", "lat", "lon"), zlib=True)
        count.setncatts({"units": "1", "long_name": "number of aerosol observations kept"})
        count[0] = (np.abs(values) % 50).astype(np.int32)[::-1]
    return path


def make_composite(folder: Path, day: str = "2012-12-12", *, orbits: int = 2) -> Path:
    """``orbits`` short NOAA-19 orbits of ``day`` (2,000 lines each) composited to igh-8km in
    ``folder`` (two: 4 MB, a minute on one core); the composite's path."""
    import nearline.composite as composite
    from nearline.swath import synthesize_day

    granules = synthesize_day(day, orbits, folder / "orbits", lines_per_orbit=2000)
    out = folder / f"pathfinder-igh-8km-day-{day}.nc"
    composite.run(granules, out=out, grid="igh-8km", workers=1)
    return out
