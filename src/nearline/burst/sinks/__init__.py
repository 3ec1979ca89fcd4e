"""Sinks by name: the built-in formats, third-party ones from the ``nearline.sinks`` entry
point group (loaded only when asked for), and any callable ``sink(path, variables)``."""

from __future__ import annotations

from collections.abc import Callable

from nearline.burst.base import Sink
from nearline.errors import ConfigError
from nearline.plugins import Registry

SINKS: Registry[type[Sink]] = Registry(
    "sink",
    group="nearline.sinks",
    builtins={
        "netcdf": "nearline.burst.sinks.netcdf:NetCDFSink",
        "hdf5": "nearline.burst.sinks.hdf5:HDF5Sink",
        "zarr": "nearline.burst.sinks.zarr:ZarrSink",
        "raw": "nearline.burst.sinks.raw:RawSink",
    },
)


def available_sinks() -> list[str]:
    """Names accepted by :func:`get_sink`: built-ins and installed plug-ins."""
    return sorted(SINKS.names())


def get_sink(sink: str | Sink | Callable) -> Sink:
    """Return a :class:`Sink` for a name, an instance, or a user callable ``(path, variables)``."""
    if isinstance(sink, Sink):
        return sink
    if isinstance(sink, str):
        return SINKS.get(sink, hint="or pass a callable sink(path, variables)")()
    if callable(sink):
        from nearline.burst.sinks.function import CallableSink

        return CallableSink(sink)
    raise ConfigError(f"sink must be a name, a Sink or a callable, got {type(sink).__name__}")


__all__ = ["SINKS", "available_sinks", "get_sink"]
