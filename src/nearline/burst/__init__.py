"""burst: hand model output to dedicated I/O servers and go back to computing.

``run(main, io_ranks=n)`` under mpiexec, or ``open(root)`` in one process; both give ``main``
a client with ``write``, ``flush``, ``wait``, ``close`` and ``stats``.
"""

from __future__ import annotations

from nearline.burst._base import Sink, SinkFile, VariableSpec
from nearline.burst._client import BurstStats, Client
from nearline.burst._local import open
from nearline.burst._mpi import run  # mpi4py itself is imported when run is called
from nearline.burst._settings import AutoFlush, Overflow
from nearline.burst.sinks import available_sinks, get_sink
from nearline.errors import BurstError, BurstInputError

__all__ = [
    "AutoFlush",
    "BurstError",
    "BurstInputError",
    "BurstStats",
    "Client",
    "Overflow",
    "Sink",
    "SinkFile",
    "VariableSpec",
    "available_sinks",
    "get_sink",
    "open",
    "run",
]
