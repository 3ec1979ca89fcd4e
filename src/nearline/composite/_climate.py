"""Temporal composites: daily composite files into 10-day and monthly ones.

The daily files are the driver's output (CF netCDF, variables on (y, x), packed as
:mod:`~nearline.composite._base` declares, global attributes ``reducer`` and
``time_coverage_start``). Each row block of every input is turned back into a reducer state
(:meth:`Reducer.restore`), the states are merged (:meth:`Reducer.merge`: for max-ndvi the
clear maximum-NDVI day of each cell wins with all 12 bands), and the block is finished and
written before the next is read, so memory is bounded by ``block_rows`` rows of the grid
times the number of inputs, whatever the grid size. Periods are the driver's: days 1-10,
11-20 and 21 to the month's end, or the calendar month.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from nearline.composite._chunks import CHUNK_COLUMNS
from nearline.composite._periods import period_label, period_window
from nearline.composite._reducers import get_reducer
from nearline.composite._settings import Period
from nearline.durable import discard, publish, temporary_path
from nearline.errors import CompositeError, ConfigError

BLOCK_ROWS = 256


def temporal_composite(
    paths: Sequence[Path],
    out: Path,
    *,
    period: str | Period,
    block_rows: int = BLOCK_ROWS,
    progress: Callable[[str, int, int], None] | None = None,
) -> Path:
    """Combine the daily composites ``paths`` into one ``period`` composite at ``out``.

    Every input must come from the same reducer and grid and fall inside one period (the
    one holding the earliest input). The result is written under a temporary name and
    renamed into place when complete. Returns ``out``.
    """
    import netCDF4

    period = _period(period)
    if not paths:
        raise ConfigError("temporal_composite: no input files given")
    if block_rows < 1:
        raise ConfigError(f"block_rows: expected at least 1, got {block_rows!r}")
    inputs = [_open(netCDF4, Path(path)) for path in paths]
    try:
        days = [_first_day(handle, Path(path)) for handle, path in zip(inputs, paths, strict=True)]
        window = period_window(min(days), period)
        reducer_name = _check(inputs, paths, days, window, period)
        reducer = get_reducer(reducer_name)
        variables = reducer.variables()
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        temporary = temporary_path(out)
        discard(temporary)
        try:
            _write(netCDF4, temporary, inputs, paths, reducer, variables, window, period,
                   block_rows, progress)  # fmt: skip
        except BaseException:
            discard(temporary)
            raise
        publish(temporary, out)
    finally:
        for handle in inputs:
            handle.close()
    return out


def _write(
    netCDF4: Any, temporary: Path, inputs: list[Any], paths: Sequence[Path], reducer: Any,
    variables: list[Any], window: tuple[date, date], period: Period, block_rows: int,
    progress: Callable[[str, int, int], None] | None,
) -> None:  # fmt: skip
    first = inputs[0]
    height, width = len(first.dimensions["y"]), len(first.dimensions["x"])
    names = {variable.name for variable in variables}
    with netCDF4.Dataset(temporary, "w", format="NETCDF4") as target:
        attrs = {key: first.getncattr(key) for key in first.ncattrs()}
        attrs.update(
            title=f"AVHRR {reducer.name} composite, {period_label(window)}",
            period=period.value,
            time_coverage_start=window[0].isoformat(),
            time_coverage_end=window[1].isoformat(),
            input_files=" ".join(Path(path).name for path in paths),
        )
        target.setncatts(attrs)
        for name, dimension in first.dimensions.items():
            target.createDimension(name, len(dimension))
        for name, source in first.variables.items():  # coordinates and grid mapping
            if name in names:
                continue
            copy = target.createVariable(name, source.dtype, source.dimensions)
            copy.setncatts({key: source.getncattr(key) for key in source.ncattrs()})
            copy.set_auto_maskandscale(False)
            copy[...] = source[...]
        chunks = (min(height, block_rows), min(width, CHUNK_COLUMNS))
        outputs = {}
        for variable in variables:
            handle = target.createVariable(
                variable.name, np.dtype(variable.dtype), ("y", "x"), zlib=True, complevel=1,
                shuffle=True, chunksizes=chunks, fill_value=variable.fill,
            )  # fmt: skip
            handle.setncatts(dict(variable.attrs))
            handle.set_auto_maskandscale(False)
            outputs[variable.name] = handle
        for done, start in enumerate(range(0, height, block_rows), start=1):
            stop = min(start + block_rows, height)
            state = None
            for source in inputs:
                block = {name: source.variables[name][start:stop, :].reshape(-1) for name in names}
                restored = reducer.restore(block)
                if state is None:
                    state = restored
                else:
                    reducer.merge(state, restored)
            finished = reducer.finish(state)
            for name, handle in outputs.items():
                handle[start:stop, :] = finished[name].reshape(stop - start, width)
            if progress is not None:
                progress("climate", done, -(-height // block_rows))


def _open(netCDF4: Any, path: Path) -> Any:
    try:
        handle = netCDF4.Dataset(path, "r")
    except OSError as error:
        raise CompositeError(f"{path} is not a readable netCDF composite: {error}") from error
    handle.set_auto_maskandscale(False)
    return handle


def _period(period: str | Period) -> Period:
    try:
        chosen = Period(period)
    except ValueError:
        raise ConfigError(f"period: expected 10day or month, got {period!r}") from None
    if chosen is Period.DAY:
        raise ConfigError("period: a temporal composite covers 10day or month, not day")
    return chosen


def _first_day(handle: Any, path: Path) -> date:
    try:
        return date.fromisoformat(str(handle.getncattr("time_coverage_start"))[:10])
    except (AttributeError, ValueError) as error:
        raise CompositeError(
            f"{path} has no usable time_coverage_start attribute; is it a nearline composite?"
        ) from error


def _check(
    inputs: list[Any], paths: Sequence[Path], days: list[date], window: tuple[date, date],
    period: Period,
) -> str:  # fmt: skip
    """The common reducer name; every input of one grid and inside ``window``."""
    first, first_path = inputs[0], Path(paths[0])
    shape = (len(first.dimensions["y"]), len(first.dimensions["x"]))
    if "reducer" not in first.ncattrs():
        raise CompositeError(f"{first_path} has no reducer attribute; is it a nearline composite?")
    reducer = str(first.getncattr("reducer"))
    for handle, path, day in zip(inputs, paths, days, strict=True):
        path = Path(path)
        if "reducer" not in handle.ncattrs() or str(handle.getncattr("reducer")) != reducer:
            raise CompositeError(
                f"{path} was not made by the {reducer} reducer of {first_path.name}; "
                "combine files of one reducer"
            )
        found = (len(handle.dimensions["y"]), len(handle.dimensions["x"]))
        if found != shape:
            raise CompositeError(
                f"{path} is on a {found[0]}x{found[1]} grid, {first_path.name} on "
                f"{shape[0]}x{shape[1]}; combine files of one grid"
            )
        if not window[0] <= day <= window[1]:
            raise CompositeError(
                f"{path} covers {day}, outside the {period.value} {window[0]}..{window[1]} "
                f"of the earliest input; combine each period separately"
            )
    return reducer
