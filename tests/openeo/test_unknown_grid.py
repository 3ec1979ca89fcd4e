"""A collection whose items name a grid the service does not know (a grid plug-in since
removed) is listed as not a cube, naming the grid and the remedy; the listing of the others
goes on, never a 500."""

from __future__ import annotations

from datetime import UTC, datetime

import openeo

from nearline.archive import Collection, Item, open_catalogue
from nearline.openeo import NOT_A_CUBE

from ..live_service import LiveService, database_of
from ..tiles.gridded import PUBLIC


def test_an_unknown_grid_is_not_a_cube(live: LiveService, alice: openeo.Connection) -> None:
    day = datetime(2012, 12, 12, tzinfo=UTC)
    item = Item(id="odd-1", collection="odd-grid", start=day, end=day, geometry=None,
                bbox=None, properties={"nearline:grid": "no-such-grid"})  # fmt: skip
    with open_catalogue(database_of(live.data), live.data / "catalogue.db") as catalogue:
        catalogue.put_collection(Collection(id="odd-grid", title="On a grid now gone"))
        catalogue.add_items([item])
    listed = {collection["id"]: collection for collection in alice.list_collections()}
    assert "cube:dimensions" in listed[PUBLIC]
    odd = alice.describe_collection("odd-grid")
    assert "cube:dimensions" not in odd
    assert odd[NOT_A_CUBE] == listed["odd-grid"][NOT_A_CUBE]
    assert "'no-such-grid'" in odd[NOT_A_CUBE]
    assert "plug-in" in odd[NOT_A_CUBE]
