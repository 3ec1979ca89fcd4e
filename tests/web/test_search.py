"""Signing in, and searching the catalogue on the map: a typed box, a dragged box, paging,
an item with its quicklook and a download."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from .conftest import QUICKLOOK_ITEM, QUICKLOOKS, sign_in, snap

SIDES = ("west", "south", "east", "north")


def api_ids(live, user: str = "alice", **params) -> list[str]:
    with live.client(user) as client:
        answer = client.get("/search", params={"limit": 1000, **params}).json()
    return [item["id"] for item in answer["features"]]


def listed_ids(page: Page) -> list[str]:
    page.wait_for_selector("#search-results tbody tr")
    return page.locator("#search-results tbody tr td:first-child").all_text_contents()


def search_typed(page: Page, bbox: tuple[float, float, float, float] | None) -> None:
    for side, value in zip(SIDES, bbox or ("",) * 4, strict=True):
        page.fill(f"#bbox-{side}", str(value))
    page.select_option("#search-limit", "200")
    page.click("#search-form button[type=submit]")
    expect(page.locator("#search-summary")).not_to_have_text("Searching…")


def test_a_bad_token_is_refused_and_a_good_one_kept_for_the_tab(page, live, screens):
    page.goto(f"{live.url}/app/")
    page.fill("#signin-token", "not-a-token")
    page.click("#signin-form button[type=submit]")
    expect(page.locator("#signin-message")).to_contain_text("That token was refused")
    assert page.locator("#nav").is_hidden()
    snap(page, screens, "signin")
    sign_in(page, live)
    expect(page.locator("#who-name")).to_have_text("Signed in as alice")
    assert page.evaluate("sessionStorage.getItem('nearline-token')") == live.tokens["alice"]
    assert live.tokens["alice"] not in page.url
    page.reload()
    expect(page.locator("#view-search")).to_be_visible()  # the tab keeps its token
    page.click("#sign-out")
    expect(page.locator("#view-signin")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('nearline-token')") is None


def test_a_typed_box_lists_what_the_api_finds_and_draws_each_footprint(page, live, screens):
    sign_in(page, live)
    box = (-180, -10, -100, 10)
    search_typed(page, box)
    expected = api_ids(live, bbox=",".join(map(str, box)))
    assert expected  # granules walk east along the equator from 170 W
    assert listed_ids(page) == expected
    assert page.locator("#map path.footprint").count() == len(expected)
    assert page.locator("#map .box rect").count() == 1
    snap(page, screens, "search")


def test_a_dragged_box_searches_what_it_covers(page, live):
    sign_in(page, live)
    page.wait_for_function("document.querySelector('#map img').complete")
    frame = page.locator("#map svg").bounding_box()

    def at(lon: float, lat: float) -> tuple[float, float]:
        return (
            frame["x"] + (lon + 180) / 360 * frame["width"],
            frame["y"] + (90 - lat) / 180 * frame["height"],
        )

    page.mouse.move(*at(-125, 12))
    page.mouse.down()
    page.mouse.move(*at(-90, 0), steps=4)
    page.mouse.move(*at(-40, -12), steps=4)
    page.mouse.up()
    expect(page.locator("#search-summary")).to_contain_text("Items")
    drawn = [page.input_value(f"#bbox-{side}") for side in SIDES]
    for value, wanted in zip(drawn, (-125, -12, -40, 12), strict=True):
        assert abs(float(value) - wanted) < 1.0
    expected = api_ids(live, bbox=",".join(drawn))
    assert listed_ids(page) == expected
    assert len(expected) >= 6  # granules 5 to 11: from 120 W to 52 W along the equator
    assert page.locator("#map path.footprint").count() == len(expected)


def test_pages_follow_the_next_links(page, live):
    sign_in(page, live)
    page.select_option("#search-limit", "10")
    page.click("#search-form button[type=submit]")
    first = listed_ids(page)
    assert len(first) == 10
    page.click("#search-next")
    expect(page.locator("#search-summary")).to_contain_text("Items 11 to")
    second = listed_ids(page)
    assert first + second == api_ids(live)
    assert page.locator("#search-next").is_hidden()
    page.click("#search-previous")
    expect(page.locator("#search-summary")).to_contain_text("Items 1 to 10")


def test_an_empty_answer_says_so(page, live):
    sign_in(page, live)
    search_typed(page, (100, 70, 120, 80))
    expect(page.locator("#search-summary")).to_have_text("No items match this search.")
    assert page.locator("#map path.footprint").count() == 0
    page.fill("#bbox-north", "")
    page.click("#search-form button[type=submit]")
    expect(page.locator("#search-message")).to_contain_text("all four sides")


def test_an_api_refusal_is_shown_in_its_words(page, live):
    sign_in(page, live)
    search_typed(page, (10, 30, 30, 20))  # south of its south
    message = page.locator("#search-message")
    expect(message).to_have_class("message error")
    with live.client("alice") as client:
        detail = client.get("/search", params={"bbox": "10,30,30,20"}).json()["detail"]
    assert detail in message.text_content()


def test_an_item_opens_with_its_quicklook_and_downloads_with_the_token(page, live, screens):
    sign_in(page, live)
    page.select_option("#search-collection", QUICKLOOKS)
    search_typed(page, None)
    assert listed_ids(page) == api_ids(live, collections=QUICKLOOKS)
    assert page.locator("#map path.footprint").count() == 2
    across = page.locator('#map path.footprint[data-item="across-the-antimeridian"]')
    assert across.get_attribute("d").count("M") == 2  # both halves, each on its own side
    page.click(f"#search-results tbody tr:has-text('{QUICKLOOK_ITEM}')")
    picture = page.locator("#item .quicklook img")
    expect(picture).to_be_visible()
    page.wait_for_function("document.querySelector('#item .quicklook img').naturalWidth > 0")
    assert picture.get_attribute("src").startswith("blob:")
    expect(page.locator("#item")).to_contain_text("NDVI quicklook")
    expect(page.locator("#item")).to_contain_text("NDVI over Europe")
    page.evaluate("window.scrollTo(0, 240)")
    snap(page, screens, "item")
    with page.expect_download() as started:
        page.click("#item button.download")
    saved = started.value
    with live.client("alice") as client:
        href = f"/collections/{QUICKLOOKS}/items/{QUICKLOOK_ITEM}/assets/quicklook"
        assert saved.path().read_bytes() == client.get(href).content
    assert saved.suggested_filename == "quicklook.png"
