"""Running a checked process graph: openeo-pg-parser-networkx walks it, openeo-processes-dask's
implementations run the generic processes on xarray (reducers, ``apply``, ``ndvi``, the
filters, ``aggregate_temporal_period``, ``merge_cubes``, ``mask``, ``resample_spatial``), and
nearline's own run what only a back-end can: ``load_collection`` (the catalogue's files, read
by nearline.coverage), ``save_result`` and ``run_udf`` (the user's code, in whatever the
caller gives: a batch job runs the whole graph inside the sandbox already).

The libraries are imported on first use: they take ~2.7 s and ~300 MB, which a server that
never runs a graph should not pay."""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from nearline.errors import NearlineError, OpenEOError
from nearline.openeo._load import Stack, cut_to_box, load_cube, with_common_names
from nearline.openeo._processes import PROCESS_IDS, process_spec
from nearline.openeo._save import Saved, save

logger = logging.getLogger(__name__)

UdfRunner = Callable[[Any, str, str, Any], Any]  # (data, code, runtime, context) -> data
# the processes openeo-processes-dask implements (nearline's own filter_bbox, merge_cubes and
# resample_spatial call its implementations after their own part); the rest are nearline's
LIBRARY = tuple(
    process_id for process_id in PROCESS_IDS
    if process_id not in ("load_collection", "save_result", "run_udf")
)  # fmt: skip
# the processes over arrays: called on a JSON array (the processes' own tests send them so),
# they receive it as numpy, null as NaN, as openeo-processes-dask's implementations expect
ARRAY_PROCESSES = ("mean", "median", "max", "min", "sum", "count")


@dataclass
class Run:
    """One graph's run: where it finds collections and writes results, its limit on values
    read, how it runs UDFs, and what it saved.

    Parameters
    ----------
    stacks
        Each collection the graph loads, by id.
    folder
        Where results are written.
    max_values
        Values the graph's loads may read at most, all together: a graph of many loads, each
        under the limit, would otherwise hold their sum in memory.
    udf
        Runs a UDF on a cube; None: ``run_udf`` is refused.
    """

    stacks: Mapping[str, Stack]
    folder: Path
    max_values: int
    udf: UdfRunner | None = None
    saved: list[Saved] = field(default_factory=list)
    loaded: int = 0  # values the graph's loads have read so far

    def load_collection(self, id: str, spatial_extent: Any = None,
                        temporal_extent: Any = None, bands: Any = None,
                        properties: Any = None, **_: Any) -> Any:  # fmt: skip
        stack = self.stacks.get(id)
        if stack is None:
            raise OpenEOError(f"collection {id!r} does not exist, or is not yours to load",
                              status=404, openeo_code="CollectionNotFound")  # fmt: skip
        left = self.max_values - self.loaded
        try:
            cube = load_cube(stack, spatial_extent=spatial_extent, bands=bands,
                             temporal_extent=temporal_extent, max_values=left)  # fmt: skip
        except OpenEOError as error:
            if error.openeo_code == "ProcessGraphComplexity" and self.loaded:
                message = (f"load_collection {id}: more values than the {left:,} left: this "
                           f"graph's earlier loads read {self.loaded:,} values of the "
                           f"{self.max_values:,} its loads may read together; ask for smaller "
                           "boxes, fewer bands or times")  # fmt: skip
                raise OpenEOError(message, status=400, openeo_code=error.openeo_code) from None
            raise
        self.loaded += cube.size
        return cube

    def save_result(self, data: Any, format: str, options: Any = None,
                    **_: Any) -> bool:  # fmt: skip
        stem = "result" if not self.saved else f"result-{len(self.saved) + 1}"
        self.saved.append(save(data, format, self.folder, stem=stem))
        return True

    def filter_bbox(self, data: Any, extent: Any, **_: Any) -> Any:
        cut = cut_to_box(data, extent)
        return cut if cut is not None else _library_processes()["filter_bbox"](data, extent)

    def merge_cubes(self, cube1: Any, cube2: Any, overlap_resolver: Any = None,
                    context: Any = None, **_: Any) -> Any:  # fmt: skip
        # the bands' common names are a coordinate of each cube's own bands: dropped before
        # the merge (whose bands differ) and named afresh for the merged bands
        merge = _library_processes()["merge_cubes"]
        plain = [cube.drop_vars("common_name", errors="ignore") if hasattr(cube, "drop_vars")
                 else cube for cube in (cube1, cube2)]  # fmt: skip
        merged = merge(*plain, overlap_resolver=overlap_resolver, context=context)
        return with_common_names(merged) if hasattr(merged, "dims") else merged

    def resample_spatial(self, data: Any, projection: Any = None, resolution: Any = 0,
                         method: str = "near", align: str = "upper-left",
                         **_: Any) -> Any:  # fmt: skip
        check_resampled_size(data, projection, resolution, self.max_values)
        return _library_processes()["resample_spatial"](
            data, projection=projection, resolution=resolution, method=method, align=align
        )

    def run_udf(self, data: Any, udf: str, runtime: str, version: str | None = None,
                context: Any = None, **_: Any) -> Any:  # fmt: skip
        if str(runtime).lower() != "python":
            raise OpenEOError(f"run_udf: runtime {runtime!r} is not offered; GET /udf_runtimes "
                              "lists Python", status=400, openeo_code="InvalidRuntime")  # fmt: skip
        if self.udf is None:
            message = "run_udf: UDFs run only in nearline's sandbox; send this graph as a batch job"
            raise OpenEOError(message, status=400, openeo_code="FeatureUnsupported")
        return self.udf(data, udf, runtime, context)


def run_graph(graph: Mapping[str, Any], run: Run) -> list[Saved]:
    """Run ``graph`` (checked by :func:`~nearline.openeo.process_graph_of`); its result is
    saved as netCDF (a cube) or JSON (a value) if it saves nothing itself.

    Parameters
    ----------
    graph
        The flat process graph.
    run
        Where it reads and writes.

    Returns
    -------
    list of Saved
        The files written, in the order saved.

    Raises
    ------
    OpenEOError
        The graph's arguments do not fit its processes (400, with the process's own openEO
        code where it names one), or a process failed (500).
    """
    parser, process_wrapper = _libraries()
    try:
        parsed = parser(dict(graph))
    except Exception as error:  # pydantic's ValidationError, and the parser's own
        raise OpenEOError(f"the process graph's arguments do not fit: {_first_line(error)}",
                          status=400, openeo_code="ProcessGraphInvalid") from None  # fmt: skip
    registry = _registry(run, process_wrapper)
    try:
        result = parsed.to_callable(process_registry=registry)()
    except NearlineError:
        raise
    except MemoryError:
        batch = "" if run.udf is not None else " or run it as a batch job"  # not one already
        message = (
            f"the process graph ran out of memory; ask for less (a smaller box, fewer times){batch}"
        )
        raise OpenEOError(message, status=400, openeo_code="ProcessGraphComplexity") from None
    except Exception as error:
        raise _refusal(error) from error
    if not run.saved:
        run.save_result(result, "JSON" if _is_value(result) else "netCDF")
    return run.saved


def check_resampled_size(data: Any, projection: Any, resolution: Any, max_values: int) -> None:
    """Refuse a resampling whose cube would hold over ``max_values`` values (a resolution of
    a metre over a continent would exhaust the server's memory before anything refused it).

    Raises
    ------
    OpenEOError
        Over the limit (``ProcessGraphComplexity``), or a resolution that is not a positive
        number (``ProcessParameterInvalid``).
    """
    steps = resolution if isinstance(resolution, list | tuple) else [resolution, resolution]
    if len(steps) != 2 or not all(isinstance(step, int | float) and step >= 0 for step in steps):
        raise OpenEOError(f"resample_spatial: resolution {resolution!r} must be a number >= 0, "
                          "or two", status=400, openeo_code="ProcessParameterInvalid")  # fmt: skip
    if not steps[0] or not steps[1] or not hasattr(data, "rio"):
        return  # the cells' own size, or not a cube: no bigger than what was loaded
    target = projection if projection is not None else data.rio.crs
    try:
        west, south, east, north = data.rio.transform_bounds(target)
    except Exception:  # an unknown projection: the library refuses it, saying so
        return
    cells = math.ceil(abs(east - west) / steps[0]) * math.ceil(abs(north - south) / steps[1])
    others = math.prod(size for dim, size in data.sizes.items() if dim not in ("x", "y"))
    if cells * others > max_values:
        raise OpenEOError(
            f"resample_spatial to {resolution} would make {cells * others:,} values, over this "
            f"service's limit of {max_values:,}; resample a smaller box or to coarser cells",
            status=400, openeo_code="ProcessGraphComplexity",
        )  # fmt: skip


def _refusal(error: Exception) -> OpenEOError:
    """What a process raised, as openEO's error: the library's own openEO exceptions keep
    their names as codes; a wrong type or value is the graph's (400); anything else is ours
    (500, logged)."""
    from openeo_processes_dask.process_implementations.exceptions import OpenEOException

    if isinstance(error, OpenEOException):
        return OpenEOError(_first_line(error), status=400, openeo_code=type(error).__name__)
    if isinstance(error, TypeError | ValueError | KeyError | IndexError):
        return OpenEOError(f"a process refused its arguments: {_first_line(error)}",
                           status=400, openeo_code="ProcessParameterInvalid")  # fmt: skip
    logger.exception("process graph failed")
    return OpenEOError(f"the process graph failed: {type(error).__name__}", status=500,
                       openeo_code="Internal")  # fmt: skip


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]


def _is_value(result: Any) -> bool:
    import xarray as xr

    return not isinstance(result, xr.DataArray)


@cache
def _libraries() -> tuple[Callable[[dict[str, Any]], Any], Callable[..., Any]]:
    """openeo-pg-parser-networkx's graph and openeo-processes-dask's ``process`` wrapper
    (which resolves a callback's parameters), imported once."""
    from openeo_pg_parser_networkx import OpenEOProcessGraph
    from openeo_processes_dask.process_implementations.core import process

    return OpenEOProcessGraph, process


@cache
def _library_processes() -> dict[str, Callable[..., Any]]:
    # it warns, at import, of its machine-learning processes, which nearline does not offer
    logging.getLogger("openeo_processes_dask.process_implementations").setLevel(logging.ERROR)
    import openeo_processes_dask.process_implementations as implementations

    # a process named as a builtin is the module's with an underscore (``_max``)
    return {
        process_id: getattr(implementations, process_id, None)
        or getattr(implementations, f"_{process_id}")
        for process_id in LIBRARY
    }


def _registry(run: Run, process_wrapper: Callable[..., Any]) -> Any:
    """The processes of this run: the library's and ``run``'s own, each with its official
    specification."""
    from openeo_pg_parser_networkx import ProcessRegistry
    from openeo_pg_parser_networkx.process_registry import Process

    registry = ProcessRegistry(wrap_funcs=[process_wrapper])
    own = {"load_collection": run.load_collection, "save_result": run.save_result,
           "run_udf": run.run_udf, "filter_bbox": run.filter_bbox,
           "merge_cubes": run.merge_cubes, "resample_spatial": run.resample_spatial}  # fmt: skip
    for process_id, implementation in {**_library_processes(), **own}.items():
        if process_id in ARRAY_PROCESSES:
            implementation = _on_json_arrays(process_id, implementation)
        elif process_id == "linear_scale_range":
            implementation = _keeping_nodata(implementation)
        registry["predefined", process_id] = Process(process_spec(process_id), implementation)
    return registry


def _on_json_arrays(process_id: str, implementation: Callable[..., Any]) -> Callable[..., Any]:
    """``implementation`` taking a JSON array (a list; the parser hands an empty one over as
    its ``TemporalIntervals``) as numpy, null as NaN; an empty array's reduction is null
    (its count 0), as the processes' specifications say."""
    import numpy as np

    def on_arrays(*args: Any, **kwargs: Any) -> Any:
        data = kwargs.get("data", args[0] if args else None)
        if not isinstance(data, list) and type(data).__name__ != "TemporalIntervals":
            return implementation(*args, **kwargs)
        values = list(getattr(data, "root", data))
        condition = kwargs.get("condition")
        if process_id == "count" and (condition is None or condition is True):
            # any value counts, a text too: the valid ones, or all of them
            return len(values) if condition else sum(v is not None for v in values)
        if not values:
            return 0 if process_id == "count" else None
        array = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        if args:
            args = (array, *args[1:])
        else:
            kwargs = {**kwargs, "data": array}
        return implementation(*args, **kwargs)

    return _named_as(on_arrays, implementation)


def _keeping_nodata(implementation: Callable[..., Any]) -> Callable[..., Any]:
    """``linear_scale_range`` of a number's nodata (null): nodata, where the library would
    compare None with numbers."""

    def keeping_nodata(*args: Any, **kwargs: Any) -> Any:
        x = kwargs.get("x", args[0] if args else None)
        return None if x is None else implementation(*args, **kwargs)

    return _named_as(keeping_nodata, implementation)


def _named_as(
    wrapper: Callable[..., Any], implementation: Callable[..., Any]
) -> Callable[..., Any]:
    """``wrapper`` with ``implementation``'s name and signature: openeo-processes-dask's
    ``process`` wrapper reads the signature to drop the arguments a process does not take."""
    wrapper.__name__ = getattr(implementation, "__name__", wrapper.__name__)
    wrapper.__signature__ = inspect.signature(implementation)  # type: ignore[attr-defined]
    return wrapper
