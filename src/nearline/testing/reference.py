"""A reference catalogue: what a catalogue holds, searched by brute force (every item tested
with shapely), against which :class:`~nearline.testing.catalogue.CatalogueTests` checks real
catalogues' answers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import shapely
from shapely.geometry import shape

from nearline.archive import Item, Search

Key = tuple[str, str]  # (collection, item id)


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

    def remove(self, keys: Iterable[Key]) -> None:
        """Forget the items of ``keys`` (deleted); missing ones are ignored."""
        for key in keys:
            self.items.pop(key, None)
            self.shapes.pop(key, None)

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
