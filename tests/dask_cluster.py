"""A real Dask cluster for the tests: a LocalCluster on 127.0.0.1 with 2 worker processes of
one thread each (one run at a time per worker), as the executor's and the service's tests use."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from distributed import LocalCluster

from nearline.algorithms import cleanup_stale


@contextmanager
def local_cluster() -> Iterator[LocalCluster]:
    """The cluster while the block runs; afterwards, the cgroups of runs whose worker was
    killed are cleaned up, as the service would at its next start."""
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        # any free port: None still binds 8787, and a second suite worker's cluster then
        # warns that it is taken (an error here)
        dashboard_address="127.0.0.1:0",
    ) as started:
        yield started
    cleanup_stale()
