"""The order in which `make test` (``pytest -n 3 --dist loadfile``) hands out the test files:
the slowest first.

With ``--dist loadfile`` a worker takes a whole file at a time, the next one in the queue when
it is nearly done with its own. xdist orders that queue by each file's number of tests unless
told not to (``--no-loadscope-reorder``, in pyproject.toml's addopts), and a count of tests
says nothing of their seconds: a four-test file of 200 s handed out last runs alone while the
other workers idle. So the files known to take longest go first, longest first, and the many
short ones fill in behind them on whichever worker is free (the "longest processing time
first" rule); a file not named here keeps its place after them. Each figure is the file's
seconds (set-up, tests, tear-down; pytest's JUnit XML) in one niced whole-suite run, three
workers on two cores shared with benchmarks (load average about 3; 2,220 s in all, 768 s of
wall): a ranking, not a promise. A file renamed or removed must leave the list too
(tests/test_makefile.py checks that each one is there).
"""

from __future__ import annotations

import pytest

SLOWEST = {  # file: its seconds in that run (files over 30 s)
    "tests/test_docs.py": 177,
    "tests/test_docs_long_pages.py": 133,
    "tests/service/test_s3_archive.py": 90,
    "tests/oidc/test_signin.py": 82,
    "tests/test_cli.py": 82,
    "tests/layout/test_s3_faults.py": 79,
    "tests/service/test_fuzz.py": 74,
    "tests/service/test_two_hosts_s3.py": 67,
    "tests/layout/test_s3_upload_file.py": 67,
    "tests/archive/test_postgres.py": 60,
    "tests/burst/test_mpi.py": 59,
    "tests/service/test_two_servers.py": 57,
    "tests/burst/test_native.py": 53,
    "tests/service/test_subscriptions.py": 51,
    # 174 s in that run, 146 of them one hypothesis test finding and shrinking a failing
    # example (the counts of an id search); 42 s in a run of the file alone
    "tests/archive/test_sqlite.py": 42,
    "tests/service/test_restart.py": 43,
    "tests/service/test_filter.py": 43,  # not in that run: 43 s alone (a server on each backend)
    "tests/veros/test_veros.py": 40,
    "tests/service/test_archive_orders.py": 38,
    "tests/layout/test_crash.py": 38,
    "tests/composite/test_driver.py": 32,
    "tests/test_s3server.py": 31,
    # the openEO face's, added since that run (their seconds alone, -n 2, at load 4-5): each
    # batch job or UDF wall is a sandboxed run that imports the openEO libraries
    "tests/openeo/test_udf_sandbox.py": 90,
    "tests/openeo/test_job_restart.py": 55,
    "tests/openeo/test_batch_jobs.py": 45,
    "tests/openeo/test_processes_on_cubes.py": 35,
    "tests/openeo/test_result.py": 35,
}


def order(items: list[pytest.Item]) -> None:
    """Sort ``items`` (in place) so the files of :data:`SLOWEST` come first, slowest first;
    the sort is stable, so each file's tests keep their order (and their module fixtures)."""
    ranked = sorted(SLOWEST, key=SLOWEST.__getitem__, reverse=True)
    rank = {name: place for place, name in enumerate(ranked)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
