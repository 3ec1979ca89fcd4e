"""Items and collections as STAC JSON, as the API shows them to users.

Hrefs point at the service (``BASE/collections/C/items/I/assets/KEY`` downloads an asset), so
an asset's private location (a path on the archive's disks, a bucket, a bundle member) never
leaves the service. Sizes and checksums use the STAC file extension (``file:size``,
``file:checksum`` as a SHA2-256 multihash). An item whose data is netCDF or HDF5 also shows a
``references`` asset: kerchunk references that open its data as a virtual Zarr store, which
the service makes from the file when first asked (docs/service.md, "Reading part of a file").
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from nearline.archive._base import FILE_EXTENSION, STAC_VERSION, Asset, Collection, Item

GEOJSON = "application/geo+json"
JSON = "application/json"
SHA2_256_MULTIHASH = "1220"  # multihash prefix: SHA2-256, 32 bytes
WHOLE_EARTH = [-180.0, -90.0, 180.0, 90.0]
REFERENCES = "references"
"""The asset key of an item's kerchunk references to its netCDF4/HDF5 data (virtual Zarr)."""
REFERABLE = frozenset({"application/x-netcdf", "application/netcdf", "application/x-hdf5"})
QUERYABLES = "http://www.opengis.net/def/rel/ogc/1.0/queryables"


def rfc3339(moment: datetime | None) -> str | None:
    """A moment as STAC writes it: ``2026-11-24T15:30:00Z``.

    Parameters
    ----------
    moment
        Timezone-aware; shown in UTC, with microseconds only when there are some.

    Returns
    -------
    str or None
        None for None (an open end).
    """
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def item_href(base: str, collection: str, item: str) -> str:
    return f"{base}/collections/{quote(collection, safe='')}/items/{quote(item, safe='')}"


def item_to_stac(item: Item, base: str) -> dict[str, Any]:
    """The STAC Item of ``item``, as the API serves it.

    Parameters
    ----------
    item
        The catalogue's item.
    base
        The API's root URL; links and asset hrefs go below it (asset locations stay
        private).

    Returns
    -------
    dict
        A GeoJSON Feature, STAC 1.1, with the file extension when sizes or checksums are
        known.
    """
    href = item_href(base, item.collection, item.id)
    collection_href = f"{base}/collections/{quote(item.collection, safe='')}"
    properties: dict[str, Any] = {
        "datetime": rfc3339(item.start),
        "start_datetime": rfc3339(item.start),
        "end_datetime": rfc3339(item.end),
        **item.properties,
    }
    stac: dict[str, Any] = {
        "type": "Feature",
        "stac_version": STAC_VERSION,
        "stac_extensions": [FILE_EXTENSION] if _has_file_fields(item) else [],
        "id": item.id,
        "collection": item.collection,
        "geometry": item.geometry,
    }
    if item.bbox is not None:
        stac["bbox"] = list(item.bbox)
    stac["properties"] = properties
    stac["links"] = [
        {"rel": "self", "type": GEOJSON, "href": href},
        {"rel": "parent", "type": JSON, "href": collection_href},
        {"rel": "collection", "type": JSON, "href": collection_href},
        {"rel": "root", "type": JSON, "href": f"{base}/"},
    ]
    stac["assets"] = {
        key: _asset_to_stac(asset, f"{href}/assets/{quote(key, safe='')}")
        for key, asset in item.assets.items()
    }
    if has_references(item):
        stac["assets"][REFERENCES] = {
            "href": f"{href}/assets/{REFERENCES}",
            "type": JSON,
            "roles": [REFERENCES],
            "title": "kerchunk references: the data asset as a virtual Zarr store",
        }
    return stac


def has_references(item: Item) -> bool:
    """Whether the service offers kerchunk references to ``item``'s data asset: it is netCDF
    or HDF5, and the item keeps no asset of that key itself.

    Parameters
    ----------
    item
        The catalogue's item.
    """
    data = item.assets.get("data")
    return data is not None and data.media_type in REFERABLE and REFERENCES not in item.assets


def _has_file_fields(item: Item) -> bool:
    return any(a.size is not None or a.sha256 for a in item.assets.values())


def _asset_to_stac(asset: Asset, href: str) -> dict[str, Any]:
    stac: dict[str, Any] = {"href": href, "type": asset.media_type, "roles": list(asset.roles)}
    if asset.title:
        stac["title"] = asset.title
    if asset.size is not None:
        stac["file:size"] = asset.size
    if asset.sha256:
        stac["file:checksum"] = SHA2_256_MULTIHASH + asset.sha256
    return stac


def collection_to_stac(collection: Collection, base: str) -> dict[str, Any]:
    """The STAC Collection of ``collection``, with its extent as the catalogue keeps it.

    Parameters
    ----------
    collection
        The catalogue's collection.
    base
        The API's root URL; links go below it.

    Returns
    -------
    dict
        A STAC 1.1 Collection (the whole Earth as the extent while it holds no item).
    """
    href = f"{base}/collections/{quote(collection.id, safe='')}"
    bbox, start, end = collection.extent
    return {
        "type": "Collection",
        "stac_version": STAC_VERSION,
        "stac_extensions": [],
        "id": collection.id,
        "title": collection.title or collection.id,
        "description": collection.description or collection.title or collection.id,
        "license": collection.license,
        "extent": {
            "spatial": {"bbox": [list(bbox) if bbox is not None else WHOLE_EARTH]},
            "temporal": {"interval": [[rfc3339(start), rfc3339(end)]]},
        },
        **collection.properties,
        "links": _collection_links(collection, href, base),
    }


def _collection_links(collection: Collection, href: str, base: str) -> list[dict[str, Any]]:
    """A collection's links, each with a title (STAC's best practice: stac-check asks)."""
    name = collection.title or collection.id
    return [
        {"rel": "self", "type": JSON, "title": name, "href": href},
        {"rel": "parent", "type": JSON, "title": "The archive", "href": f"{base}/"},
        {"rel": "root", "type": JSON, "title": "The archive", "href": f"{base}/"},
        {"rel": "items", "type": GEOJSON, "title": f"Items of {name}", "href": f"{href}/items"},
        *(  # the drafts' relation too, which GDAL 3.6's OAPIF driver follows
            {
                "rel": rel,
                "type": "application/schema+json",
                "title": f"What a filter of {name}'s items may name",
                "href": f"{href}/queryables",
            }
            for rel in (QUERYABLES, "queryables")
        ),
    ]
