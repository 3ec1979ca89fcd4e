"""Exact counts of searches (numberMatched), kept so that the next pages reuse them.

A page costs what page 1 does (keyset paging); a search's count does not: the index finds a
superset (boxes, not footprints), so counting exactly reads every candidate's footprint.
A site's time series (a small place, any time) over 10^7 MODIS-like swaths matches about
10^5 items: its count takes longer than a hundred pages. Yet every page of a search asks
the same count, and a user pages on through the same catalogue. So a count is made once per
(search, catalogue state) and kept, here, for the pages after it (and for anyone else who
asks the same search as the same viewer).

A catalogue's state is two numbers, read in the search's own snapshot: its *position*, which
rises with every item added and never repeats (SQLite's AUTOINCREMENT, PostgreSQL's
``seq``), and how many items have ever been *removed* from the collections searched (deleted
or replaced), which rises with every removal. A count kept at an older state whose removals
are the same is brought up to date by counting the items added since, found by position on
the primary key (an ingest of a few granules costs a few rows); after a removal, or when more
was added since than ``count_to`` candidates, the search is counted afresh. A search is
never answered with a count of another state: a kept count is exact, or not used.

``count_to`` bounds the work of a count made afresh, as before: past that many index
candidates the count is left out (``None``), never estimated; as additions only add
candidates, a count left out stays left out until a removal. A count kept up to date by
additions may grow past ``count_to``: each step read no more than ``count_to`` rows.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from nearline.archive._base import Search
from nearline.closing import Closing

KEPT = 1024  # counts kept per catalogue (the least recently used go first)


@dataclass(frozen=True, order=True)
class State:
    """What a catalogue holds, as far as a count can tell: its position (the last item
    added) and how many items were ever removed from the collections searched."""

    position: int
    removed: int


@dataclass(frozen=True)
class Kept:
    """A search's count (None: past ``count_to``) at a state."""

    matched: int | None
    state: State


Recount = Callable[[], int | None]  # the whole count afresh (None past count_to candidates)
CountAdded = Callable[[int], int | None]  # matches added after a position (None: too many)


def count_key(search: Search) -> bytes:
    """What a count depends on: every parameter of ``search`` but its page (limit, token)
    and order."""
    return orjson.dumps([*search.matching(), search.count_to], option=orjson.OPT_SORT_KEYS)


class Counts(Closing):
    """The counts a catalogue keeps (the last :data:`KEPT` searches counted), shared by the
    threads of a service.

    Parameters
    ----------
    size
        How many searches' counts to keep.
    """

    def __init__(self, size: int = KEPT) -> None:
        self.size = size
        self._kept: OrderedDict[bytes, Kept] = OrderedDict()
        self._lock = threading.Lock()

    def matched(
        self, search: Search, state: State, *, recount: Recount, count_added: CountAdded
    ) -> int | None:
        """How many items match ``search`` at ``state``: kept, brought up to date, or counted.

        Parameters
        ----------
        search
            The search (its ``count_to`` bounds a count made afresh).
        state
            The catalogue's state in the snapshot the page is read in.
        recount
            Counts ``search`` afresh in that snapshot.
        count_added
            How many items added after a position match ``search`` (in that snapshot), or
            None if more than ``count_to`` were added.
        """
        key = count_key(search)
        with self._lock:
            kept = self._kept.get(key)
        matched: int | None = None
        counted = False
        if kept is not None and kept.state.removed == state.removed:
            if kept.state.position == state.position:
                return kept.matched
            if kept.state.position < state.position:
                if kept.matched is None:  # additions only add candidates: still too many
                    matched, counted = None, True
                elif (added := count_added(kept.state.position)) is not None:
                    matched, counted = kept.matched + added, True
        if not counted:
            matched = recount()
        with self._lock:
            now = self._kept.get(key)
            if now is None or now.state <= state:  # never back in time
                self._kept[key] = Kept(matched, state)
                self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return matched

    def close(self) -> None:
        with self._lock:
            self._kept.clear()
