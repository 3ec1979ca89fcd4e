"""One lock a process around the HDF libraries nearline calls through netCDF4 and pyhdf.

netCDF-C, the HDF5 copy netCDF4's wheel carries and pyhdf's HDF4 are not built thread-safe,
and netCDF4 lets go of the GIL inside them. Two threads in them at once crash the process
(SIGBUS, seen when a bucket's objects were described on the bucket ingest's threads). The
libraries are one a process, so the lock is too: the tiles' reads, the footprints' describes
and burst's netCDF sink, which once kept a lock each and so still overlapped one another,
take turns here. It is re-entrant: a describe that opens a companion file takes it again.
h5py keeps its own lock for its own HDF5 copy and needs none of this.
"""

from __future__ import annotations

import threading

HDF_LOCK = threading.RLock()
