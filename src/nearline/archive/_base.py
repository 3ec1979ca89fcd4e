"""The catalogue's nouns and its one contract.

A :class:`Collection` groups :class:`Item` s; an item is one granule (or one job output): its
time range, footprint and :class:`Asset` s, where the bytes are. A :class:`Search` is what the
STAC API's item search asks; a :class:`Page` is one page of its answer. A :class:`Catalogue`
stores them (SQLite by default, PostgreSQL at scale) and keeps every search off full scans.

Items and collections have an ``owner``: ``None`` for the archive's own data, which every user
sees, or the user whose job made them, who alone sees them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from nearline.closing import Closing

STAC_VERSION = "1.1.0"
"""The STAC version of the items and collections the API serves."""
FILE_EXTENSION = "https://stac-extensions.github.io/file/v2.1.0/schema.json"
"""The STAC file extension, declared by items whose assets carry a size or a checksum."""
BBox = tuple[float, float, float, float]
"""(west, south, east, north) in degrees; west > east crosses the antimeridian."""


@dataclass(frozen=True)
class Asset:
    """Where one file of an item lives, and what it is.

    Parameters
    ----------
    location
        Private to the service (never shown to users, who download through the API): an
        absolute local path, an fsspec URL, or a member of a layout archive bundle,
        ``bundle:<tier URL>#<bundle name>!<member path>``.
    media_type
        The file's media type, as STAC's asset ``type``.
    size
        Bytes, if known (STAC's ``file:size``).
    sha256
        Hex digest of the bytes, if known (checked when the file is fetched).
    roles
        STAC asset roles (``data``, ``metadata``, ``thumbnail``...).
    title
        A title for people.
    """

    location: str
    media_type: str = "application/octet-stream"
    size: int | None = None
    sha256: str | None = None  # hex digest of the bytes
    roles: tuple[str, ...] = ("data",)
    title: str | None = None


@dataclass(frozen=True)
class Item:
    """One granule or output file set.

    Parameters
    ----------
    id
        Unique within its collection.
    collection
        The collection's id.
    start
        When the data begins, timezone-aware UTC.
    end
        When it ends, ``>= start``.
    geometry
        GeoJSON (a Polygon or MultiPolygon split at the antimeridian), or None for data with
        no place.
    bbox
        (west, south, east, north); None exactly when ``geometry`` is.
    properties
        Extra STAC properties (platform, instruments, provenance...).
    assets
        The item's files by key (``"data"``...).
    owner
        None for the archive's own data, which every user sees; else the user whose job made
        it, who alone sees it.
    """

    id: str
    collection: str
    start: datetime
    end: datetime
    geometry: Mapping[str, Any] | None
    bbox: BBox | None
    properties: Mapping[str, Any] = field(default_factory=dict)
    assets: Mapping[str, Asset] = field(default_factory=dict)
    owner: str | None = None


@dataclass(frozen=True)
class Collection:
    """A set of items of one kind (a product, or one algorithm's outputs).

    Parameters
    ----------
    id
        The collection's id.
    title
        STAC's ``title``, for people.
    description
        STAC's ``description``.
    license
        An SPDX identifier, or ``"proprietary"``.
    owner
        None for the archive's own collections; else the user who alone sees it.
    properties
        Extra STAC fields.
    extent
        (bbox or None, start or None, end or None): kept by the catalogue as items arrive,
        not set by callers.
    """

    id: str
    title: str = ""
    description: str = ""
    license: str = "proprietary"
    owner: str | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)  # extra STAC fields
    extent: tuple[BBox | None, datetime | None, datetime | None] = (None, None, None)


@dataclass(frozen=True)
class Search:
    """An item search, already checked.

    Build it from STAC query parameters with
    [`parse_search`][nearline.archive.parse_search], which checks each one.

    Parameters
    ----------
    collections
        Only items of these collections (None: any).
    ids
        Only items of these ids (None: any).
    bbox
        (west, south, east, north); west > east crosses the antimeridian.
    intersects
        A GeoJSON geometry the items' footprints must intersect.
    start
        Only items that end at or after it (None: open).
    end
        Only items that start at or before it (None: open).
    limit
        Items per page.
    token
        Continues an earlier page ([`Page.next_token`][nearline.archive.Page]).
    viewer
        The user asking: they see public items and their own.
    count_to
        Count the matches too, as long as counting them afresh finds no more than this many
        candidates in the index (0: do not count); a count is kept for the search's next
        pages and brought up to date as items are added.
    filter
        A CQL2 JSON filter the items must pass too (see
        [`parse_filter`][nearline.archive.parse_filter]).
    sortby
        (queryable, descending) pairs to order the answer by, ties broken by id (empty:
        start-time order, then the order items were catalogued).
    """

    collections: tuple[str, ...] | None = None
    ids: tuple[str, ...] | None = None
    bbox: BBox | None = None
    intersects: Mapping[str, Any] | None = None
    start: datetime | None = None
    end: datetime | None = None
    limit: int = 10
    token: str | None = None
    viewer: str | None = None
    count_to: int = 0
    filter: Mapping[str, Any] | bool | None = None
    sortby: tuple[tuple[str, bool], ...] = ()

    def matching(self) -> list[Any]:
        """What decides which items match: every parameter but the page (``limit``,
        ``token``), the order and ``count_to``, in a fixed order. A paging token is bound to
        these and the order; a kept count is kept by these and ``count_to``."""
        return [
            self.viewer,
            self.collections,
            self.ids,
            self.bbox,
            self.intersects,
            self.start,
            self.end,
            self.filter,
        ]

    @property
    def impossible(self) -> bool:
        """Whether no item can match: a time range that ends before it starts, a bbox whose
        south lies north of its north, or a geometry without a single position."""
        return (
            (self.start is not None and self.end is not None and self.start > self.end)
            or (self.bbox is not None and self.bbox[1] > self.bbox[3])
            or (self.intersects is not None and not _has_position(self.intersects))
        )


def _has_position(geometry: Mapping[str, Any]) -> bool:
    """Whether a GeoJSON geometry holds at least one position."""

    def holds(value: Any) -> bool:
        if isinstance(value, list | tuple):
            return bool(value) and (
                isinstance(value[0], int | float) or any(holds(part) for part in value)
            )
        return False

    if geometry.get("type") == "GeometryCollection":
        return any(_has_position(part) for part in geometry.get("geometries", []))
    return holds(geometry.get("coordinates"))


@dataclass(frozen=True)
class Page:
    """One page of a search.

    Parameters
    ----------
    items
        This page's items, in a stable order.
    next_token
        Pass it as [`Search.token`][nearline.archive.Search] for the next page; None on the
        last.
    matched
        How many items match in all, when the search asked for it (``count_to``) and the
        index found few enough candidates to count them exactly (else None).
    """

    items: list[Item]
    next_token: str | None = None
    matched: int | None = None


class Catalogue(Closing, ABC):
    """Where items are kept. Implementations keep these true:

    - ``add_items`` inserts or replaces by (collection, id), all in one transaction, and
      widens each collection's extent; the collection must exist (``CollectionNotFound``);
    - ``search`` never reads every item: it goes through a spatial and temporal index, and
      pages by token so page n costs what page 1 does;
    - a search's ``filter`` is evaluated by the database (translated to its SQL), never by
      reading items into Python, and names only queryables (``queryables``); its ``sortby``
      orders the pages, ties broken by id, and its tokens carry the sort keys;
    - a viewer never sees another user's collection or item: those are ``NotFound``,
      exactly as if they did not exist;
    - a page's count (``Page.matched``) is exact for the catalogue as that page reads it,
      or None: one kept from an earlier page must be brought up to date with what was added
      and removed since.
    """

    @abstractmethod
    def put_collection(self, collection: Collection) -> None:
        """Create ``collection``, or update its title, description, license and properties.

        Parameters
        ----------
        collection
            Its ``extent`` is ignored: the catalogue keeps that from the items.

        Raises
        ------
        Conflict
            A collection of that id belongs to another owner.
        """

    @abstractmethod
    def get_collection(self, id: str, *, viewer: str | None = None) -> Collection:
        """The collection ``id``, with its current extent.

        Parameters
        ----------
        id
            The collection's id.
        viewer
            The user asking (None: the archive's own view of public collections).

        Raises
        ------
        CollectionNotFound
            No such collection, or none the viewer may see.
        """

    @abstractmethod
    def list_collections(self, *, viewer: str | None = None) -> list[Collection]:
        """Every collection the viewer may see, by id.

        Parameters
        ----------
        viewer
            The user asking: they see public collections and their own.
        """

    @abstractmethod
    def add_items(self, items: Iterable[Item]) -> int:
        """Insert or replace ``items`` by (collection, id), in one transaction.

        Parameters
        ----------
        items
            Items of existing collections; each collection's extent widens to hold them.

        Returns
        -------
        int
            How many items were added or replaced.

        Raises
        ------
        CollectionNotFound
            An item's collection does not exist (nothing is added).
        """

    @abstractmethod
    def get_item(self, collection: str, id: str, *, viewer: str | None = None) -> Item:
        """Item ``id`` of ``collection``.

        Parameters
        ----------
        collection, id
            Which item.
        viewer
            The user asking.

        Raises
        ------
        ItemNotFound
            No such item, or none the viewer may see.
        """

    @abstractmethod
    def search(self, search: Search) -> Page:
        """One page of the items matching ``search``, in a stable order.

        Parameters
        ----------
        search
            A checked search; its ``token`` picks the page and its ``viewer`` what is seen.

        Returns
        -------
        Page
            The items and the token of the next page.
        """

    @abstractmethod
    def queryables(
        self, collection: str | None = None, *, viewer: str | None = None
    ) -> dict[str, set[str]]:
        """What the items carry beyond their id, collection, times and footprint: each
        property's name with the JSON types it has been seen with (every property an item
        ever carried since the catalogue began recording them, deleted items' included).

        Parameters
        ----------
        collection
            This collection's items (None: of every collection the viewer sees).
        viewer
            The user asking.

        Returns
        -------
        dict
            Property name to JSON Schema types (``"string"``, ``"integer"``, ...).
        """

    @abstractmethod
    def delete_items(self, collection: str, ids: Iterable[str]) -> int:
        """Remove items of ``collection``; missing ones are ignored.

        Parameters
        ----------
        collection
            The collection's id.
        ids
            The items' ids.

        Returns
        -------
        int
            How many items went.
        """

    @abstractmethod
    def changes(self, after: int = 0, *, limit: int = 1000) -> tuple[list[Item], int]:
        """Items added or replaced since a position, oldest first: what subscriptions follow.

        This is the service's view: every owner's items.

        Parameters
        ----------
        after
            A position from an earlier call (0 is the beginning; see
            [`position`][nearline.archive.Catalogue.position]).
        limit
            At most this many items.

        Returns
        -------
        items : list[Item]
            The changes after ``after``.
        next : int
            The position to ask from next.
        """

    @abstractmethod
    def position(self) -> int:
        """The position of the latest change.

        Returns
        -------
        int
            ``changes(position())`` is empty until the next item arrives.
        """

    def close(self) -> None:
        """Release connections."""
