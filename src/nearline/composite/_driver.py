"""``composite.run``: a period of AVHRR orbits to one global composite file.

The steps, as Saltz et al. designed them for the AVHRR Pathfinder chain: sample the input to
map scan lines to latitude bands (the plan); start input data servers and band owners (local
processes, or MPI ranks under mpiexec); servers read granules in large contiguous pieces and
ship each band owner its lines; owners calibrate, mask, correct, register and composite into
their band, out of core when the bands do not all fit the memory budget; finished bands are
rewritten from local disk into one CF netCDF-4 file, published only when complete.
"""

from __future__ import annotations

import logging
import resource
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nearline.composite._chunks import remove_chunks
from nearline.composite._context import prepare
from nearline.composite._local_run import run_local
from nearline.composite._mpi_run import roles, run_mpi, world
from nearline.composite._output import CompositeFile, is_composite_file
from nearline.composite._quicklook import write_quicklook
from nearline.composite._settings import CompositeSettings, check_output
from nearline.composite._worker import band_file
from nearline.swath import N_PIXELS, granule_paths

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]


@dataclass
class CompositeResult:
    """What a run made and where its time went (seconds are wall-clock unless noted)."""

    out: Path
    png: Path | None
    granules: list[Path]
    skipped: list[tuple[Path, str]]
    settings: CompositeSettings
    bands: int
    passes: int
    pixels: int = 0  # swath pixels of the inputs
    pixels_used: int = 0  # (cell, daytime pixel) pairs composited: a footprint may cover several
    wall_seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    peak_rss_bytes: int = 0

    @property
    def pixels_per_second(self) -> float:
        return self.pixels / self.wall_seconds if self.wall_seconds else 0.0


def run(
    inputs: Sequence[str | Path],
    *,
    out: str | Path,
    grid: str = "igh-8km",
    period: str = "day",
    reducer: str = "max-ndvi",
    workers: int | None = None,
    readers: int = 1,
    memory: str | int = "2GiB",
    on_error: str = "fail",
    png: str | Path | None = None,
    progress: Progress | None = None,
) -> CompositeResult | None:
    """Composite the granules ``inputs`` (files, or folders of them) onto ``grid`` into the
    netCDF file ``out``.

    Under mpiexec (more than one rank) the ranks share the work and rank 0 returns the
    result; the others return None. ``progress(phase, done, total)`` reports "plan"
    (granules sampled), "composite" (scan lines read) and "write" (bands written).
    """
    started = time.perf_counter()
    paths = granule_paths(inputs)
    if paths and all(is_composite_file(path) for path in paths):
        return _climate(paths, Path(out), period, png, progress, started)
    comm = world()
    settings = CompositeSettings.parse(
        grid=grid,
        period=period,
        reducer=reducer,
        workers=workers if comm is None else max(1, comm.Get_size() - readers),
        readers=readers,
        memory=memory,
        on_error=on_error,
    )
    if comm is not None:
        roles(comm, settings.readers)
    out = check_output(Path(out))
    if png is not None:
        check_output(Path(png), option="--png", kind="PNG")
    rank0 = comm is None or comm.Get_rank() == 0
    context = prepare(paths, settings, progress=progress if rank0 else None)
    sample_seconds = context.sample_seconds
    context.warm_up()
    plan_seconds = time.perf_counter() - started
    scratch = out.parent / f".{out.name}.bands"
    output: CompositeFile | None = None
    written, write_seconds = 0, 0.0

    def write_band(index: int) -> None:
        """Copy a finished band's chunks into the output (rank 0 / the driver only)."""
        nonlocal written, write_seconds
        begun = time.perf_counter()
        assert output is not None
        path = band_file(scratch, index)
        output.write_band(path)
        remove_chunks(path)
        write_seconds += time.perf_counter() - begun
        written += 1
        if progress is not None:
            progress("write", written, len(context.plan.bands))

    try:
        if rank0:
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir(parents=True)
            output = CompositeFile(
                out,
                context.plan.grid,
                context.reducer.variables(),
                attrs=context.attributes(),
                chunk_rows=context.plan.chunk_rows,
            )
        if comm is not None:
            comm.Barrier()
        compositing = time.perf_counter()
        if comm is None:
            stats = run_local(context, scratch, write_band)
        else:
            stats = run_mpi(comm, context, scratch, write_band)
        composite_seconds = time.perf_counter() - compositing
        if not rank0:
            return None
        closing = time.perf_counter()
        assert output is not None
        output.close()
        close_seconds = time.perf_counter() - closing
    except BaseException:
        if output is not None:
            output.abort()
        raise
    finally:
        if rank0:
            shutil.rmtree(scratch, ignore_errors=True)
    quicklook = None
    if png is not None:
        quicklook = write_quicklook(out, Path(png))
    result = CompositeResult(
        out=out,
        png=quicklook,
        granules=[info.path for info in context.plan.granules],
        skipped=context.skipped,
        settings=settings,
        bands=len(context.plan.bands),
        passes=context.plan.passes,
    )
    _account(
        result,
        context.plan.granules,
        stats,
        plan_seconds,
        composite_seconds,
        write_seconds,
        close_seconds,
    )
    result.timings["plan_read"] = sample_seconds
    result.wall_seconds = time.perf_counter() - started
    return result


def _climate(
    paths: list[Path],
    out: Path,
    period: str,
    png: str | Path | None,
    progress: Progress | None,
    started: float,
) -> CompositeResult:
    """Daily composites in: the Climate step (10-day or monthly maximum-value composites)."""
    from nearline.composite._climate import temporal_composite

    settings = CompositeSettings.parse(period=period, workers=1)
    if png is not None:
        check_output(Path(png), option="--png", kind="PNG")
    temporal_composite(paths, check_output(out), period=settings.period, progress=progress)
    quicklook = write_quicklook(out, Path(png)) if png is not None else None
    result = CompositeResult(
        out=out, png=quicklook, granules=paths, skipped=[], settings=settings, bands=0, passes=1
    )
    result.wall_seconds = time.perf_counter() - started
    return result


def _account(
    result: CompositeResult,
    granules: list,
    stats: Any,
    plan_seconds: float,
    composite_seconds: float,
    write_seconds: float,
    close_seconds: float,
) -> None:
    workers, servers = stats["worker"], stats["server"]
    result.pixels = sum(info.n_lines for info in granules) * N_PIXELS
    result.pixels_used = sum(s["pixels_used"] for s in workers)
    n = max(1, len(workers))
    result.timings = {
        "plan": plan_seconds,
        "composite": composite_seconds,
        "worker_compute_mean": sum(s["compute_seconds"] for s in workers) / n,
        "worker_wait_mean": sum(s["wait_seconds"] for s in workers) / n,
        "worker_tail_mean": sum(s["tail_seconds"] for s in workers) / n,
        "worker_scratch_mean": sum(s["scratch_seconds"] for s in workers) / n,
        "worker_cpu_total": sum(s["cpu_seconds"] for s in workers),
        "server_read_total": sum(s["read_seconds"] for s in servers),
        "server_wait_total": sum(s["wait_seconds"] for s in servers),
        "output_write": write_seconds,
        "output_close": close_seconds,
        "bytes_read": float(sum(s["bytes_read"] for s in servers)),
        "read_requests": float(sum(s["requests"] for s in servers)),
    }
    # the chain's stages, processor seconds summed over the workers ("chain_cloud_mask", ...)
    for worker in workers:
        for stage, seconds in worker["stages"].items():
            key = "chain_" + stage.replace(" ", "_")
            result.timings[key] = result.timings.get(key, 0.0) + seconds
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result.peak_rss_bytes = max(own, children) * 1024
