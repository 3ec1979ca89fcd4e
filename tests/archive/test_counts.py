"""The counts a catalogue keeps (_counts.py): made once per search and state, brought up to
date by what was added, made afresh after a removal; the catalogues' own tests hold the
numbers to brute force (nearline.testing.counting)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from nearline.archive import Search
from nearline.archive._counts import Counts, State, count_key

SITE = Search(bbox=(10, 45, 10.05, 45.05), limit=100, count_to=1000)


@dataclass
class Calls:
    """A catalogue's answers, and what was asked of it."""

    whole: int | None = 40
    added: int | None = 2
    asked: list[str] = field(default_factory=list)

    def recount(self) -> int | None:
        self.asked.append("recount")
        return self.whole

    def count_added(self, after: int) -> int | None:
        self.asked.append(f"added after {after}")
        return self.added


def matched(counts: Counts, calls: Calls, state: State, search: Search = SITE) -> int | None:
    return counts.matched(search, state, recount=calls.recount, count_added=calls.count_added)


def test_a_count_is_made_once_per_search_and_state() -> None:
    counts, calls = Counts(), Calls()
    assert matched(counts, calls, State(10, 0)) == 40
    next_page = replace(SITE, token="t", limit=7, sortby=(("id", True),))
    assert matched(counts, calls, State(10, 0), next_page) == 40
    assert calls.asked == ["recount"]


def test_additions_are_counted_on_to_the_kept_count() -> None:
    counts, calls = Counts(), Calls()
    matched(counts, calls, State(10, 0))
    assert matched(counts, calls, State(15, 0)) == 42
    calls.added = 1
    assert matched(counts, calls, State(16, 0)) == 43
    assert calls.asked == ["recount", "added after 10", "added after 15"]


def test_a_removal_or_too_many_additions_count_afresh() -> None:
    counts, calls = Counts(), Calls()
    matched(counts, calls, State(10, 0))
    calls.whole = 39
    assert matched(counts, calls, State(10, 1)) == 39  # removed one, added nothing
    calls.added, calls.whole = None, 900
    assert matched(counts, calls, State(5000, 1)) == 900
    assert calls.asked == ["recount", "recount", "added after 10", "recount"]


def test_a_count_left_out_stays_left_out_as_items_are_added() -> None:
    counts, calls = Counts(), Calls(whole=None)
    assert matched(counts, calls, State(10, 0)) is None
    assert matched(counts, calls, State(20, 0)) is None
    calls.whole = 7
    assert matched(counts, calls, State(20, 3)) == 7  # a removal: counted again
    assert calls.asked == ["recount", "recount"]


def test_an_older_snapshot_is_counted_but_does_not_replace_a_newer_count() -> None:
    counts, calls = Counts(), Calls()
    matched(counts, calls, State(10, 0))
    calls.whole = 30
    assert matched(counts, calls, State(8, 0)) == 30
    assert matched(counts, calls, State(10, 0)) == 40
    assert calls.asked == ["recount", "recount"]


def test_each_viewer_place_and_bound_is_a_search_of_its_own() -> None:
    others = [
        replace(SITE, viewer="alice"),
        replace(SITE, bbox=(10, 45, 10.06, 45.05)),
        replace(SITE, count_to=10),
        replace(SITE, filter={"op": "=", "args": [{"property": "platform"}, "terra"]}),
    ]
    assert len({count_key(search) for search in [SITE, *others]}) == 1 + len(others)


def test_only_the_last_searches_are_kept() -> None:
    counts, calls = Counts(size=2), Calls()
    searches = [replace(SITE, limit=1, bbox=(n, 0, n + 1, 1)) for n in range(3)]
    for search in [*searches, searches[0]]:
        matched(counts, calls, State(1, 0), search)
    assert calls.asked == ["recount"] * 4
    counts.close()
    matched(counts, calls, State(1, 0), searches[2])
    assert len(calls.asked) == 5
