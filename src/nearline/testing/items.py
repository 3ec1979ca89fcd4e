"""Items, collections and filled catalogues to test a
:class:`~nearline.archive._base.Catalogue` with, and the helpers that read one back."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from nearline.archive import (
    Asset,
    BBox,
    Catalogue,
    Collection,
    Item,
    Page,
    Search,
    modis_like_items,
)
from nearline.testing.reference import Key, Reference

T0 = datetime(2021, 3, 1, tzinfo=UTC)
DAY = timedelta(days=1)
VIEWERS = (None, "alice", "bob", "carol")
EVERYTHING = 10**9  # a count_to no catalogue here reaches: the count is always exact


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
