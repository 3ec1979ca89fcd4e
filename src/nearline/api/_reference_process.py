"""Making a file's references in a process of its own, bounded in memory, CPU time and wall
time: the file may be any user's algorithm's output, so HDF5's parser (a C library) reads it
apart from the server, and a file made to crash it, fill memory or spin ends that process
alone. A fresh interpreter each time (a second or two of CPU, once a file: they are kept)."""

from __future__ import annotations

import logging
import resource
import subprocess
import sys
import threading
from pathlib import Path

import orjson

from nearline.api._references import References, make_references
from nearline.errors import ItemNotFound, NearlineError, ServiceError

log = logging.getLogger(__name__)
MEMORY = 2 * 1024**3  # bytes of address space the process may take
CPU_SECONDS = 60
WALL_SECONDS = 120
MOST_REFERENCES = 500_000  # a file cut finer is refused (its JSON would pass 50 MB)
NOT_HDF5 = 3  # the process's exit status for a file it cannot index (its message on stderr)
AT_ONCE = 2  # processes making references at once, a server
WAIT_SECONDS = 60  # a request waits this long for its turn, then is told to come back


class ReferenceMakers:
    """Who may make references now: at most ``at_once`` processes a server, so requests for
    many files nobody has opened yet queue rather than start a process each.

    Parameters
    ----------
    at_once
        Processes at once.
    """

    def __init__(self, at_once: int = AT_ONCE) -> None:
        self._turns = threading.BoundedSemaphore(at_once)

    def make(self, path: Path, *, name: str) -> References:
        """:func:`make_references_apart`, once a turn is free.

        Parameters
        ----------
        path
            The file.
        name
            The asset's name, for messages.
        """
        if not self._turns.acquire(timeout=WAIT_SECONDS):
            raise ServiceError(f"{name} is waiting to be indexed: try again soon", status=503)
        try:
            return make_references_apart(path, name=name)
        finally:
            self._turns.release()


def make_references_apart(path: Path, *, name: str) -> References:
    """:func:`~nearline.api._references.make_references` of the file ``path``, in a process
    of its own within :data:`MEMORY`, :data:`CPU_SECONDS` and :data:`WALL_SECONDS`.

    Parameters
    ----------
    path
        The file (a local copy of the asset).
    name
        The asset's name, for messages.
    """
    code = "import sys; from nearline.api._reference_process import main; main(sys.argv[1:])"
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(path), name],
            capture_output=True,
            timeout=WALL_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ServiceError(f"{name} took too long to index", status=503) from None
    if done.returncode == 0:
        return orjson.loads(done.stdout)
    why = done.stderr.decode(errors="replace").strip().splitlines()
    if done.returncode == NOT_HDF5 and why:  # its last line is for the user
        log.warning("no references for %s: %s", path, "; ".join(why))
        raise ItemNotFound(why[-1])
    log.error("references of %s failed (exit %d): %s", path, done.returncode, why[-3:])
    raise ItemNotFound(f"{name} cannot be read as netCDF4/HDF5: it has no references")


def main(args: list[str]) -> None:
    """The process: bound itself, then read the file and write its references on stdout.

    Parameters
    ----------
    args
        The file's path and the asset's name.
    """
    path, name = args
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))
    try:
        with open(path, "rb") as source:
            references = make_references(source, name=name)
    except ItemNotFound as error:
        print(error, file=sys.stderr)
        sys.exit(NOT_HDF5)
    except (NearlineError, OSError, ValueError, KeyError) as error:  # the detail is for the log
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        print(f"{name} cannot be read as netCDF4/HDF5: it has no references", file=sys.stderr)
        sys.exit(NOT_HDF5)
    if len(references["refs"]) > MOST_REFERENCES:
        print(f"{name} has over {MOST_REFERENCES} chunks: too many to index", file=sys.stderr)
        sys.exit(NOT_HDF5)
    sys.stdout.buffer.write(orjson.dumps(references))
