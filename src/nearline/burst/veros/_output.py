"""The compute ranks' side: Veros's diagnostics and restart file go to burst's I/O ranks.

Each diagnostic keeps its class (its ``initialize``, ``diagnose`` and ``output`` run as Veros
wrote them); only the two methods that open files, ``initialize_output`` and
``write_output`` of ``VerosDiagnostic``, are replaced, by a subclass made for it. They call
Veros's own ``initialize_variable``, ``write_variable`` and ``advance_time`` on stand-in
files (``_recording.py``) and hand the result to burst, which returns at once.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nearline.burst._client import Client
from nearline.burst.veros._recording import (
    HEADER,
    NetCDFRecorder,
    Recording,
)
from nearline.errors import BurstError

log = logging.getLogger(__name__)


@dataclass
class Attachment:
    """The burst client of this compute rank, and what went through it."""

    io: Client
    comm: Any  # the compute ranks' communicator (Veros's mpi_comm)
    steps: dict[str, int] = field(default_factory=dict)  # next burst step of each file
    pauses: dict[str, list[float]] = field(default_factory=dict)  # seconds per handed record
    taken: dict[str, Any] = field(default_factory=dict)  # settings the plug-in blanked: theirs
    state: Any = None  # Veros's state, once the plug-in's set-up saw it (for its timers)


ATTACHED: list[Attachment] = []  # the one attachment of this process, once the runner made it


def attachment() -> Attachment | None:
    return ATTACHED[0] if ATTACHED else None


def proc_index() -> tuple[int, int]:
    from veros import runtime_state

    return runtime_state.proc_idx


def send(recording: Recording, file: str, *, began: float) -> None:
    """Hand one step of ``file`` to the I/O ranks; rank 0 adds the operations."""
    from veros import runtime_state

    attached = attachment()
    assert attached is not None
    step = attached.steps.get(file, 0)
    attached.steps[file] = step + 1
    io = attached.io
    seen = None
    try:
        if runtime_state.proc_rank == 0:
            header = recording.encoded_header()
            io.write(file, HEADER, header, step=step, start=(0,), shape=header.shape)
        for name, block, start, shape in recording.blocks:
            io.write(file, name, block, step=step, start=start, shape=shape)
        io.flush(file)
        io.check_servers()
    except BurstError as error:  # a dead I/O rank, or a file that failed to write
        seen = error
    _agree(attached, seen)
    attached.pauses.setdefault(file, []).append(time.perf_counter() - began)


def _agree(attached: Attachment, seen: BurstError | None) -> None:
    """Every compute rank stops at the same record if one saw burst fail (an I/O rank that
    died, a file that could not be written): a rank that went on alone would wait forever
    in Veros's next collective for one that stopped."""
    from mpi4py import MPI

    if attached.comm.allreduce(seen is not None, op=MPI.LOR):
        error = seen or BurstError("burst failed on another compute rank (see its report)")
        log.error("compute rank %d: BurstError: %s", attached.comm.rank, error)
        attached.comm.Barrier()  # every rank has reported before any aborts the job
        raise error


def serial_chunks(dimensions: dict[str, Any]) -> Callable[[tuple[str, ...]], tuple[int, ...]]:
    """Chunk shapes as a serial Veros run picks them: a whole dimension, or 1 for others."""
    from veros.variables import get_shape

    def chunks(dims: tuple[str, ...]) -> tuple[int, ...]:
        return tuple(
            get_shape(dimensions, (d,), local=False, include_ghosts=False)[0]
            if d in dimensions
            else 1
            for d in dims
        )

    return chunks


def compression() -> dict[str, Any]:
    """What a serial Veros run passes to h5py (it turns gzip off under MPI only)."""
    from veros import runtime_settings

    return (
        {"compression": "gzip", "compression_opts": 1}
        if runtime_settings.hdf5_gzip_compression
        else {}
    )


def _settings_json(state: Any) -> str:
    """``setup_settings`` as Veros records it, with the restart file names the user set
    (the plug-in blanks those settings so that Veros does not open the files itself)."""
    settings = state.settings.todict()
    attached = attachment()
    if attached is not None:
        settings.update(attached.taken)
    return json.dumps(settings)


def _initialize_file(state: Any, ncfile: NetCDFRecorder, extra_dimensions: Any) -> None:
    """``veros.io_tools.netcdf.initialize_file``, step for step: Veros's own refuses any file
    but an ``h5netcdf.File`` (it checks the type), so its few lines are followed here."""
    from veros.io_tools import netcdf as nctools

    from veros import __version__, runtime_settings, variables

    setup_file = runtime_settings.setup_file
    code = "UNKNOWN" if setup_file is None else nctools._get_setup_code(setup_file)
    ncfile.attrs.update(
        date_created=datetime.datetime.today().isoformat(),
        veros_version=__version__,
        setup_identifier=state.settings.identifier,
        setup_description=state.settings.description,
        setup_settings=_settings_json(state),
        setup_file="UNKNOWN" if setup_file is None else setup_file,
        setup_code=code,
    )
    dimensions = dict(state.dimensions)
    dimensions.update(extra_dimensions or {})
    for dim in dimensions:
        if dim in variables.TIMESTEPS:
            continue
        if dim in state.var_meta:
            var = state.var_meta[dim]
            if not var.active:
                continue
            data = getattr(state.variables, dim)
        else:
            var = variables.Variable(dim, (dim,), time_dependent=False)
            data = np.arange(dimensions[dim])
        size = variables.get_shape(dimensions, var.dims[::-1], include_ghosts=False, local=False)
        ncfile.dimensions[dim] = size[0]
        nctools.initialize_variable(state, dim, var, ncfile)
        nctools.write_variable(state, dim, var, data, ncfile)
    ncfile.dimensions["Time"] = None
    ncfile.create_variable("Time", ("Time",), float).attrs.update(
        long_name="Time", units="days", time_origin="01-JAN-1900 00:00:00"
    )


def write_variable(state: Any, key: str, var: Any, data: Any, ncfile: NetCDFRecorder) -> None:
    """``veros.io_tools.netcdf.write_variable`` with its preparation left to the I/O rank.

    Veros scales the variable, masks land with ``np.where``, drops ghost cells and the other
    time levels, and transposes, each step a new array: on a 100 MB record that was most of
    the compute rank's pause. Here the rank hands over its own cells of the current time
    level as they lie (burst copies them once, into its queue) with the scale, the grid mask
    and the fill value, and the I/O rank does the rest in Veros's order (``_replay.py``).
    Scalars and booleans go through Veros's own function."""
    from veros.io_tools import netcdf as nctools

    from veros import distributed, variables

    array = data if isinstance(data, np.ndarray) else None
    if not var.dims or array is None or array.dtype == bool:
        nctools.write_variable(state, key, var, data, ncfile)
        return
    timesteps = tuple(
        state.variables.tau if dim in variables.TIMESTEPS else slice(None) for dim in var.dims
    )
    held = variables.remove_ghosts(array, var.dims)[timesteps]
    target = ncfile.variables[key]
    nx, ny = state.dimensions["xt"], state.dimensions["yt"]
    chunk, _ = distributed.get_chunk_slices(nx, ny, target.dimensions)
    if "Time" in target.dimensions:
        chunk = (-1, *chunk[1:])  # Veros's time_step: the record advance_time added
    grid = var.get_mask(state.settings, state.variables)
    mask = None
    if grid is not None:
        grid = variables.remove_ghosts(np.asarray(grid), var.dims[: grid.ndim])
        mask = (var.get_mask, grid.astype(bool, copy=False).view(np.uint8))
    fill = variables.get_fill_value(np.result_type(array.dtype, var.scale))
    sizes = [ncfile.dimensions[d] or 0 for d in target.dimensions]
    ncfile.recording.write_unprepared(
        key, target.dimensions, sizes, chunk, held, scale=var.scale, mask=mask, fill=fill
    )


class BurstOutput:
    """Mixed in before a diagnostic's class: its file goes through burst, not parallel HDF5."""

    _burst_file: NetCDFRecorder | None = None
    _burst_path: str | None = None

    def initialize_output(self, state: Any) -> None:
        """As ``VerosDiagnostic.initialize_output``: header and static variables."""
        from veros.io_tools import netcdf as nctools

        from veros import runtime_settings

        inactive = not self.output_frequency and not self.sampling_frequency
        no_output = not self.output_path or not self.output_variables
        if runtime_settings.diskless_mode or inactive or no_output:
            return
        path = self.get_output_file_name(state)
        if path == self._burst_path:  # made in this run: on disk, or about to be
            return
        if os.path.isfile(path) and not runtime_settings.force_overwrite:
            raise OSError(
                f'output file {path} for diagnostic "{self.name}" exists '
                "(change output path or enable force_overwrite runtime setting)"
            )
        ncfile = NetCDFRecorder(serial_chunks(dict(state.dimensions)), compression())
        recording = Recording(path, "netcdf", "w", proc_index())
        ncfile.begin(recording)
        began = time.perf_counter()
        _initialize_file(state, ncfile, self.extra_dimensions)
        for key in self.output_variables:
            var = self.var_meta[key]
            if key not in ncfile.variables:
                nctools.initialize_variable(state, key, var, ncfile)
            if not var.time_dependent:
                nctools.write_variable(state, key, var, self.variables.get(key), ncfile)
        send(recording, self.name, began=began)
        # not waited for: a diagnostic's output() asks os.path.isfile before each record,
        # and the path check above answers it for a file this run made
        self._burst_file, self._burst_path = ncfile, path

    def write_output(self, state: Any) -> None:
        """As ``VerosDiagnostic.write_output``: one time record."""
        from veros.io_tools import netcdf as nctools

        from veros import runtime_settings
        from veros import time as vtime

        if runtime_settings.diskless_mode:
            return
        began = time.perf_counter()
        ncfile = self._burst_file
        path = self.get_output_file_name(state)
        if ncfile is None or path != self._burst_path:
            raise OSError(f'output file {path} of diagnostic "{self.name}" was never created')
        recording = Recording(path, "netcdf", "r+", proc_index())
        ncfile.begin(recording)
        nctools.advance_time(vtime.convert_time(state.variables.time, "seconds", "days"), ncfile)
        for key in self.output_variables:
            var = self.var_meta[key]
            write_variable(state, key, var, self.variables.get(key), ncfile)
        send(recording, self.name, began=began)


_BURST_CLASSES: dict[type, type] = {}


def through_burst(diagnostic: Any) -> None:
    """Give ``diagnostic`` a subclass of its own class whose files go through burst."""
    cls = type(diagnostic)
    if issubclass(cls, BurstOutput):
        return
    if cls not in _BURST_CLASSES:
        _BURST_CLASSES[cls] = type(f"Burst{cls.__name__}", (BurstOutput, cls), {})
    diagnostic.__class__ = _BURST_CLASSES[cls]
