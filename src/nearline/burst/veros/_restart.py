"""Veros's restart file through burst: written with Veros's ``write_to_h5`` on a stand-in
file at the end of the step before the one where Veros would write it, and read with
Veros's ``read_from_h5`` on a serial h5py file where Veros would read it."""

from __future__ import annotations

import os
import time
from typing import Any

from nearline.burst.veros._output import compression, proc_index, send, serial_chunks
from nearline.burst.veros._recording import HDF5Recorder, Recording


def write_restart(state: Any, template: str) -> None:
    """``veros.restart.write_restart``'s file, written at the end of a step.

    Veros writes it at the start of the next step (or after the last), after swapping its
    time levels; the arrays are the same, so only the three level indices are swapped here.
    """
    from veros.restart import write_to_h5

    vs = state.variables
    began = time.perf_counter()
    statedict = dict(vs.items())
    statedict.update(state.settings.items())
    path = template.format(**statedict)
    groups: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
        "core": (state.var_meta, dict(state.dimensions))
    }
    for name, diagnostic in state.diagnostics.items():
        if diagnostic.var_meta:
            dimensions = dict(state.dimensions)
            dimensions.update(diagnostic.extra_dimensions or {})
            groups[name] = (diagnostic.var_meta, dimensions)

    def dims_of(group: str, key: str) -> tuple[str, ...]:
        return tuple(groups[group][0][key].dims or ())

    def chunks(group: str, dims: tuple[str, ...]) -> tuple[int, ...]:
        return serial_chunks(groups[group][1])(dims)

    recording = Recording(path, "hdf5", "w", proc_index())
    h5file = HDF5Recorder(recording, dims_of, chunks, compression())
    swapped = {"tau": vs.taup1, "taup1": vs.taum1, "taum1": vs.tau}
    for group, (var_meta, dimensions) in groups.items():
        owner = vs if group == "core" else state.diagnostics[group].variables
        restart_vars = {k: m for k, m in var_meta.items() if m.write_to_restart and m.active}
        data = {k: getattr(owner, k) for k in restart_vars}
        if group == "core":
            data.update({k: v for k, v in swapped.items() if k in data})
        write_to_h5(dimensions, restart_vars, data, h5file, group)
    send(recording, "restart", began=began)


def read_restart(state: Any, template: str) -> None:
    """``veros.restart.read_restart`` with a serial h5py file on each rank: Veros's own opens
    it with parallel HDF5 under MPI, which PyPI's h5py lacks. Each rank reads its own part
    with Veros's ``read_from_h5``."""
    import h5py
    from veros.restart import read_from_h5

    from veros import logger, runtime_settings

    if runtime_settings.force_overwrite:
        raise RuntimeError("To prevent data loss, force_overwrite cannot be used in restart runs")
    vs, settings = state.variables, state.settings
    statedict = dict(vs.items())
    statedict.update(settings.items())
    path = template.format(**statedict)
    if not os.path.isfile(path):
        raise OSError(f"restart file {path} not found")
    logger.info(f"Reading restart data from {path}")
    owners: list[tuple[str, Any, dict[str, Any], dict[str, Any]]] = [
        ("core", vs, state.var_meta, dict(state.dimensions))
    ]
    for name, diagnostic in state.diagnostics.items():
        if diagnostic.var_meta:
            dimensions = dict(state.dimensions)
            dimensions.update(diagnostic.extra_dimensions or {})
            owners.append((name, diagnostic.variables, diagnostic.var_meta, dimensions))
    with h5py.File(path, "r") as infile, vs.unlock():
        for group, owner, var_meta, dimensions in owners:
            restart_vars = {k: m for k, m in var_meta.items() if m.write_to_restart and m.active}
            _, data = read_from_h5(
                dimensions, restart_vars, infile, group, settings.enable_cyclic_x
            )
            for key in restart_vars:
                if key not in data:
                    raise RuntimeError(f"No restart data found for variable {key} in {path}")
                setattr(owner, key, data[key])
