"""Veros, the ocean model, writing its diagnostics and restart files through burst.

A Veros plug-in: a setup lists it (``__veros_plugins__ = (nearline.burst.veros,)``) and is
run under mpiexec with ``python -m nearline.burst.veros``, which starts burst's I/O ranks
and hands Veros the compute ranks' communicator through its ``mpi_comm`` runtime setting.
The files are those a serial Veros run writes. Run serially with ``veros run``, the plug-in
stands aside and Veros writes its files itself.
"""

from __future__ import annotations

from typing import Any

from nearline.burst.veros._report import report_of

# Veros is imported when Veros loads the plug-in (it asks for __VEROS_INTERFACE__), not
# before: `python -m nearline.burst.veros` imports this package before MPI may start.
_LAZY = {
    "__VEROS_INTERFACE__": ("nearline.burst.veros._plugin", "INTERFACE"),
    "BurstRestart": ("nearline.burst.veros._plugin", "BurstRestart"),
    "VerosSink": ("nearline.burst.veros._replay", "VerosSink"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module, attribute = _LAZY[name]
    try:
        return getattr(importlib.import_module(module), attribute)
    except ModuleNotFoundError as error:
        if error.name != "veros" and not (error.name or "").startswith("veros."):
            raise
        raise ImportError(
            "nearline.burst.veros needs Veros: pip install 'nearline[veros]'"
        ) from error


__all__ = ["BurstRestart", "VerosSink", "report_of"]
