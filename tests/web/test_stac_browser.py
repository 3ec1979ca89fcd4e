"""The real STAC Browser (4.0.1, built from its npm package) on another origin than the
service, in Chromium, as a user opens it: the service runs with `--cors` naming the site's
origin, STAC Browser's config.js names the catalogue and asks for a token the way its docs
say (``authConfig``: an API key sent as ``Authorization: Bearer``), and the user types
alice's token into its dialog.

It opens the catalogue, a collection, an item with its footprint on the map, a search by
time and collection, and one by a box drawn on the map. A search with one of its filters
(CQL2 JSON) runs where the service declares STAC API Filter, and is skipped where it does
not (the extension is built on another branch). Nothing leaves 127.0.0.1: the
map's OpenStreetMap tiles are the only other requests STAC Browser makes, and they are
refused."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, Request, Route

from ..live_service import LiveService
from ..service.conftest import serving
from .conftest import QUICKLOOK_ITEM, QUICKLOOKS, add_web_items, snap
from .stac_browser_site import Site, built_files, stac_browser_site

BASEMAP_HOSTS = {"tile.openstreetmap.org"}  # STAC Browser's default basemap: refused here
TOKEN_CONFIG = {
    "type": "apiKey",
    "in": "header",
    "name": "Authorization",
    "formatter": "Bearer",
}


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with stac_browser_site(built_files()) as served:
        yield served


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, site: Site) -> Iterator[LiveService]:
    """The service, letting in pages from STAC Browser's origin alone."""
    folder = tmp_path_factory.mktemp("stac-browser")
    cors = ("--cors", site.origin)
    with serving(folder, lambda service: add_web_items(service.data), cors) as s:
        site.config.update(
            catalogUrl=f"{s.url}/", allowExternalAccess=False, authConfig=TOKEN_CONFIG
        )
        yield s


@pytest.fixture
def tab(page: Page) -> Iterator[Page]:
    """The test's tab, whose requests beyond 127.0.0.1 are refused (and must be basemap
    tiles)."""
    refused: list[str] = []

    def loopback_only(route: Route, request: Request) -> None:
        if urlsplit(request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            refused.append(request.url)
            route.abort()

    page.route("**/*", loopback_only)
    yield page
    assert {urlsplit(url).hostname for url in refused} <= BASEMAP_HOSTS


def open_signed_in(tab: Page, site: Site, live: LiveService, view: str = "/") -> None:
    """Open STAC Browser at ``view`` and give its token dialog alice's token."""
    tab.goto(f"{site.origin}/#{view}")
    dialog = tab.locator("#stac-browser-auth-modal")
    assert dialog.locator(".card-header").inner_text() == "Authentication"
    dialog.locator("input[type=password]").fill(live.tokens["alice"])
    dialog.get_by_role("button", name="Submit").click()
    dialog.wait_for(state="detached")


def test_the_catalogue_opens_from_another_origin(
    tab: Page, site: Site, live: LiveService, screens: Path
) -> None:
    open_signed_in(tab, site, live)
    tab.get_by_role("link", name="Composite quicklooks").first.wait_for()
    assert tab.locator("h1").inner_text() == "nearline"
    assert tab.title() == "nearline"
    assert tab.get_by_role("link", name="Test granules").count() >= 1
    snap(tab, screens, "stac-browser")


def test_a_collection_opens(tab: Page, site: Site, live: LiveService) -> None:
    open_signed_in(tab, site, live)
    tab.get_by_role("link", name="Composite quicklooks").first.click()
    tab.get_by_role("link", name="NDVI over Europe").first.wait_for()
    assert tab.locator("h1").inner_text() == "Composite quicklooks"
    assert tab.url == f"{site.origin}/#/collections/{QUICKLOOKS}"


def footprint_box(png: bytes) -> tuple[int, int, int]:
    """(pixels, width, height) of what OpenLayers drew in its stroke's blue, #3399CC."""
    import numpy as np
    from PIL import Image

    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    blue = (abs(rgb - (0x33, 0x99, 0xCC)).max(axis=-1) < 40).nonzero()
    if len(blue[0]) == 0:
        return 0, 0, 0
    return len(blue[0]), int(np.ptp(blue[1])) + 1, int(np.ptp(blue[0])) + 1


def test_an_item_shows_its_footprint_on_the_map(
    tab: Page, site: Site, live: LiveService, screens: Path
) -> None:
    open_signed_in(tab, site, live, f"/collections/{QUICKLOOKS}/items/{QUICKLOOK_ITEM}")
    tab.get_by_role("heading", name="NDVI over Europe").wait_for()
    world = tab.locator(".ol-viewport").first  # OpenLayers' map
    world.locator("canvas").first.wait_for()
    tab.wait_for_timeout(1000)  # OpenLayers draws on its next animation frame
    pixels, width, height = footprint_box(world.screenshot())
    # 10°W-30°E, 35-60°N: 40° wide, 0.665 rad of Mercator's y high, so 1.05 times as wide
    assert pixels > 300
    assert width / height == pytest.approx(1.05, rel=0.1)
    snap(tab, screens, "stac-browser-item")


def test_a_search_by_time_and_collection(tab: Page, site: Site, live: LiveService) -> None:
    open_signed_in(tab, site, live, "/search")
    date = tab.locator("input[name=date]")
    date.fill("2012-12-12 00:12:00 ~ 2012-12-12 00:27:00")
    date.press("Enter")
    tab.keyboard.press("Escape")
    tab.locator("h1").click()  # the date picker's calendar closes
    tab.locator(".filter-collection .multiselect").click()
    tab.get_by_role("option", name="Test granules").click()
    tab.keyboard.press("Escape")
    with tab.expect_request(lambda r: urlsplit(r.url).path == "/search") as sent:
        tab.get_by_role("button", name="Submit").click()
    tab.get_by_role("link", name="granule-005").wait_for()
    asked = sent.value
    query = parse_qs(urlsplit(asked.url).query) if asked.method == "GET" else {}
    body = asked.post_data_json if asked.method == "POST" else {}
    collections = query.get("collections", [",".join(body.get("collections", []))])[0]
    period = query.get("datetime", [body.get("datetime")])[0]
    assert collections == "test-granules"
    assert period == "2012-12-12T00:12:00.000Z/2012-12-12T00:27:00.000Z"
    found = tab.get_by_role("link", name=re.compile(r"^granule-")).all_inner_texts()
    assert [name.strip() for name in found] == [
        "granule-002",
        "granule-003",
        "granule-004",
        "granule-005",
    ]


def test_a_search_by_a_box_drawn_on_the_map(tab: Page, site: Site, live: LiveService) -> None:
    """The box STAC Browser draws where the map is clicked; it lists what the API finds."""
    open_signed_in(tab, site, live, "/search")
    tab.locator("#bbox1").check(force=True)  # "Filter by spatial extent"
    world = tab.locator(".filter-bbox .ol-viewport").first
    world.locator("canvas").first.wait_for()
    tab.get_by_text("Click on the map to add a bounding box.").wait_for()
    corner = world.bounding_box()
    assert corner is not None
    tab.mouse.click(corner["x"] + corner["width"] / 2, corner["y"] + corner["height"] / 2)
    tab.get_by_text("Click inside the bounding box to remove it.").wait_for()
    with tab.expect_request(lambda r: urlsplit(r.url).path == "/search") as sent:
        tab.get_by_role("button", name="Submit").click()
    asked = sent.value
    assert asked.method == "POST"
    west, south, east, north = asked.post_data_json["bbox"]
    assert west < 0 < east
    assert south < 0 < north
    with live.client("alice") as alice:
        answer = alice.post("/search", json={"bbox": [west, south, east, north], "limit": 100})
    names = [f["properties"].get("title", f["id"]) for f in answer.json()["features"]]
    assert any(name.startswith("granule-") for name in names)
    assert len(names) < 14  # the box leaves some of the granules walking round the equator out
    tab.get_by_role("link", name=names[-1]).first.wait_for()
    for name in names:
        assert tab.get_by_role("link", name=name, exact=True).count() >= 1, name
    listed = tab.get_by_role("link", name=re.compile(r"^granule-")).all_inner_texts()
    assert sorted(n.strip() for n in listed) == sorted(n for n in names if n.startswith("granule-"))


def declares_filter(live: LiveService) -> bool:
    """Whether the service declares STAC API Filter on its search (CQL2)."""
    with live.client("alice") as alice:
        classes = alice.get("/conformance").json()["conformsTo"]
    return any(c.startswith("https://api.stacspec.org/") and c.endswith("#filter") for c in classes)


def test_a_search_with_a_filter(tab: Page, site: Site, live: LiveService) -> None:
    """One of STAC Browser's "Additional filters", drawn from the queryables: it sends CQL2
    JSON, the one filter inside an ``and`` of its own."""
    if not declares_filter(live):
        pytest.skip("the service declares no STAC API Filter: the filter extension is not here")
    open_signed_in(tab, site, live)  # signed in first: the search form asks for the queryables
    tab.get_by_role("link", name="Search").first.click()
    tab.get_by_role("button", name="Add filter").click()
    tab.get_by_role("menuitem", name="Item id").click()
    tab.locator(".queryable-row input.value").fill("granule-003")
    with tab.expect_request(lambda r: urlsplit(r.url).path == "/search") as sent:
        tab.get_by_role("button", name="Submit").click()
    asked = sent.value.post_data_json
    assert asked["filter-lang"] == "cql2-json"
    assert asked["filter"]["args"][0] == {"op": "=", "args": [{"property": "id"}, "granule-003"]}
    tab.get_by_role("link", name="granule-003").wait_for()
    listed = tab.get_by_role("link", name=re.compile(r"^granule-")).all_inner_texts()
    assert [name.strip() for name in listed] == ["granule-003"]
