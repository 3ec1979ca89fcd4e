"""Small real files catalogued as granules, for orders that do not need real swath data."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from nearline.archive import Asset, Collection, Item, open_catalogue

from ..live_service import database_of

COLLECTION = "test-granules"
START = datetime(2012, 12, 12, tzinfo=UTC)


def add_granules(
    data: Path,
    count: int,
    *,
    collection: str = COLLECTION,
    owner: str | None = None,
    keep: Callable[[Path], str] | None = None,
) -> list[Item]:
    """``count`` files of distinct sizes, one 5-minute granule each, walking east along the
    equator, catalogued in the service's catalogue. ``keep``: puts a file where it is to
    lie (an object store) and gives its location; by default it lies where it is written."""
    folder = data.parent / f"{data.name}-granules" / collection
    folder.mkdir(parents=True, exist_ok=True)
    items = []
    for index in range(count):
        path = folder / f"granule-{index:03d}.dat"
        payload = bytes([index % 256]) * (1000 + 37 * index)
        path.write_bytes(payload)
        west = -170.0 + 10.0 * index
        start = START + timedelta(minutes=5 * index)
        items.append(
            Item(
                id=f"granule-{index:03d}",
                collection=collection,
                start=start,
                end=start + timedelta(minutes=5),
                geometry={
                    "type": "Polygon",
                    "coordinates": [
                        [
                            [west, -5.0],
                            [west + 8.0, -5.0],
                            [west + 8.0, 5.0],
                            [west, 5.0],
                            [west, -5.0],
                        ]
                    ],
                },
                bbox=(west, -5.0, west + 8.0, 5.0),
                properties={"platform": "test"},
                assets={
                    "data": Asset(
                        location=keep(path) if keep else str(path),
                        size=len(payload),
                        sha256=hashlib.sha256(payload).hexdigest(),
                    )
                },
                owner=owner,
            )
        )
    with open_catalogue(database_of(data), data / "catalogue.db") as catalogue:
        catalogue.put_collection(Collection(id=collection, title="Test granules"))
        catalogue.add_items(items)
    return items
