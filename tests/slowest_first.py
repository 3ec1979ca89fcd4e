"""The order in which `make test` (``pytest -n 3 --dist loadfile``) hands out the test files:
the slowest first.

With ``--dist loadfile`` a worker takes a whole file at a time, the next one in the queue when
it is nearly done with its own. xdist orders that queue by each file's number of tests unless
told not to (``--no-loadscope-reorder``, in pyproject.toml's addopts), and a count of tests
says nothing of their seconds: a four-test file of 200 s handed out last runs alone while the
other workers idle. So the files known to take longest go first, longest first, and the many
short ones fill in behind them on whichever worker is free (the "longest processing time
first" rule); a file not named here keeps its place after them. Each figure is the file's
seconds (set-up, tests, tear-down) in one niced whole-suite run on two cores shared with
benchmarks (load average 1 to 12; 1,978 s in all): a ranking, not a promise. A file renamed
or removed must leave the list too (tests/test_makefile.py checks that each one is there).
"""

from __future__ import annotations

import pytest

SLOWEST = {  # file: its seconds in that run (files over 30 s)
    "tests/test_docs.py": 355,  # 647 for every page, before the long ones left for the next
    "tests/test_docs_long_pages.py": 292,
    "tests/test_cli.py": 231,
    "tests/layout/test_s3_faults.py": 206,
    "tests/service/test_archive_orders.py": 164,
    "tests/oidc/test_signin.py": 146,
    "tests/burst/test_native.py": 118,
    "tests/service/test_s3_archive.py": 95,
    "tests/service/test_subscriptions.py": 90,
    "tests/layout/test_crash.py": 89,
    "tests/layout/test_s3_upload_file.py": 84,
    "tests/veros/test_veros.py": 84,
    "tests/burst/test_mpi.py": 74,
    "tests/test_doctor.py": 66,
    "tests/burst/test_full_disk.py": 65,
    "tests/service/test_fuzz.py": 64,
    "tests/archive/test_postgres.py": 64,
    "tests/service/test_two_servers.py": 63,
    "tests/web/test_search.py": 58,
    "tests/algorithms/test_cli.py": 54,
    "tests/service/test_features.py": 53,
    "tests/service/test_orders.py": 52,
    "tests/service/test_operations.py": 52,
    "tests/service/test_two_hosts_s3.py": 51,
    "tests/swath/test_modis.py": 43,
    "tests/service/test_escapes.py": 43,
    "tests/layout/test_s3.py": 42,
    "tests/service/test_restart.py": 42,
    "tests/service/test_paging.py": 41,
    "tests/web/test_files.py": 40,
    "tests/composite/test_driver.py": 38,
    "tests/service/test_access.py": 38,
    "tests/archive/test_sqlite.py": 36,
    "tests/test_s3server.py": 35,
    "tests/service/test_quotas.py": 35,
    "tests/orders/test_executors.py": 33,
    "tests/algorithms/test_builtin.py": 32,
    "tests/algorithms/test_registry.py": 32,
    "tests/composite/test_channel3a.py": 31,
    "tests/layout/test_manifest_names.py": 30,
}


def order(items: list[pytest.Item]) -> None:
    """Sort ``items`` (in place) so the files of :data:`SLOWEST` come first, slowest first;
    the sort is stable, so each file's tests keep their order (and their module fixtures)."""
    ranked = sorted(SLOWEST, key=SLOWEST.__getitem__, reverse=True)
    rank = {name: place for place, name in enumerate(ranked)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
