"""Sinks by name: the built-in formats, third-party ones from the ``nearline.sinks`` entry
point group (loaded only when asked for), and any callable ``sink(path, variables)``."""

from __future__ import annotations

from collections.abc import Callable

from nearline.burst._base import Sink
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
    """Names accepted by [`get_sink`][nearline.burst.get_sink]: built-ins and plug-ins.

    Plug-ins are the ``nearline.sinks`` entry points of installed packages; listing them
    imports none.

    Returns
    -------
    list[str]
        Sorted names.
    """
    return sorted(SINKS.names())


def get_sink(sink: str | Sink | Callable) -> Sink:
    """The [`Sink`][nearline.burst.Sink] for a name, an instance, or a callable.

    Parameters
    ----------
    sink
        A name from [`available_sinks`][nearline.burst.available_sinks] (a plug-in's module
        is imported only now), a ``Sink`` (returned as it is), or a callable
        ``sink(path, variables)`` that writes a whole file at flush.

    Returns
    -------
    Sink
        Ready for the I/O servers.

    Raises
    ------
    ConfigError
        An unknown name (the message lists the known ones) or an unusable object.
    """
    if isinstance(sink, Sink):
        return sink
    if isinstance(sink, str):
        return SINKS.get(sink, hint="or pass a callable sink(path, variables)")()
    if callable(sink):
        from nearline.burst.sinks.function import CallableSink

        return CallableSink(sink)
    raise ConfigError(f"sink must be a name, a Sink or a callable, got {type(sink).__name__}")


__all__ = ["SINKS", "available_sinks", "get_sink"]
