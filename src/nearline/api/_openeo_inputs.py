"""What an openEO batch job reads, found in the catalogue when it starts, as its user may see
it: each ``load_collection``'s gridded items in its temporal extent. The job's order names
them by id, as any order may name its granules, and the stage station shows their files to
the job's sandbox read-only, where they lie."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nearline import openeo
from nearline.api._gridded import GRID, MAX_LAYERS, gridded_or_none
from nearline.archive import Collection, Item, Search, rfc3339
from nearline.errors import CollectionNotFound, OpenEOError
from nearline.orders import Service

BUILTIN = "openeo"  # the built-in process an openEO batch job is an order of
INPUT = "items"  # its one data input


@dataclass(frozen=True)
class JobInputs:
    """The items a job's graph loads, by collection."""

    items: Mapping[str, tuple[Item, ...]]

    @property
    def count(self) -> int:
        return sum(len(found) for found in self.items.values())

    def order(self, graph: Mapping[str, Any], limits: Mapping[str, Any]) -> dict[str, Any]:
        """The execute request of the built-in ``openeo`` process that runs ``graph``."""
        ids = sorted({item.id for found in self.items.values() for item in found})
        inputs: dict[str, Any] = {
            INPUT: {"collections": sorted(self.items), "ids": ids},
            "process_graph": dict(graph),
        }
        if limits:
            inputs["limits"] = dict(limits)
        return {"inputs": inputs}


def job_inputs(service: Service, graph: Mapping[str, Any], *, user: str) -> JobInputs:
    """The items each ``load_collection`` of ``graph`` reads, as ``user`` sees them.

    Raises
    ------
    OpenEOError
        A collection not found (404) or not a cube (400), or no item in a temporal extent
        (``NoDataAvailable``, 400).
    """
    found: dict[str, dict[str, Item]] = {}
    for call in openeo.load_calls(graph):
        collection, grid = _gridded(service, call.collection, user)
        start, end = openeo.temporal_span(call.temporal_extent)
        search = Search(collections=(call.collection,), start=start, end=end, limit=MAX_LAYERS,
                        viewer=user)  # fmt: skip
        items = [item for item in service.catalogue.search(search).items
                 if item.properties.get(GRID) == grid]  # fmt: skip
        if not items:
            _, first, last = collection.extent
            span = f"{rfc3339(first)} to {rfc3339(last)}" if first and last else "no time"
            raise OpenEOError(f"load_collection {call.collection}: no item lies in the temporal "
                              f"extent {list(call.temporal_extent or ())}; its items span "
                              f"{span}", status=400, openeo_code="NoDataAvailable")  # fmt: skip
        found.setdefault(call.collection, {}).update({item.id: item for item in items})
    return JobInputs({name: tuple(items.values()) for name, items in found.items()})


def _gridded(service: Service, collection_id: str, user: str) -> tuple[Collection, str]:
    """``collection_id`` as ``user`` may see it, and its items' grid."""
    try:
        collection = service.catalogue.get_collection(collection_id, viewer=user)
    except CollectionNotFound:
        message = (f"load_collection: collection {collection_id!r} does not exist, or is "
                   f"not yours to load; GET {openeo.PATH}/collections lists yours")  # fmt: skip
        raise OpenEOError(message, status=404, openeo_code="CollectionNotFound") from None
    gridded = gridded_or_none(service, collection, user)
    if gridded is None:
        raise OpenEOError(f"load_collection: {collection_id} is not a data cube (its items name "
                          "no grid: swath granules); composite them onto a grid first",
                          status=400, openeo_code="ProcessParameterInvalid")  # fmt: skip
    return collection, gridded.grid
