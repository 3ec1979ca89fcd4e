"""Conformance tests of a catalogue's counts (``Page.matched``, the API's numberMatched) as
items come and go: a catalogue keeps a search's count for its next pages (or any other way it
likes), and each page's count must still be the whole answer's, exact, at the moment the page
is read. :class:`~nearline.testing.catalogue.CatalogueTests` inherits them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta

from nearline.archive import Catalogue, Collection, Item, Search, modis_like_items
from nearline.testing.items import EVERYTHING, T0, follow, keys, make_item, square
from nearline.testing.reference import Reference

SITE = (10.0, 45.0, 10.05, 45.05)  # a small place some of the swaths cover
OVER = (9.0, 44.0, 11.0, 46.0)  # a footprint over it
ELSEWHERE = (-60.0, -20.0, -58.0, -18.0)


class CountTests:
    """A site's time series (a small place, any time) counted on every page, as items are
    added over it and elsewhere, replaced and deleted, against brute force."""

    make_catalogue: Callable[..., Catalogue]

    def _site_catalogue(self, catalogue: Catalogue) -> Reference:
        """1,500 MODIS-like swaths (5 days) in ``terra``, and alice's own collection."""
        reference = Reference(owners={"terra": None, "mine": "alice"})
        catalogue.put_collection(Collection("terra"))
        catalogue.put_collection(Collection("mine", owner="alice"))
        items = list(modis_like_items(1500, collection="terra", start=T0, seed=3))
        catalogue.add_items(items)
        reference.add(items)
        return reference

    def test_a_sites_count_is_exact_on_every_page_as_items_come_and_go(
        self, catalogue: Catalogue
    ) -> None:
        reference = self._site_catalogue(catalogue)
        searches = [
            Search(bbox=SITE, limit=4, count_to=EVERYTHING),
            Search(bbox=SITE, limit=4, count_to=EVERYTHING, viewer="alice"),
            Search(collections=("terra",), bbox=SITE, limit=5, count_to=EVERYTHING),
            Search(collections=("terra",), bbox=SITE, limit=5, count_to=EVERYTHING, viewer="alice"),
            # a filter the added items fail, and a chosen order
            Search(
                bbox=SITE, limit=6, count_to=EVERYTHING, filter=_terra(), sortby=(("id", True),)
            ),
        ]

        def check() -> None:
            for search in searches:
                expected = _expected(reference, search)
                pages = follow(catalogue, search)
                got = [item for page in pages for item in page.items]
                assert sorted(keys(got)) == sorted(keys(expected)), search
                if not search.sortby:
                    assert keys(got) == keys(expected), search
                assert {page.matched for page in pages} == {len(expected)}, search

        check()
        matches = reference.matches(searches[0])
        assert len(matches) > 8  # more than two pages
        first = catalogue.search(searches[0])  # a page read before the changes, continued after
        middle = matches[len(matches) // 2].start
        changes: list[list[Item]] = [
            [make_item("over", "terra", start=middle, box=OVER)],
            [make_item("elsewhere", "terra", start=middle, box=ELSEWHERE)],
            [make_item("alices", "mine", start=middle, box=OVER, owner="alice")],
            [replace(matches[1], geometry=square(*ELSEWHERE), bbox=ELSEWHERE)],  # moved away
            [replace(matches[2], start=middle, end=middle + timedelta(minutes=5))],  # later
            [make_item("late", "terra", start=T0 - timedelta(days=1), box=OVER)],
        ]
        for change in changes:
            catalogue.add_items(change)
            reference.add(change)
            check()
        catalogue.delete_items("terra", [matches[3].id, "over"])
        reference.remove([("terra", matches[3].id), ("terra", "over")])
        check()
        after = catalogue.search(replace(searches[0], token=first.next_token))
        assert after.matched == len(reference.matches(searches[0]))

    def test_named_and_impossible_searches_count_as_items_come(self, catalogue: Catalogue) -> None:
        reference = self._site_catalogue(catalogue)
        named = Search(ids=("over", "nosuch"), count_to=EVERYTHING)
        never = Search(bbox=SITE, start=T0 + timedelta(days=1), end=T0, count_to=EVERYTHING)
        assert [catalogue.search(s).matched for s in (named, never)] == [0, 0]
        over = make_item("over", "terra", start=T0, box=OVER)
        catalogue.add_items([over])
        reference.add([over])
        assert [catalogue.search(s).matched for s in (named, never)] == [1, 0]
        catalogue.delete_items("terra", ["over"])
        assert [catalogue.search(s).matched for s in (named, never)] == [0, 0]


def _terra() -> dict[str, object]:
    return {"op": "=", "args": [{"property": "platform"}, "terra"]}


def _expected(reference: Reference, search: Search) -> list[Item]:
    """Brute force, the filter (platform = 'terra') applied by hand."""
    found = reference.matches(replace(search, filter=None, sortby=()))
    if search.filter is not None:
        found = [item for item in found if item.properties.get("platform") == "terra"]
    return found
