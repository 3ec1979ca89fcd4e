"""archive: the catalogue of granules and job outputs (collections and items, served as STAC)."""

from __future__ import annotations

from nearline.archive._assets import BundleMember, fetch, is_local, sha256_of
from nearline.archive._base import (
    FILE_EXTENSION,
    STAC_VERSION,
    Asset,
    BBox,
    Catalogue,
    Collection,
    Item,
    Page,
    Search,
)
from nearline.archive._bucket_ingest import ingest_bucket
from nearline.archive._catalogues import open_catalogue
from nearline.archive._filter import parse_filter
from nearline.archive._ingest import describe_file, ingest, ingest_archive
from nearline.archive._object_archive import ObjectArchive, ObjectStores, is_object_url
from nearline.archive._queryables import queryables_schema
from nearline.archive._search import (
    parse_bbox,
    parse_datetime,
    parse_search,
    query_values,
    whole_number,
)
from nearline.archive._sqlite_catalogue import SQLiteCatalogue
from nearline.archive._stac import (
    REFERENCES,
    collection_to_stac,
    has_references,
    item_to_stac,
    rfc3339,
)
from nearline.archive._synthetic import modis_like_items
from nearline.swath import union_footprints  # output footprints: the swath's own union

__all__ = [
    "FILE_EXTENSION",
    "REFERENCES",
    "STAC_VERSION",
    "Asset",
    "BBox",
    "BundleMember",
    "Catalogue",
    "Collection",
    "Item",
    "ObjectArchive",
    "ObjectStores",
    "Page",
    "SQLiteCatalogue",
    "Search",
    "collection_to_stac",
    "describe_file",
    "fetch",
    "has_references",
    "ingest",
    "ingest_archive",
    "ingest_bucket",
    "is_local",
    "is_object_url",
    "item_to_stac",
    "modis_like_items",
    "open_catalogue",
    "parse_bbox",
    "parse_datetime",
    "parse_filter",
    "parse_search",
    "query_values",
    "queryables_schema",
    "rfc3339",
    "sha256_of",
    "union_footprints",
    "whole_number",
]
