"""``nearline db migrate``: create or upgrade the service's tables (the catalogue with
PostGIS, users, jobs and runs, algorithm versions, subscriptions, servers) in the PostgreSQL
database of ``--db`` (or $NEARLINE_DB), or in the SQLite files under ``--data`` without one.
Idempotent: running it again on an up-to-date database changes nothing.
"""

from __future__ import annotations

import argparse
from typing import Any

from nearline.cli._options import DATA_OPTIONS, data_folder


def add_db_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``db migrate`` to ``subparsers``."""
    parser = DATA_OPTIONS.family(
        subparsers,
        "db",
        description="Manage the database a service keeps its state in.",
    )
    actions = parser.add_subparsers(dest="action", required=True)
    migrate = DATA_OPTIONS.verb(
        actions,
        "migrate",
        help="create or upgrade every table (idempotent)",
        description="Create or upgrade the catalogue's, the jobs', the users', the algorithms' "
        "and the subscriptions' tables; with PostgreSQL, also the PostGIS extension (which "
        "needs a role allowed to create it the first time).",
    )
    migrate.set_defaults(func=run_migrate_tables)
    return parser


def run_migrate_tables(args: argparse.Namespace) -> int:
    from nearline.orders import migrate

    data = data_folder(args)
    for line in migrate(args.db, data):
        print(line)
    return 0
