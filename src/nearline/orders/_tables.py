"""Setting up the service's state: every store's tables in one go (``nearline db migrate``).

Each store creates or upgrades its own tables when it opens (``IF NOT EXISTS``, and columns
added to older tables), so migrating is opening each of them once, in the database the
service would use: PostgreSQL's (``--db`` or $NEARLINE_DB), else the SQLite files under the
data folder.
"""

from __future__ import annotations

from pathlib import Path

from nearline.algorithms.store import VersionStore
from nearline.archive import open_catalogue
from nearline.db import database_url, open_database
from nearline.identity import UserStore
from nearline.orders._server_roster import Servers
from nearline.orders._store import JobStore
from nearline.orders.subscriptions._store import SubscriptionStore


def migrate(db: str | None, data: Path) -> list[str]:
    """Create or upgrade every table; one line a part, saying where it is."""
    url = database_url(db)
    done = []
    if url is None:
        data.mkdir(parents=True, exist_ok=True)
    with open_catalogue(url, data / "catalogue.db"):
        done.append("catalogue (collections, items" + (", PostGIS)" if url else ")"))
    with open_database(url, data / "service.db") as database:
        UserStore(database)
        JobStore(database)
        SubscriptionStore(database)
        Servers(database)
        done.append("users, jobs and runs, subscriptions, servers")
        if url is not None:
            VersionStore(database)
    if url is None:
        with open_database(None, data / "algorithms.db") as versions:
            VersionStore(versions)
    done.append("algorithm versions")
    where = _shown(url) if url else f"SQLite files in {data}"
    return [f"{line}: up to date in {where}" for line in done]


def _shown(url: str) -> str:
    from nearline.db import redacted

    return redacted(url)
