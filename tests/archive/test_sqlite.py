"""The SQLite catalogue: the shared conformance suite, then what only SQLite shows: how much
work a search does (virtual-machine instructions, counted by a progress handler, which is
deterministic where timings on a shared machine are not), the file kept across openings, and
threads reading while another writes."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nearline.archive import Collection, Item, Search, SQLiteCatalogue, modis_like_items
from nearline.testing.catalogue import CatalogueTests
from nearline.testing.counting import OVER, SITE
from nearline.testing.items import DAY, EVERYTHING, T0, VIEWERS, follow, keys, make_item
from nearline.testing.reference import Reference

from .crowded import COLLECTIONS, GRANULE, NARROW, PAGED, PER_COLLECTION, fill_crowded

STEP = 10  # VM instructions per call of the progress handler


class TestSQLiteCatalogue(CatalogueTests):
    def make_catalogue(self, tmp_path: Path) -> SQLiteCatalogue:
        return SQLiteCatalogue(tmp_path / "catalogue.db")


@contextmanager
def vm_steps(catalogue: SQLiteCatalogue) -> Iterator[list[int]]:
    """Counts (in ``[0]``) the VM instructions SQLite runs for this thread inside the block."""
    connection = catalogue.database.connection()
    counted = [0]

    def tick() -> int:
        counted[0] += STEP
        return 0  # go on

    connection.set_progress_handler(tick, STEP)
    try:
        yield counted
    finally:
        connection.set_progress_handler(None, STEP)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SQLiteCatalogue, Reference]]:
    """The crowded catalogue (crowded.py) in SQLite."""
    catalogue = SQLiteCatalogue(tmp_path_factory.mktemp("big") / "catalogue.db")
    reference = fill_crowded(catalogue)
    yield catalogue, reference
    catalogue.close()


def full_scan_steps(catalogue: SQLiteCatalogue) -> int:
    """What reading every item's row costs."""
    with vm_steps(catalogue) as steps:
        catalogue.database.query("SELECT rowid FROM items WHERE end_us < 0")
    return steps[0]


@pytest.mark.parametrize("search", NARROW.values(), ids=NARROW.keys())
def test_a_search_reads_a_small_part_of_100k_items(
    big: tuple[SQLiteCatalogue, Reference], search: Search
) -> None:
    catalogue, reference = big
    with vm_steps(catalogue) as steps:
        page = catalogue.search(search)
    assert keys(page.items) == keys(reference.matches(search)[: search.limit])
    assert page.items
    full = full_scan_steps(catalogue)
    assert full > COLLECTIONS * PER_COLLECTION  # a full scan takes a step or more per item
    assert steps[0] < 0.05 * full


@pytest.mark.parametrize("search", PAGED.values(), ids=PAGED.keys())
def test_page_50_costs_what_page_1_costs(
    big: tuple[SQLiteCatalogue, Reference], search: Search
) -> None:
    catalogue, reference = big
    with vm_steps(catalogue) as first:
        page = catalogue.search(search)
    for _ in range(48):
        page = catalogue.search(replace(search, token=page.next_token))
    with vm_steps(catalogue) as fiftieth:
        page = catalogue.search(replace(search, token=page.next_token))
    assert keys(page.items) == keys(reference.matches(search)[49 * 20 : 50 * 20])
    assert fiftieth[0] < 2 * first[0]


def page_costs(path: Path, count: int, searches: list[Search]) -> list[int]:
    """VM steps of each search, over ``count`` 5-minute granules and one from 1999."""
    catalogue = SQLiteCatalogue(path)
    catalogue.put_collection(Collection("c"))
    catalogue.add_items([make_item("old", start=datetime(1999, 1, 1, tzinfo=UTC))])
    catalogue.add_items([make_item(f"g{n}", start=T0 + n * GRANULE) for n in range(count)])
    costs = []
    for search in searches:
        with vm_steps(catalogue) as steps:
            assert len(catalogue.search(search).items) == search.limit
        costs.append(steps[0])
    catalogue.close()
    return costs


def test_one_old_item_does_not_make_pages_cost_more_in_bigger_collections(tmp_path: Path) -> None:
    """A collection's first search window is sized from its density (count over time span),
    which one item 22 years before the rest puts out by a thousand times; a page must still
    cost the same whether the collection holds 2,000 items or 16,000."""
    searches = [
        Search(limit=10),
        Search(start=T0 + 2 * DAY, limit=10),
        Search(bbox=(1, 1, 2, 2), start=T0 + DAY, limit=10),
    ]
    small = page_costs(tmp_path / "small.db", 2000, searches)
    large = page_costs(tmp_path / "large.db", 16_000, searches)
    for search, few, many in zip(searches, small, large, strict=True):
        assert many < 1.5 * few, f"{search}: {many} steps, {few} in a collection 1/8 the size"


def test_reopening_the_file_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "catalogue.db"
    catalogue = SQLiteCatalogue(path)
    catalogue.put_collection(Collection("terra", title="Terra", properties={"k": [1]}))
    catalogue.put_collection(Collection("mine", owner="alice"))
    terra = list(modis_like_items(300, collection="terra", start=T0))
    mine = modis_like_items(50, collection="mine", start=T0, seed=1, owner="alice")
    catalogue.add_items([*terra, *mine])
    search = Search(viewer="alice", limit=25)
    listed = {viewer: catalogue.list_collections(viewer=viewer) for viewer in VIEWERS}
    pages = follow(catalogue, search)
    catalogue.close()

    reopened = SQLiteCatalogue(path)
    try:
        assert {viewer: reopened.list_collections(viewer=viewer) for viewer in VIEWERS} == listed
        assert follow(reopened, search) == pages
        assert reopened.search(replace(search, token=pages[3].next_token)) == pages[4]
        assert reopened.get_item("terra", terra[7].id) == pages[0].items[14]
        reopened.add_items([make_item("late", "terra", start=terra[0].start)])
        at_first = Search(start=T0, end=T0, collections=("terra",))
        assert [item.id for item in reopened.search(at_first).items] == [terra[0].id, "late"]
    finally:
        reopened.close()


def test_two_threads_read_while_one_writes(tmp_path: Path) -> None:
    """The writer adds one of alice's own items and replaces 40 public ones (20 in ``a``,
    20 in ``b``) by a new version, one transaction each time, again and again. Readers (bob)
    always see the 40, all of one version, in order, and never alice's."""
    catalogue = SQLiteCatalogue(tmp_path / "catalogue.db")
    catalogue.put_collection(Collection("a"))
    catalogue.put_collection(Collection("b"))

    def version(v: int) -> list[Item]:
        """The 40 public items, version ``v``, in the order a search gives them."""
        return [
            replace(make_item(f"{name}{n}", name, start=T0 + n * GRANULE), properties={"v": v})
            for n in range(20)
            for name in "ab"
        ]

    catalogue.add_items(version(0))
    reading = 2
    errors: list[BaseException] = []
    seen: dict[int, list[int]] = {0: [], 1: []}

    def write() -> None:
        try:
            v = 0
            while reading and v < 10_000:
                v += 1
                secret = make_item(f"secret-{v}", "a", start=T0 + DAY, owner="alice")
                catalogue.add_items([secret, *version(v)])
        except BaseException as error:
            errors.append(error)

    def read(reader: int) -> None:
        nonlocal reading
        search = Search(collections=("a", "b"), end=T0 + DAY / 2, limit=100, viewer="bob")
        try:
            for _ in range(150):
                items = catalogue.search(search).items
                assert [item.id for item in items if item.owner is not None] == []
                assert items == version(items[0].properties["v"])
                seen[reader].append(items[0].properties["v"])
        except BaseException as error:
            errors.append(error)
        finally:
            reading -= 1

    threads = [threading.Thread(target=read, args=(reader,)) for reader in (0, 1)]
    threads.append(threading.Thread(target=write))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    catalogue.close()
    assert errors == []
    for versions in seen.values():
        assert versions == sorted(versions)
        assert versions[-1] > versions[0]


def site_catalogue(path: Path) -> tuple[SQLiteCatalogue, Search]:
    """6,000 MODIS-like swaths (21 days), and a search of a small place over all of them."""
    catalogue = SQLiteCatalogue(path)
    catalogue.put_collection(Collection("terra"))
    catalogue.add_items(modis_like_items(6000, collection="terra", start=T0, seed=3))
    return catalogue, Search(bbox=SITE, limit=10, count_to=EVERYTHING)


def test_a_kept_count_costs_the_next_pages_nothing_and_an_addition_little(
    tmp_path: Path,
) -> None:
    """The first page counts every candidate; the next reads the catalogue's state (two
    numbers) and finds the count kept; after an addition, only the new item is read."""
    catalogue, search = site_catalogue(tmp_path / "catalogue.db")
    with vm_steps(catalogue) as first:
        page = catalogue.search(search)
    following = replace(search, token=page.next_token)
    with vm_steps(catalogue) as plain:
        catalogue.search(replace(following, count_to=0))
    with vm_steps(catalogue) as counted:
        assert catalogue.search(following).matched == page.matched
    catalogue.add_items([make_item("over", "terra", start=T0 + DAY, box=OVER)])
    with vm_steps(catalogue) as added:
        assert catalogue.search(following).matched == page.matched + 1
    catalogue.close()
    counting = first[0] - plain[0]
    assert counted[0] - plain[0] < counting / 10
    assert added[0] - plain[0] < counting / 5


def test_a_catalogue_from_before_places_and_removals_is_upgraded_on_opening(
    tmp_path: Path,
) -> None:
    """The place tree is filled from the space-time tree's boxes (those with a place), and
    each collection's removals start at 0."""
    path = tmp_path / "catalogue.db"
    catalogue, search = site_catalogue(path)
    catalogue.add_items([make_item("nowhere", "terra", box=None)])
    matched = catalogue.search(search).matched
    places = catalogue.database.query("SELECT * FROM items_place ORDER BY id")
    boxes = catalogue.database.query("SELECT count(*), count(DISTINCT id / 4) FROM items_index")
    catalogue.close()
    with sqlite3.connect(path) as old:  # the schema as it was
        old.execute("ALTER TABLE collections DROP COLUMN removed")
        old.execute("DROP TABLE items_place")
    catalogue = SQLiteCatalogue(path)
    try:
        again = catalogue.database.query("SELECT * FROM items_place ORDER BY id")
        assert [tuple(row) for row in again] == [tuple(row) for row in places]
        assert tuple(boxes[0]) == (len(places) + 1, 6001)  # all but the one with no place
        assert catalogue.search(search).matched == matched
        over = [item.id for item in catalogue.search(replace(search, limit=2)).items]
        catalogue.delete_items("terra", over)
        assert catalogue.search(search).matched == matched - 2
    finally:
        catalogue.close()
