"""Conformance tests every :class:`~nearline.archive.base.Catalogue` should pass.

Subclass :class:`CatalogueTests` in a pytest module as ``class TestMyCatalogue(CatalogueTests)``
and supply :meth:`~CatalogueTests.make_catalogue`. Searches are checked against
:class:`Reference`, a brute-force filter of every item: shapely ``intersects`` on the GeoJSON
footprint, inclusive time ranges (``item.end >= start`` and ``item.start <= end``), and
visibility (the item's and its collection's owner is None or the viewer). Answers come in
start-time order, then insertion order, where an item added again counts from its last
addition. Needs pytest and hypothesis (the ``dev`` extra); nothing in nearline imports this
module.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
import shapely
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shapely.geometry import shape

from nearline.archive.base import Asset, BBox, Catalogue, Collection, Item, Page, Search
from nearline.archive.synthetic import modis_like_items
from nearline.errors import (
    CollectionNotFound,
    Conflict,
    InvalidRequest,
    ItemNotFound,
    SearchError,
)

T0 = datetime(2021, 3, 1, tzinfo=UTC)
DAY = timedelta(days=1)
VIEWERS = (None, "alice", "bob", "carol")
EVERYTHING = 10**9  # a count_to no catalogue here reaches: the count is always exact
Key = tuple[str, str]  # (collection, item id)


def square(west: float, south: float, east: float, north: float) -> dict[str, Any]:
    """A GeoJSON Polygon (counter-clockwise, lists as JSON gives them back)."""
    ring = [[west, south], [east, south], [east, north], [west, north], [west, south]]
    return {"type": "Polygon", "coordinates": [ring]}


def make_item(
    id: str,
    collection: str = "c",
    *,
    start: datetime = T0,
    minutes: float = 5,
    box: BBox | None = (0.0, 0.0, 10.0, 10.0),
    owner: str | None = None,
) -> Item:
    """An item over ``box`` (None: no place) for ``minutes`` from ``start``."""
    return Item(
        id=id,
        collection=collection,
        start=start,
        end=start + timedelta(minutes=minutes),
        geometry=square(*box) if box is not None else None,
        bbox=box,
        properties={"platform": "test"},
        assets={"data": Asset(location=f"/archive/{collection}/{id}.nc", size=1)},
        owner=owner,
    )


def as_stored(item: Item) -> Item:
    """``item`` as a catalogue gives it back: its geometry through JSON (tuples as lists)."""
    geometry = orjson.loads(orjson.dumps(item.geometry)) if item.geometry is not None else None
    return replace(item, geometry=geometry)


def follow(catalogue: Catalogue, search: Search, *, most: int = 100_000) -> list[Page]:
    """Every page of ``search``, through the tokens."""
    pages = [catalogue.search(search)]
    while pages[-1].next_token is not None:
        assert len(pages) < most, f"more than {most} pages: the tokens go round in circles"
        pages.append(catalogue.search(replace(search, token=pages[-1].next_token)))
    return pages


def keys(items: Iterable[Item]) -> list[Key]:
    return [(item.collection, item.id) for item in items]


def found(catalogue: Catalogue, **search: Any) -> list[str]:
    """The ids of every item ``Search(**search)`` finds, all pages."""
    return [item.id for page in follow(catalogue, Search(**search)) for item in page.items]


@dataclass
class Reference:
    """What a catalogue holds, searched by brute force (every item tested)."""

    owners: dict[str, str | None] = field(default_factory=dict)  # collection -> owner
    items: dict[Key, Item] = field(default_factory=dict)  # in insertion order
    shapes: dict[Key, Any] = field(default_factory=dict)

    def add(self, items: Iterable[Item]) -> None:
        for item in items:
            key = (item.collection, item.id)
            self.items.pop(key, None)  # added again: now the latest
            self.shapes.pop(key, None)
            self.items[key] = item

    def matches(self, search: Search) -> list[Item]:
        """Every item ``search`` finds, each tested, in start time and insertion order."""
        viewer = search.viewer
        hits = [
            (item.start, order, key, item)
            for order, (key, item) in enumerate(self.items.items())
            if self.owners[item.collection] in (None, viewer)
            and item.owner in (None, viewer)
            and (search.collections is None or item.collection in search.collections)
            and (search.ids is None or item.id in search.ids)
            and (search.start is None or item.end >= search.start)
            and (search.end is None or item.start <= search.end)
        ]
        where = _where(search)
        if where is not None:
            shapes = self.footprints([key for _, _, key, _ in hits])
            inside = np.zeros(len(hits), dtype=bool)
            for part in where:
                inside |= shapely.intersects(shapes, part)  # no footprint: never
            hits = [hit for hit, hit_inside in zip(hits, inside, strict=True) if hit_inside]
        return [item for *_, item in sorted(hits, key=lambda hit: hit[:2])]

    def footprints(self, keys: list[Key]) -> np.ndarray:
        """The shapely footprints (None: no place) of ``keys``, parsed once each."""
        new = [key for key in keys if key not in self.shapes]
        texts = [orjson.dumps(self.items[key].geometry) for key in new]
        placed = [i for i, text in enumerate(texts) if text != b"null"]
        parsed = shapely.from_geojson([texts[i] for i in placed]) if placed else []
        self.shapes.update(dict.fromkeys(new))
        self.shapes.update({new[i]: footprint for i, footprint in zip(placed, parsed, strict=True)})
        shapes = np.empty(len(keys), dtype=object)
        shapes[:] = [self.shapes[key] for key in keys]
        return shapes


def _where(search: Search) -> list[Any] | None:
    if search.intersects is not None:
        return [shape(search.intersects)]
    if search.bbox is None:
        return None
    west, south, east, north = search.bbox
    if west <= east:
        return [shapely.box(west, south, east, north)]
    return [shapely.box(west, south, 180, north), shapely.box(-180, south, east, north)]


@dataclass
class Filled:
    """A catalogue filled once per test class, and its reference."""

    catalogue: Catalogue
    reference: Reference
    moments: list[datetime]  # every item's start and end, sorted


def filled_items() -> tuple[list[Collection], list[Item]]:
    """About 2,600 items: MODIS-like granules of three collections (one alice's own, one
    starting at the same moments as another), bob's own granules in a public collection,
    items with no place, multi-day items and one from 1999; shuffled."""
    terra = list(modis_like_items(1200, collection="terra", start=T0, seed=1))
    aqua = list(modis_like_items(900, collection="aqua", start=T0, seed=2))
    mine = modis_like_items(300, collection="alice-runs", start=T0 + DAY, seed=3, owner="alice")
    bobs = modis_like_items(150, collection="terra", start=T0 + timedelta(seconds=150), seed=4)
    placeless = [
        make_item(f"log-{n}", "terra", start=T0 + n * DAY / 8, box=None) for n in range(30)
    ]
    long = [
        make_item(f"composite-{n}", "aqua", start=T0 + (n - 2) * DAY, minutes=3 * 1440, box=box)
        for n, box in enumerate(
            [(-180, -90, 180, 90), (100, -10, 140, 30), (-60, 40, -20, 70), (0, -80, 90, -60)]
        )
    ]
    old = make_item("old", "aqua", start=datetime(1999, 12, 31, 23, 59, tzinfo=UTC))
    items = [
        *terra,
        *aqua,
        *mine,
        *(replace(item, id=f"{item.id}.bob", owner="bob") for item in bobs),
        *placeless,
        *long,
        old,
    ]
    random.Random(7).shuffle(items)
    collections = [
        Collection("terra", title="Terra MODIS"),
        Collection("aqua"),
        Collection("alice-runs", owner="alice"),
        Collection("empty"),
    ]
    return collections, items


@st.composite
def searches(draw: st.DrawFn, filled: Filled) -> Search:
    """Random searches over ``filled``: any mix of collections, ids, a bbox (crossing the
    antimeridian or not) or an intersects geometry, an instant or interval, a limit and a
    viewer."""
    moment = st.one_of(
        st.builds(
            lambda t, nudge: t + timedelta(microseconds=nudge),
            st.sampled_from(filled.moments),
            st.sampled_from([-1, 0, 1]),
        ),
        st.datetimes(
            min_value=(T0 - 3 * DAY).replace(tzinfo=None),
            max_value=(T0 + 6 * DAY).replace(tzinfo=None),
            timezones=st.just(UTC),
        ),
    )
    when = draw(st.sampled_from(["any", "instant", "closed", "from", "until"]))
    start = end = None
    if when == "instant":
        start = end = draw(moment)
    elif when == "closed":
        start, end = sorted([draw(moment), draw(moment)])
    elif when == "from":
        start = draw(moment)
    elif when == "until":
        end = draw(moment)
    bbox = intersects = None
    where = draw(st.sampled_from(["anywhere", "bbox", "small bbox", "intersects"]))
    if where == "bbox":
        south, north = sorted(draw(st.lists(st.floats(-90, 90), min_size=2, max_size=2)))
        bbox = (draw(st.floats(-180, 180)), south, draw(st.floats(-180, 180)), north)
    elif where == "small bbox":
        west, south = draw(st.floats(-180, 179)), draw(st.floats(-90, 89))
        bbox = (west, south, west + draw(st.floats(0, 1)), south + draw(st.floats(0, 1)))
    elif where == "intersects":
        intersects = draw(geometries())
    collections = draw(
        st.none()
        | st.lists(
            st.sampled_from(["terra", "aqua", "alice-runs", "empty", "nosuch"]),
            min_size=1,
            unique=True,
        ).map(tuple)
    )
    named = [item.id for item in filled.reference.items.values()]
    ids = draw(
        st.none()
        | st.lists(st.sampled_from([*named[:200], "nosuch"]), min_size=1, max_size=5).map(tuple)
    )
    return Search(
        collections=collections,
        ids=ids,
        bbox=bbox,
        intersects=intersects,
        start=start,
        end=end,
        limit=draw(st.integers(1, 20)),
        viewer=draw(st.sampled_from(VIEWERS)),
    )


@st.composite
def geometries(draw: st.DrawFn) -> dict[str, Any]:
    """A point, a line, a convex polygon or two squares either side of the antimeridian."""
    lon, lat = draw(st.floats(-170, 170)), draw(st.floats(-80, 80))
    kind = draw(st.sampled_from(["Point", "LineString", "Polygon", "MultiPolygon"]))
    if kind == "Point":
        return {"type": "Point", "coordinates": [lon, lat]}
    if kind == "LineString":
        return {"type": "LineString", "coordinates": [[lon, lat], [lon + 10, lat + 10]]}
    if kind == "Polygon":
        radius, corners = draw(st.floats(0.01, 10)), draw(st.integers(3, 8))
        ring = shapely.Point(lon, lat).buffer(radius, quad_segs=corners).exterior.coords
        return {"type": "Polygon", "coordinates": [[list(point) for point in ring]]}
    width = draw(st.floats(0.1, 10))
    return {
        "type": "MultiPolygon",
        "coordinates": [
            square(180 - width, lat - 5, 180, lat + 5)["coordinates"],
            square(-180, lat - 5, -180 + width, lat + 5)["coordinates"],
        ],
    }


def split_items(filled: Filled) -> list[Item]:
    """The filled catalogue's granules split at the antimeridian."""
    return [
        item
        for item in filled.reference.items.values()
        if item.geometry is not None and item.geometry["type"] == "MultiPolygon"
    ]


def inside(part: Any) -> BBox:
    """A tiny bbox inside polygon ``part``."""
    point = part.representative_point()
    return (
        max(point.x - 1e-4, -180),
        max(point.y - 1e-4, -90),
        min(point.x + 1e-4, 180),
        min(point.y + 1e-4, 90),
    )


def visibility_catalogue(catalogue: Catalogue) -> None:
    """Public ``c`` with a public item and one of alice's; alice's own ``mine``."""
    catalogue.put_collection(Collection("c"))
    catalogue.put_collection(Collection("mine", owner="alice"))
    catalogue.add_items(
        [
            make_item("public"),
            make_item("alices", owner="alice"),
            make_item("in-mine", "mine", owner="alice"),
        ]
    )


def refusal(call: Any) -> tuple[type, int | None, str]:
    """The kind, status and message of the error ``call()`` raises."""
    with pytest.raises(Exception) as raised:  # noqa: PT011 - any kind: compared by the caller
        call()
    return type(raised.value), getattr(raised.value, "status", None), str(raised.value)


def bad_items() -> list[tuple[str, Item, str]]:
    """(name, item, what its refusal must name) for items a catalogue must refuse."""
    item = make_item("bad")
    return [
        ("ends before it starts", replace(item, end=T0 - DAY), "bad"),
        ("longitude 200", make_item("bad", box=(190, 0, 200, 10)), "geometry"),
        ("latitude 95", make_item("bad", box=(0, 80, 10, 95)), "geometry"),
        ("slash in id", make_item("a/b"), "a/b"),
        ("empty id", make_item(""), "id"),
        ("geometry without bbox", replace(item, bbox=None), "bad"),
        ("not GeoJSON", replace(item, geometry={"type": "Polygon", "coordinates": 1}), "geometry"),
        (
            "naive times",
            replace(item, start=T0.replace(tzinfo=None), end=T0.replace(tzinfo=None)),
            "time zone",
        ),
        ("naive start", replace(item, start=T0.replace(tzinfo=None)), "time zone"),
    ]


class CatalogueTests:
    """Generic tests of the :class:`~nearline.archive.base.Catalogue` contract."""

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
