"""What OGC API - Features asks of a collection's items beyond STAC's item search: unknown
parameters refused, GDAL's dates read, and the collection's size given when the page is
unfiltered (GDAL's feature count, without walking every page)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from nearline.archive import Collection, Search
from nearline.archive.search_schema import ITEMS_DATETIME, matches
from nearline.errors import SearchError
from nearline.orders import OUTPUTS_OF

# OGC API - Features' parameters (Part 3's filter), STAC's Sort and Fields, and STAC's that
# pystac-client sends to a collection's items (collections, naming it; ids)
FILTERING = {"filter", "filter-lang", "filter-crs", "sortby", "fields"}
ITEMS_PARAMETERS = {"bbox", "datetime", "limit", "token", "collections", "ids", *FILTERING}
SEARCH_PARAMETERS = ITEMS_PARAMETERS | {"intersects"}
BARE_T = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt](?=/|$)")
FEATURES_UNKNOWN_PARAMETER = (
    "http://www.opengis.net/spec/ogcapi-features-1/1.0/req/core/query-param-unknown"
)


class UnknownParameter(SearchError):
    """A query parameter a collection's items do not take: a 400, as OGC API - Features asks."""

    code = FEATURES_UNKNOWN_PARAMETER


def gdal_dates(text: str | None) -> str | None:
    """A collection's items' ``datetime`` with GDAL's bare-'T' dates (2025-01-01T/..) as
    dates (2025-01-01/..), each its whole day; anything else as it came."""
    if text is None or not matches(ITEMS_DATETIME, text):
        return text
    return BARE_T.sub(r"\1", text)


def unfiltered(search: Search, collection: Collection) -> bool:
    """Whether ``search`` asks for every item of ``collection``, and the catalogue's count of
    it is the number that matches: an archive collection (no owner; not an algorithm's
    outputs, whose items are their orderers') searched without bbox, geometry, ids or time."""
    return (
        search.token is None
        and search.bbox is None
        and search.intersects is None
        and search.ids is None
        and search.start is None
        and search.end is None
        and search.filter is None
        and collection.owner is None
        and OUTPUTS_OF not in collection.properties
    )


def items_query(collection_id: str, parameters: Mapping[str, str]) -> dict[str, Any]:
    """The search (GET text) that a collection's items page with these query ``parameters``
    is: :class:`UnknownParameter` for one it does not take, :class:`SearchError` for
    ``collections`` not naming it."""
    if unknown := sorted(set(parameters) - ITEMS_PARAMETERS):
        raise UnknownParameter(
            f"unknown parameter {unknown[0]!r} of a collection's items; use bbox, datetime, "
            "limit, ids, filter, filter-lang, filter-crs, sortby, fields (and the token a next "
            "link gives)"
        )
    named = parameters.get("collections")
    if named is not None and named.split(",") != [collection_id]:
        raise SearchError(f"collections: the items of {collection_id!r} are its own; leave it out")
    return {
        "collections": [collection_id],
        "ids": parameters.get("ids"),
        "bbox": parameters.get("bbox"),
        "datetime": gdal_dates(parameters.get("datetime")),
        "limit": parameters.get("limit"),
        "token": parameters.get("token"),
        **{name: parameters[name] for name in FILTERING if name in parameters},
    }
