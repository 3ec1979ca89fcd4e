"""Items as the SQLite catalogue stores them, and back.

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

from nearline.archive.base import Asset, Item
from nearline.archive.index import Box, index_boxes
from nearline.errors import InvalidRequest

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
