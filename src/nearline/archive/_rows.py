"""Items and collections as the catalogues (SQLite and PostgreSQL) store them, and back.

An item is one row: its keys (collection, id, owner, time range as microseconds since 1970),
its footprint as WKB (for the exact spatial test) and the rest as one JSON body. Batches are
converted in bulk: shapely parses every footprint of a batch in one call, which is what lets
the catalogue take tens of thousands of items a second.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson
import shapely

from nearline.archive._base import Asset, Collection, Item
from nearline.archive._index import NO_PLACE, Box, index_boxes
from nearline.errors import InvalidRequest, ItemNotFound

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MAX_ID = 256


def microseconds(moment: datetime) -> int:
    """``moment`` (timezone-aware) as whole microseconds since 1970."""
    if moment.tzinfo is None:
        raise InvalidRequest(f"time {moment.isoformat()} has no time zone; give it in UTC")
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def moment(us: int) -> datetime:
    return datetime.fromtimestamp(us // 1_000_000, UTC).replace(microsecond=us % 1_000_000)


@dataclass(frozen=True)
class ItemRow:
    """One item ready to insert: its row values and the boxes it is indexed under."""

    collection: str
    id: str
    owner: str | None
    start_us: int
    end_us: int
    wkb: bytes | None
    body: bytes
    boxes: list[Box]


def item_rows(items: Sequence[Item]) -> list[ItemRow]:
    """``items`` checked and serialized; the footprints parsed in one bulk call."""
    for item in items:
        _check(item)
    texts = [orjson.dumps(item.geometry) if item.geometry is not None else None for item in items]
    shapes = np.full(len(items), None, dtype=object)
    present = [i for i, text in enumerate(texts) if text is not None]
    if present:
        try:
            shapes[present] = shapely.from_geojson([texts[i] for i in present])
        except shapely.errors.GEOSException as error:
            raise InvalidRequest(f"geometry: not usable GeoJSON ({error})") from None
    boxes = index_boxes(shapes)
    wkbs = shapely.to_wkb(shapes)
    return [
        ItemRow(
            collection=item.collection,
            id=item.id,
            owner=item.owner,
            start_us=microseconds(item.start),
            end_us=microseconds(item.end),
            wkb=wkb,
            body=orjson.dumps(
                {
                    "geometry": item.geometry,
                    "bbox": item.bbox,
                    "properties": item.properties,
                    "assets": {key: _asset(asset) for key, asset in item.assets.items()},
                }
            ),
            boxes=item_boxes,
        )
        for item, wkb, item_boxes in zip(items, wkbs, boxes, strict=True)
    ]


def _check(item: Item) -> None:
    if not item.id or len(item.id) > MAX_ID or "/" in item.id:
        raise InvalidRequest(f"item id {item.id!r}: use 1-{MAX_ID} characters, no '/'")
    if item.start.tzinfo is None or item.end.tzinfo is None:
        raise InvalidRequest(f"item {item.id}: its times have no time zone; give them in UTC")
    if item.end < item.start:
        raise InvalidRequest(f"item {item.id}: ends ({item.end}) before it starts ({item.start})")
    if (item.geometry is None) != (item.bbox is None):
        raise InvalidRequest(f"item {item.id}: give both a geometry and a bbox, or neither")


def _asset(asset: Asset) -> dict[str, Any]:
    return {
        "location": asset.location,
        "media_type": asset.media_type,
        "size": asset.size,
        "sha256": asset.sha256,
        "roles": list(asset.roles),
        "title": asset.title,
    }


def item_from_row(row: Mapping[str, Any], collection: str) -> Item:
    body = orjson.loads(row["body"])
    return Item(
        id=row["id"],
        collection=collection,
        start=moment(row["start_us"]),
        end=moment(row["end_us"]),
        geometry=body["geometry"],
        bbox=tuple(body["bbox"]) if body["bbox"] is not None else None,
        properties=body["properties"],
        assets={
            key: Asset(**{**value, "roles": tuple(value["roles"])})
            for key, value in body["assets"].items()
        },
        owner=row["owner"],
    )


@dataclass(frozen=True)
class Widening:
    """What a batch of new rows adds to one collection's extent and numbers: the bounding box
    of their placed footprints (Nones when none is placed), their first and last starts,
    their last end, their longest duration, and how many they are."""

    west: float | None
    south: float | None
    east: float | None
    north: float | None
    first_start_us: int
    last_start_us: int
    last_end_us: int
    longest_us: int
    count: int


def widenings(keys: Mapping[str, int], rows: Sequence[ItemRow]) -> list[tuple[int, Widening]]:
    """Each collection's key (of ``keys``, by name) with what ``rows`` add to it."""
    found = []
    for name, key in keys.items():
        mine = [row for row in rows if row.collection == name]
        boxes = [b for row in mine for b in row.boxes if b[0] != NO_PLACE]
        placed = (None, None, None, None)
        if boxes:
            west, south, east, north = zip(*boxes, strict=True)
            placed = (min(west), min(south), max(east), max(north))
        found.append(
            (
                key,
                Widening(
                    *placed,
                    first_start_us=min(row.start_us for row in mine),
                    last_start_us=max(row.start_us for row in mine),
                    last_end_us=max(row.end_us for row in mine),
                    longest_us=max(row.end_us - row.start_us for row in mine),
                    count=len(mine),
                ),
            )
        )
    return found


def visible(owner: str | None, viewer: str | None) -> bool:
    """Whether ``viewer`` may see a thing owned by ``owner`` (None: everyone's)."""
    return owner is None or owner == viewer


def visible_item(
    rows: Sequence[Mapping[str, Any]], collection: str, id: str, viewer: str | None
) -> Item:
    """The item of ``rows`` (its row, with its collection's owner as ``collection_owner``),
    if ``viewer`` may see both it and its collection; else ItemNotFound, as for no item."""
    if not rows or not (
        visible(rows[0]["owner"], viewer) and visible(rows[0]["collection_owner"], viewer)
    ):
        raise ItemNotFound(f"no item {id!r} in collection {collection!r}")
    return item_from_row(rows[0], collection)


def collection_from_row(row: Mapping[str, Any], properties: dict[str, Any]) -> Collection:
    """A collection from its row in either catalogue (``properties`` decoded by the caller:
    a JSON text in SQLite, jsonb in PostgreSQL)."""
    bbox = (
        (row["west"], row["south"], row["east"], row["north"]) if row["west"] is not None else None
    )
    first, last = row["first_start_us"], row["last_end_us"]
    return Collection(
        id=row["id"],
        title=row["title"],
        description=row["description"],
        license=row["license"],
        owner=row["owner"],
        properties=properties,
        extent=(
            bbox,
            moment(first) if first is not None else None,
            moment(last) if last is not None else None,
        ),
    )
