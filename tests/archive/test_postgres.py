"""The PostgreSQL catalogue: the shared conformance suite on a real server, then what only
PostgreSQL shows."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nearline.archive import Collection, Search
from nearline.archive._postgres_catalogue import PostgresCatalogue
from nearline.db import PostgresDatabase
from nearline.testing.catalogue import CatalogueTests
from nearline.testing.counting import OVER, SITE
from nearline.testing.items import DAY, EVERYTHING, T0, found, keys, make_item
from nearline.testing.reference import Reference

from ..postgres_server import PostgresServer
from .crowded import NARROW, PAGED, fill_crowded


@pytest.fixture(autouse=True, scope="class")
def _server(request: pytest.FixtureRequest, postgres_server: PostgresServer) -> None:
    if request.cls is not None:
        request.cls.server = postgres_server


class TestPostgresCatalogue(CatalogueTests):
    server: PostgresServer

    def make_catalogue(self, tmp_path: Path) -> PostgresCatalogue:
        return PostgresCatalogue(self.server.new_database())


# -- what only PostgreSQL shows ---------------------------------------------------------------


def test_on_the_state_database_it_shares_its_pool(postgres_server: PostgresServer) -> None:
    """One pool per database: the catalogue opened on the service's state database borrows
    its connections (one here), hands them back as the stores read them, and leaves the pool
    open when it closes."""
    with PostgresDatabase(postgres_server.new_database("shared_pool"), pool_size=1) as database:
        with PostgresCatalogue(database) as catalogue:
            catalogue.put_collection(Collection("c"))
            catalogue.add_items([make_item("a"), make_item("b")])
            assert found(catalogue) == ["a", "b"]
            connected = database.query(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            )
            assert connected[0][0] == 1
        assert [tuple(row) for row in database.query("SELECT id, count FROM collections")] == [
            ("c", 2)
        ]


@pytest.fixture(scope="module")
def big(postgres_server: PostgresServer) -> Iterator[tuple[PostgresCatalogue, Reference]]:
    """The crowded catalogue (crowded.py) in PostgreSQL."""
    catalogue = PostgresCatalogue(postgres_server.new_database("big"))
    reference = fill_crowded(catalogue)
    yield catalogue, reference
    catalogue.close()


class Explained(PostgresCatalogue):
    """A catalogue that keeps the plan of each statement a search runs (EXPLAIN (ANALYZE,
    BUFFERS), which counts the pages it touches whatever the machine's speed)."""

    plans: list[dict[str, Any]]

    def _run(self, connection: Any, sql: str, parameters: Sequence[Any]) -> list[Any]:
        explained = connection.execute(
            f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}", parameters
        ).fetchone()
        self.plans.append(next(iter(explained.values()))[0]["Plan"])
        return super()._run(connection, sql, parameters)


def plans_of(catalogue: PostgresCatalogue, search: Search) -> list[dict[str, Any]]:
    """The plans of the statements ``search`` runs."""
    explained = Explained.__new__(Explained)
    explained.__dict__.update(catalogue.__dict__)
    explained.plans = []
    explained.search(search)
    return explained.plans


def nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def pages(plan: dict[str, Any]) -> int:
    """Pages of items and their indexes the statement touched (shared buffers found in
    memory or read, by every scan of items, its index scans included)."""
    return sum(
        node["Shared Hit Blocks"] + node["Shared Read Blocks"]
        for node in nodes(plan)
        if node.get("Relation Name") == "items"
    )


def table_pages(catalogue: PostgresCatalogue) -> int:
    with catalogue.connection() as connection:
        found = connection.execute(
            "SELECT pg_relation_size('items') / current_setting('block_size')::int AS n"
        ).fetchone()
    return int(found["n"])


def seq_scans(catalogue: PostgresCatalogue) -> int:
    with catalogue.connection() as connection:
        connection.execute("SELECT pg_stat_force_next_flush()")
        found = connection.execute(
            "SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'items'"
        ).fetchone()
    return int(found["seq_scan"])


@pytest.mark.parametrize(
    "search",
    [*NARROW.values(), Search(limit=10, viewer="alice")],
    ids=[*NARROW.keys(), "everything"],
)
def test_a_search_reads_a_small_part_of_100k_items(
    big: tuple[PostgresCatalogue, Reference], search: Search
) -> None:
    """No sequential scan of the items, and under 5% of their pages touched (EXPLAIN's
    buffer counts, which do not depend on the machine's speed)."""
    catalogue, reference = big
    before = seq_scans(catalogue)
    page = catalogue.search(search)
    assert keys(page.items) == keys(reference.matches(search)[: search.limit])
    assert page.items
    plans = plans_of(catalogue, search)
    scanned = [n for plan in plans for n in nodes(plan) if n["Node Type"] == "Seq Scan"]
    assert [n["Relation Name"] for n in scanned if n["Relation Name"] == "items"] == []
    assert seq_scans(catalogue) == before
    assert sum(map(pages, plans)) < 0.05 * table_pages(catalogue)


@pytest.mark.parametrize("search", PAGED.values(), ids=PAGED.keys())
def test_page_50_costs_what_page_1_costs(
    big: tuple[PostgresCatalogue, Reference], search: Search
) -> None:
    catalogue, reference = big
    first = sum(map(pages, plans_of(catalogue, search)))
    page = catalogue.search(search)
    for _ in range(48):
        page = catalogue.search(replace(search, token=page.next_token))
    fiftieth = replace(search, token=page.next_token)
    assert keys(catalogue.search(fiftieth).items) == keys(
        reference.matches(search)[49 * 20 : 50 * 20]
    )
    assert sum(map(pages, plans_of(catalogue, fiftieth))) < 2 * first + 10


WRITER = """
import sys
from datetime import UTC, datetime, timedelta
from nearline.archive._postgres_catalogue import PostgresCatalogue
from nearline.testing.items import make_item
url, name, batches = sys.argv[1], sys.argv[2], int(sys.argv[3])
start = datetime(2021, 3, 1, tzinfo=UTC)
with PostgresCatalogue(url) as catalogue:
    for b in range(batches):
        catalogue.add_items(
            [make_item(f"{name}-{b}-{n}", start=start + timedelta(minutes=n)) for n in range(25)]
        )
"""


def test_two_processes_share_it_and_the_changes_feed_misses_nothing(
    postgres_server: PostgresServer,
) -> None:
    """Two processes add items at once while this one follows the changes feed: each item
    is seen exactly once, in positions that only grow, though the writers commit in an
    order of their own."""
    url = postgres_server.new_database("shared")
    with PostgresCatalogue(url) as catalogue:
        catalogue.put_collection(Collection("c"))
        writers = [
            subprocess.Popen([sys.executable, "-c", WRITER, url, name, "40"])
            for name in ("one", "two")
        ]
        seen: list[str] = []
        positions: list[int] = []
        after = catalogue.position()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            done = all(writer.poll() is not None for writer in writers)
            items, after = catalogue.changes(after, limit=37)
            seen += [item.id for item in items]
            positions.append(after)
            if done and not items:
                break
        assert [writer.wait() for writer in writers] == [0, 0]
        assert len(seen) == len(set(seen)) == 2 * 40 * 25
        assert positions == sorted(positions)
        assert catalogue.count("c") == 2 * 40 * 25
        assert found(catalogue, limit=10_000) == found(catalogue, limit=10_000)


def test_a_catalogue_from_before_places_and_removals_is_upgraded_on_opening(
    postgres_server: PostgresServer,
) -> None:
    """The 2-D GiST of places is built and each collection's removals start at 0 when a
    catalogue made before them is opened; its counts then follow removals."""
    url = postgres_server.new_database("upgraded")
    search = Search(bbox=SITE, count_to=EVERYTHING)
    with PostgresCatalogue(url) as catalogue:
        catalogue.put_collection(Collection("c"))
        catalogue.add_items([make_item(f"over{n}", box=OVER, start=T0 + n * DAY) for n in range(3)])
        with catalogue.connection() as connection:  # the schema as it was
            connection.execute("DROP INDEX items_by_place")
            connection.execute("ALTER TABLE collections DROP COLUMN removed")
    with PostgresCatalogue(url) as catalogue:
        assert catalogue.search(search).matched == 3
        catalogue.delete_items("c", ["over1"])
        assert catalogue.search(search).matched == 2
        with catalogue.connection() as connection:
            found = connection.execute("SELECT to_regclass('items_by_place') AS i").fetchone()
        assert found["i"] == "items_by_place"
