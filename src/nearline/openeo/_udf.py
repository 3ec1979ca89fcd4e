"""``run_udf`` with Python code, run in this process by the openEO client's own UDF machinery
(``openeo.udf.run_code.run_udf_code``: ``apply_datacube(cube, context)`` on an
``xarray.DataArray`` or an ``XarrayDataCube``, or a function of ``UdfData``).

It runs the user's code with no wall of its own: it is the runner of a batch job, whose whole
run is already inside nearline's sandbox (no network, only the run's own files, its memory,
CPU, process and disk limits). The synchronous ``/result`` never calls it."""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np
import xarray as xr

from nearline.errors import OpenEOError

UDF_FILE = "<string>"  # what exec (run_udf_code) names the UDF's lines in a traceback


def run_udf_in_process(data: Any, code: str, runtime: str, context: Any) -> Any:
    """The cube ``code``'s UDF makes of ``data``: the :class:`~nearline.openeo.UdfRunner` of
    a run already inside the sandbox.

    Parameters
    ----------
    data
        The cube (an ``xarray.DataArray``) ``run_udf`` was given, or the bare values
        ``apply`` gives its callback (the UDF sees them as an unlabelled DataArray).
    code
        The UDF's Python source.
    runtime
        ``Python`` (the graph's runtime, checked before).
    context
        The UDF's ``context`` (None: an empty one).

    Returns
    -------
    xarray.DataArray or numpy.ndarray
        The UDF's cube (bare values where it was given bare values).

    Raises
    ------
    OpenEOError
        The code does not compile, defines no UDF, raises, or returns no cube
        (``ProcessParameterInvalid``, 400), the message naming the UDF's line.
    """
    from openeo.udf import UdfData, XarrayDataCube
    from openeo.udf.run_code import run_udf_code

    if not isinstance(code, str) or not code.strip():
        raise _udf_error("run_udf: the udf argument holds no code")
    try:
        compile(code, UDF_FILE, "exec")
    except SyntaxError as error:
        raise _udf_error(
            f"run_udf: the UDF does not compile: {error.msg} (line {error.lineno})"
        ) from None
    labelled = isinstance(data, xr.DataArray)  # apply hands its callback bare values
    cube = data if labelled else xr.DataArray(np.asarray(data))
    udf_data = UdfData(datacube_list=[XarrayDataCube(cube)], user_context=context or {})
    try:
        result = run_udf_code(code, udf_data)
    except MemoryError:
        raise  # the run's memory limit: the job's program says so
    except Exception as error:  # the user's code: whatever it raises is its own
        raise _udf_error(f"run_udf: the UDF raised {_said(error)}{_where(error)}") from None
    cubes = result.get_datacube_list() or []
    if len(cubes) != 1:
        raise _udf_error(f"run_udf: the UDF gave {len(cubes)} cubes; it must give one "
                         "(apply_datacube returns the cube)")  # fmt: skip
    made = cubes[0].get_array()
    return made if labelled else np.asarray(made)


def _udf_error(message: str) -> OpenEOError:
    return OpenEOError(message, status=400, openeo_code="ProcessParameterInvalid")


def _said(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:300]}" if text else type(error).__name__


def _where(error: BaseException) -> str:
    """`` at line N of the UDF``, where the UDF's own code raised."""
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__)
             if frame.filename == UDF_FILE]  # fmt: skip
    return f" at line {lines[-1]} of the UDF" if lines else ""
