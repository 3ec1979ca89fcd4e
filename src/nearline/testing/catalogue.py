"""Conformance tests every :class:`~nearline.archive._base.Catalogue` should pass.

Subclass :class:`CatalogueTests` in a pytest module as ``class TestMyCatalogue(CatalogueTests)``
and supply :meth:`~CatalogueTests.make_catalogue`. Searches are checked against
:class:`~nearline.testing.reference.Reference`, a brute-force filter of every item: shapely
``intersects`` on the GeoJSON footprint, inclusive time ranges (``item.end >= start`` and
``item.start <= end``), and visibility (the item's and its collection's owner is None or the
viewer). Answers come in start-time order, then insertion order, where an item added again
counts from its last addition. Needs pytest and hypothesis (the ``dev`` extra); nothing in
nearline imports this module.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shapely.geometry import shape

from nearline.archive import Asset, BBox, Catalogue, Collection, Item, Search
from nearline.errors import (
    CollectionNotFound,
    Conflict,
    InvalidRequest,
    ItemNotFound,
    SearchError,
)
from nearline.testing.counting import CountTests
from nearline.testing.items import (
    DAY,
    EVERYTHING,
    T0,
    Filled,
    as_stored,
    bad_items,
    filled_items,
    follow,
    found,
    inside,
    keys,
    make_item,
    refusal,
    split_items,
    square,
    visibility_catalogue,
)
from nearline.testing.reference import Reference
from nearline.testing.strategies import searches


class CatalogueTests(CountTests):
    """Generic tests of the :class:`~nearline.archive._base.Catalogue` contract (its counts
    as items come and go: :class:`~nearline.testing.counting.CountTests`)."""

    def make_catalogue(self, tmp_path: Path) -> Catalogue:
        """A new, empty catalogue keeping its files (if any) in ``tmp_path``. Also called on a
        fresh instance for the catalogue a whole class shares."""
        raise NotImplementedError

    @pytest.fixture
    def catalogue(self, tmp_path: Path) -> Iterator[Catalogue]:
        catalogue = self.make_catalogue(tmp_path)
        yield catalogue
        catalogue.close()

    @pytest.fixture(scope="class")
    @classmethod
    def filled(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Filled]:
        """The catalogue of :func:`filled_items` (and some moved an hour later), once a class."""
        catalogue = cls().make_catalogue(tmp_path_factory.mktemp("filled"))
        reference = Reference()
        collections, items = filled_items()
        for collection in collections:
            catalogue.put_collection(collection)
            reference.owners[collection.id] = collection.owner
        for first in range(0, len(items), 400):
            batch = items[first : first + 400]
            assert catalogue.add_items(batch) == len(batch)
        moved = [
            replace(item, start=item.start + DAY / 24, end=item.end + DAY / 24)
            for item in items[:: len(items) // 20]
        ]
        catalogue.add_items(moved)
        reference.add([*items, *moved])
        moments = sorted({t for item in reference.items.values() for t in (item.start, item.end)})
        yield Filled(catalogue, reference, moments)
        catalogue.close()

    # -- collections ------------------------------------------------------------------------
    def test_collections_are_put_got_and_listed(self, catalogue: Catalogue) -> None:
        b = Collection(
            "b",
            title="B",
            description="the b",
            license="CC-BY-4.0",
            properties={"keywords": ["ndvi"], "providers": [{"name": "x"}]},
        )
        a = Collection("a")
        catalogue.put_collection(b)
        catalogue.put_collection(a)
        assert catalogue.get_collection("b") == b
        assert catalogue.list_collections() == [a, b]

    def test_an_update_changes_the_description_and_keeps_items_and_owner(
        self, catalogue: Catalogue
    ) -> None:
        catalogue.put_collection(Collection("c", title="old", owner="alice"))
        catalogue.add_items([make_item("x", owner="alice"), make_item("y")])
        extent = catalogue.get_collection("c", viewer="alice").extent
        catalogue.put_collection(
            Collection(
                "c", title="new", description="d", license="MIT", owner="alice", properties={"k": 1}
            )
        )
        got = catalogue.get_collection("c", viewer="alice")
        assert got == Collection(
            "c",
            title="new",
            description="d",
            license="MIT",
            owner="alice",
            properties={"k": 1},
            extent=extent,
        )
        assert found(catalogue, viewer="alice") == ["x", "y"]

    @pytest.mark.parametrize("claimant", [None, "bob"])
    def test_a_collection_belongs_to_its_owner(
        self, catalogue: Catalogue, claimant: str | None
    ) -> None:
        """An update under another owner (or none: public) is refused and changes nothing:
        it would otherwise rename, or make public, someone else's collection."""
        catalogue.put_collection(Collection("c", title="old", owner="alice"))
        with pytest.raises(Conflict, match="'c' is taken"):
            catalogue.put_collection(Collection("c", title="new", owner=claimant))
        assert catalogue.get_collection("c", viewer="alice").title == "old"
        with pytest.raises(CollectionNotFound):  # still private
            catalogue.get_collection("c")

    def test_the_extent_widens_as_items_arrive(self, catalogue: Catalogue) -> None:
        catalogue.put_collection(Collection("c"))
        assert catalogue.get_collection("c").extent == (None, None, None)
        catalogue.add_items([make_item("a", box=(0, 0, 10, 10))])
        assert catalogue.get_collection("c").extent == ((0, 0, 10, 10), T0, T0 + DAY / 288)
        catalogue.add_items([make_item("b", start=T0 - DAY, box=(20, -5, 30, 5))])
        assert catalogue.get_collection("c").extent == ((0, -5, 30, 10), T0 - DAY, T0 + DAY / 288)
        catalogue.add_items([make_item("c", start=T0 + DAY, minutes=60, box=None)])
        assert catalogue.get_collection("c").extent == (
            (0, -5, 30, 10),
            T0 - DAY,
            T0 + DAY + DAY / 24,
        )

    def test_an_unknown_collection_is_not_found(self, catalogue: Catalogue) -> None:
        with pytest.raises(CollectionNotFound, match="nosuch"):
            catalogue.get_collection("nosuch")

    def test_items_of_a_missing_collection_add_nothing(self, catalogue: Catalogue) -> None:
        catalogue.put_collection(Collection("c"))
        with pytest.raises(CollectionNotFound, match="nosuch"):
            catalogue.add_items([make_item("a"), make_item("b", "nosuch")])
        with pytest.raises(ItemNotFound):
            catalogue.get_item("c", "a")
        assert found(catalogue) == []
        assert catalogue.get_collection("c").extent == (None, None, None)

    # -- items ------------------------------------------------------------------------------
    def test_an_item_comes_back_equal(self, catalogue: Catalogue) -> None:
        catalogue.put_collection(Collection("c"))
        start = datetime(2021, 3, 1, 12, 0, 0, 123456, tzinfo=timezone(timedelta(hours=5.5)))
        item = Item(
            id="granule.A2021060.1200",
            collection="c",
            start=start,
            end=start + timedelta(seconds=299, microseconds=1),
            geometry={
                "type": "MultiPolygon",
                "coordinates": [
                    square(170, -10, 180, 10)["coordinates"],
                    square(-180, -10, -170, 10)["coordinates"],
                ],
            },
            bbox=(170.0, -10.0, -170.0, 10.0),
            properties={"platform": "terra", "nested": {"a": [1, 2.5, None, "x"]}, "é": True},
            assets={
                "data": Asset(
                    "/archive/g.hdf",
                    "application/x-hdf",
                    12345,
                    "ab" * 32,
                    ("data",),
                    "the granule",
                ),
                "thumbnail": Asset("bundle:file:///t#b!g.png", "image/png", roles=("thumbnail",)),
            },
            owner="alice",
        )
        placeless = replace(make_item("placeless", box=None), start=T0 - 100 * 365 * DAY)
        assert catalogue.add_items([item, placeless]) == 2
        got = catalogue.get_item("c", item.id, viewer="alice")
        assert got == item
        assert got.start.utcoffset() == got.end.utcoffset() == timedelta(0)
        assert got.start.isoformat() == "2021-03-01T06:30:00.123456+00:00"
        assert catalogue.get_item("c", "placeless") == placeless
        assert keys(catalogue.search(Search(viewer="alice")).items) == keys([placeless, item])
        assert catalogue.search(Search(ids=(item.id,), viewer="alice")).items == [item]

    def test_adding_again_replaces_by_collection_and_id(self, catalogue: Catalogue) -> None:
        catalogue.put_collection(Collection("c"))
        catalogue.put_collection(Collection("d"))
        old = make_item("x", box=(0, 0, 10, 10))
        twin = make_item("x", "d", box=(0, 0, 10, 10))
        catalogue.add_items([old, twin])
        new = make_item("x", start=T0 + DAY, box=(50, 50, 60, 60))
        assert catalogue.add_items([new]) == 1
        assert catalogue.get_item("c", "x") == new
        assert catalogue.get_item("d", "x") == twin
        assert found(catalogue, bbox=(1, 1, 2, 2), start=T0, end=T0, collections=("c",)) == []
        assert found(catalogue, bbox=(51, 51, 52, 52), start=T0 + DAY, end=T0 + DAY) == ["x"]
        assert keys(catalogue.search(Search()).items) == [("d", "x"), ("c", "x")]

    def test_the_last_duplicate_in_a_batch_wins(self, catalogue: Catalogue) -> None:
        catalogue.put_collection(Collection("c"))
        first, last = make_item("x"), make_item("x", start=T0 + DAY, box=(5, 5, 6, 6))
        assert catalogue.add_items([first, make_item("y"), last]) == 2
        assert catalogue.get_item("c", "x") == last
        assert found(catalogue) == ["y", "x"]
        assert found(catalogue, start=T0, end=T0) == ["y"]

    def test_changes_give_every_new_and_replaced_item_once_in_order(
        self, catalogue: Catalogue
    ) -> None:
        catalogue.put_collection(Collection("c"))
        catalogue.put_collection(Collection("p", owner="alice"))
        start = catalogue.position()
        assert catalogue.changes(start) == ([], start)
        catalogue.add_items([make_item("a"), make_item("b")])
        catalogue.add_items([make_item("x", collection="p", owner="alice")])
        first, here = catalogue.changes(start, limit=2)
        rest, there = catalogue.changes(here)
        assert [i.id for i in first + rest] == ["a", "b", "x"]
        assert rest[0].owner == "alice"  # the service's view: every owner's items
        assert catalogue.changes(there) == ([], there)
        assert there == catalogue.position()
        replaced = make_item("a", minutes=7)
        catalogue.add_items([replaced])
        again, last = catalogue.changes(there)
        assert [(i.id, i.end) for i in again] == [("a", replaced.end)]
        assert last > there

    def test_a_position_is_never_given_again_after_a_delete(self, catalogue: Catalogue) -> None:
        """A subscriber that has seen the newest item must see the next one, even when the
        newest was deleted in between."""
        catalogue.put_collection(Collection("c"))
        catalogue.add_items([make_item("a"), make_item("b")])
        seen = catalogue.position()
        catalogue.delete_items("c", ["b"])
        catalogue.add_items([make_item("z")])
        assert [i.id for i in catalogue.changes(seen)[0]] == ["z"]

    def test_delete_items_ignores_missing_ones(self, catalogue: Catalogue) -> None:
        catalogue.put_collection(Collection("c"))
        catalogue.add_items([make_item(name) for name in "abc"])
        assert catalogue.delete_items("c", ["a", "c", "nosuch", "a"]) == 2
        assert catalogue.delete_items("c", ["a"]) == 0
        with pytest.raises(ItemNotFound):
            catalogue.get_item("c", "a")
        assert catalogue.get_item("c", "b") == make_item("b")
        assert found(catalogue) == found(catalogue, bbox=(1, 1, 2, 2), start=T0) == ["b"]

    @pytest.mark.parametrize(
        ("bad", "named"),
        [(bad, named) for _, bad, named in bad_items()],
        ids=[name for name, _, _ in bad_items()],
    )
    def test_a_bad_item_spoils_the_whole_batch(
        self, catalogue: Catalogue, bad: Item, named: str
    ) -> None:
        catalogue.put_collection(Collection("c"))
        kept = make_item("kept")
        catalogue.add_items([kept])
        before = catalogue.get_collection("c")
        batch = [make_item("new", start=T0 - DAY), make_item("kept", start=T0 + DAY), bad]
        with pytest.raises(InvalidRequest, match=named):
            catalogue.add_items(batch)
        assert catalogue.get_item("c", "kept") == kept
        with pytest.raises(ItemNotFound):
            catalogue.get_item("c", "new")
        assert found(catalogue) == ["kept"]
        assert catalogue.get_collection("c") == before

    # -- search -----------------------------------------------------------------------------
    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.differing_executors, HealthCheck.too_slow],
    )
    @given(data=st.data())
    def test_search_finds_what_brute_force_finds_in_order(
        self, filled: Filled, data: st.DataObject
    ) -> None:
        search = data.draw(searches(filled), label="search")
        count_to = data.draw(st.sampled_from([0, 3, EVERYTHING]), label="count_to")
        pages = follow(filled.catalogue, replace(search, count_to=count_to))
        got = [item for page in pages for item in page.items]
        expected = filled.reference.matches(search)
        assert keys(got) == keys(expected)
        assert got == [as_stored(item) for item in expected]
        assert [len(page.items) for page in pages[:-1]] == [search.limit] * (len(pages) - 1)
        assert 0 < len(pages[-1].items) <= search.limit or (len(pages) == 1 and not expected)
        # the count: every page's is the whole answer's, exact, or absent past count_to
        counts = {page.matched for page in pages}
        if count_to == 0:
            assert counts == {None}
        elif count_to == EVERYTHING:
            assert counts == {len(expected)}
        else:
            assert counts <= ({None} if len(expected) > count_to else {None, len(expected)})

    def test_searches_nothing_can_match_find_nothing(self, filled: Filled) -> None:
        """A time range ending before it starts, a bbox with its south north of its north,
        a geometry with no positions: no items, counted as none."""
        for search in (
            Search(start=T0 + DAY, end=T0, count_to=10),
            Search(bbox=(-180, 10, 180, -10), count_to=10),
            Search(intersects={"type": "MultiPolygon", "coordinates": [[]]}, count_to=10),
            Search(intersects={"type": "GeometryCollection", "geometries": []}),
        ):
            page = filled.catalogue.search(search)
            assert (page.items, page.next_token) == ([], None), search
            assert page.matched == (0 if search.count_to else None), search

    def test_granules_split_at_the_antimeridian_are_found_on_both_sides(
        self, filled: Filled
    ) -> None:
        split = split_items(filled)[:25]
        assert len(split) == 25
        for item in split:
            for part in shape(item.geometry).geoms:
                search = Search(
                    bbox=inside(part),
                    start=item.start,
                    end=item.start,
                    collections=(item.collection,),
                    viewer=item.owner,
                    limit=100,
                )
                assert (item.collection, item.id) in keys(filled.catalogue.search(search).items)

    def test_polar_caps_are_found_at_any_longitude(self, filled: Filled) -> None:
        caps = [
            item
            for item in filled.reference.items.values()
            if item.bbox is not None
            and item.bbox[0] == -180
            and item.bbox[2] == 180
            and item.geometry["type"] == "Polygon"
            and abs(item.bbox[1] + item.bbox[3]) > 90
        ][:10]
        assert len(caps) == 10
        for item in caps:
            north = item.bbox[3] == 90
            lat = 89.0 if north else -89.0
            for lon in (-179.5, -90.0, 0.0, 45.0, 179.0):
                search = Search(
                    bbox=(lon, lat - 0.5, lon + 0.5, lat + 0.5),
                    start=item.start,
                    end=item.end,
                    viewer=item.owner,
                    limit=100,
                )
                assert (item.collection, item.id) in keys(filled.catalogue.search(search).items)

    # -- paging -----------------------------------------------------------------------------
    def test_named_items_are_counted_only_up_to_count_to(self, filled: Filled) -> None:
        """Four named items, one a page: counted exactly up to ``count_to``, absent past it
        (as for any search), the same on every page."""
        search = Search(collections=("terra",), start=T0, end=T0 + DAY)
        named = tuple(item.id for item in filled.reference.matches(search)[:4])
        for count_to, matched in ((3, None), (4, 4), (EVERYTHING, 4)):
            pages = follow(filled.catalogue, Search(ids=named, limit=1, count_to=count_to))
            assert sorted(item.id for page in pages for item in page.items) == sorted(named)
            assert {page.matched for page in pages} == {matched}, count_to

    def test_pages_are_full_but_the_last(self, filled: Filled) -> None:
        search = Search(collections=("terra",), start=T0, end=T0 + DAY, limit=7)
        pages = follow(filled.catalogue, search)
        expected = filled.reference.matches(search)
        assert len(expected) > 200
        assert [len(page.items) for page in pages] == [7] * (len(expected) // 7) + (
            [len(expected) % 7] if len(expected) % 7 else []
        )
        assert [page.next_token is None for page in pages] == [False] * (len(pages) - 1) + [True]

    def test_tokens_carry_the_search_on_and_need_no_state(self, filled: Filled) -> None:
        one = Search(bbox=(-20, -30, 60, 30), start=T0, end=T0 + 2 * DAY, limit=5)
        two = Search(collections=("aqua", "terra"), limit=3, viewer="bob")
        first_one, first_two = filled.catalogue.search(one), filled.catalogue.search(two)
        rest_two = filled.catalogue.search(replace(two, token=first_two.next_token))
        again = filled.catalogue.search(replace(one, token=first_one.next_token))
        assert keys([*first_one.items, *again.items]) == keys(filled.reference.matches(one)[:10])
        assert keys([*first_two.items, *rest_two.items]) == keys(filled.reference.matches(two)[:6])

    @pytest.mark.parametrize(
        "token", ["", "not a token", "!!!!", "AAAA", "é", "x" * 1000, "AAAAAAAAAAAAAAAAAAAAA"]
    )
    def test_a_forged_token_is_refused(self, catalogue: Catalogue, token: str) -> None:
        catalogue.put_collection(Collection("c"))
        catalogue.add_items([make_item("a")])
        with pytest.raises(SearchError, match="token"):
            catalogue.search(Search(token=token))

    # -- visibility -------------------------------------------------------------------------
    def test_another_users_collection_is_just_not_there(self, catalogue: Catalogue) -> None:
        visibility_catalogue(catalogue)
        for viewer in (None, "bob"):
            hidden = refusal(lambda v=viewer: catalogue.get_collection("mine", viewer=v))
            missing = refusal(lambda v=viewer: catalogue.get_collection("nosuch", viewer=v))
            assert hidden[0] is missing[0] is CollectionNotFound
            assert hidden[1:] == (missing[1], missing[2].replace("nosuch", "mine"))
            assert [c.id for c in catalogue.list_collections(viewer=viewer)] == ["c"]
        assert [c.id for c in catalogue.list_collections(viewer="alice")] == ["c", "mine"]
        assert catalogue.get_collection("mine", viewer="alice").owner == "alice"

    def test_another_users_items_are_just_not_there(self, catalogue: Catalogue) -> None:
        visibility_catalogue(catalogue)
        for viewer in (None, "bob"):
            for collection, item in (("c", "alices"), ("mine", "in-mine")):
                hidden = refusal(
                    lambda c=collection, i=item, v=viewer: catalogue.get_item(c, i, viewer=v)
                )
                missing = refusal(
                    lambda c=collection, v=viewer: catalogue.get_item(c, "nosuch", viewer=v)
                )
                assert hidden[0] is missing[0] is ItemNotFound
                assert hidden[1:] == (missing[1], missing[2].replace("nosuch", item))
            assert found(catalogue, viewer=viewer) == ["public"]
            assert found(catalogue, viewer=viewer, collections=("mine",)) == []
            assert found(catalogue, viewer=viewer, ids=("alices", "in-mine")) == []
            assert found(catalogue, viewer=viewer, bbox=(1, 1, 2, 2), start=T0) == ["public"]
        assert sorted(found(catalogue, viewer="alice")) == ["alices", "in-mine", "public"]
        assert catalogue.get_item("mine", "in-mine", viewer="alice").owner == "alice"

    # -- the antimeridian and the poles -----------------------------------------------------
    @pytest.mark.parametrize(
        ("bbox", "expected"),
        [
            ((172, 12, 178, 18), ["split"]),
            ((-178, 12, -172, 18), ["split"]),
            ((175, 12, -175, 18), ["split"]),
            ((179.9, 0, -179.9, 30), ["split"]),
            ((-169, 12, 169, 18), ["plain"]),
            ((-160, 0, -100, 30), []),
            ((100, 12, 160, 18), []),
            ((175, 21, -175, 30), []),
            ((100, 80, 101, 85), ["cap"]),
            ((-179.5, 71, -179, 89), ["cap"]),
            ((179, 75, -179, 76), ["cap"]),
            ((0, 60, 10, 69), []),
        ],
    )
    def test_footprints_at_the_antimeridian_and_the_poles(
        self, catalogue: Catalogue, bbox: BBox, expected: list[str]
    ) -> None:
        catalogue.put_collection(Collection("c"))
        split = replace(
            make_item("split"),
            geometry={
                "type": "MultiPolygon",
                "coordinates": [
                    square(170, 10, 180, 20)["coordinates"],
                    square(-180, 10, -170, 20)["coordinates"],
                ],
            },
            bbox=(170, 10, -170, 20),
        )
        catalogue.add_items(
            [
                split,
                make_item("plain", box=(0, 10, 10, 20)),
                make_item("cap", box=(-180, 70, 180, 90)),
            ]
        )
        assert sorted(found(catalogue, bbox=bbox)) == expected
        assert sorted(found(catalogue, bbox=bbox, start=T0, end=T0 + DAY)) == expected
        assert sorted(found(catalogue, bbox=bbox, start=T0 + DAY)) == []
