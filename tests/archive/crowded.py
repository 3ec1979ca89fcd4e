"""The crowded catalogue both backends' cost tests search: 100,000 items in five collections,
and the searches that must read only a small part of them, or page as cheaply at page 50 as
at page 1. One definition, so SQLite and PostgreSQL are held to the same searches."""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from nearline.archive import Catalogue, Collection, Search
from nearline.testing.items import DAY, T0, make_item
from nearline.testing.reference import Reference

PER_COLLECTION = 20_000
COLLECTIONS = 5
GRANULE = timedelta(minutes=5)

#: searches that must touch under 5% of the catalogue, by name
NARROW = {
    "bbox+day": Search(bbox=(0, 0, 20, 20), start=T0 + 10 * DAY, end=T0 + 11 * DAY, limit=10_000),
    "antimeridian+day": Search(
        bbox=(170, -20, -170, 20), start=T0 + 30 * DAY, end=T0 + 31 * DAY, limit=10_000
    ),
    "triangle+day": Search(
        intersects={"type": "Polygon", "coordinates": [[[0, 30], [30, 30], [15, 60], [0, 30]]]},
        start=T0 + 60 * DAY,
        end=T0 + 61 * DAY,
        limit=10_000,
    ),
    "collection from a day": Search(collections=("c3",), start=T0 + 50 * DAY, limit=10),
    "bbox": Search(bbox=(-10, 30, 0, 40), limit=10),
    # a place of 2,800 matches over all time: never read (and sorted) whole for one page
    "place, any time": Search(bbox=(-20, -20, 20, 20), limit=10),
    "ids": Search(ids=("g7", "g19999"), limit=10),
}

#: searches whose 50th page must cost what their first does, by name
PAGED = {
    "one collection": Search(collections=("c2",), limit=20),
    "all": Search(limit=20),
    "bbox": Search(bbox=(-180, -90, 0, 0), limit=20),
    # matches rare (3%) over all time, as a site's series: read in windows of time
    "rare place": Search(bbox=(-20, -20, 20, 20), limit=20),
    "two collections from a day": Search(
        start=T0 + 5 * DAY, collections=("c0", "c4"), limit=20, viewer="someone"
    ),
}


def fill_crowded(catalogue: Catalogue) -> Reference:
    """Five collections of 20,000 consecutive 5-minute granules (70 days each, side by side
    in time), squares of 0.5-5 degrees anywhere; the reference that answers for them."""
    reference = Reference()
    pick = np.random.default_rng(0)
    for k in range(COLLECTIONS):
        name = f"c{k}"
        catalogue.put_collection(Collection(name))
        reference.owners[name] = None
        west = pick.uniform(-180, 175, PER_COLLECTION).tolist()
        south = pick.uniform(-90, 85, PER_COLLECTION).tolist()
        size = pick.uniform(0.5, 5, PER_COLLECTION).tolist()
        items = [
            make_item(f"g{n}", name, start=T0 + n * GRANULE, box=(w, s, w + d, s + d))
            for n, w, s, d in zip(range(PER_COLLECTION), west, south, size, strict=True)
        ]
        catalogue.add_items(items)
        reference.add(items)
    return reference
