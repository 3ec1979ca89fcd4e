"""A subscription made from the page over the current search, seen filling as granules are
ingested (its job, the granules it still waits for), and removed."""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import Page, expect

from nearline.archive import Asset, Item, SQLiteCatalogue

from ..live_service import LiveService
from ..service.conftest import deploy
from ..service.granules import COLLECTION
from .conftest import sign_in, snap


@pytest.fixture(scope="module")
def sleeper(live: LiveService) -> str:
    return deploy(live, "alice", "sleeper")["id"]


def ingest(live: LiveService, names: list[str]) -> None:
    """Granules at 10-11 N, 10-11 E, written into the catalogue as `nearline ingest` would."""
    folder = live.data.parent / "web-subscribed"
    folder.mkdir(exist_ok=True)
    items = []
    start = datetime(2012, 12, 14, tzinfo=UTC)
    for index, name in enumerate(names):
        path = folder / f"{name}.dat"
        path.write_bytes(name.encode() * 10)
        moment = start + timedelta(minutes=5 * index)
        items.append(
            Item(
                id=name,
                collection=COLLECTION,
                start=moment,
                end=moment + timedelta(minutes=5),
                geometry={
                    "type": "Polygon",
                    "coordinates": [[[10, 10], [11, 10], [11, 11], [10, 11], [10, 10]]],
                },
                bbox=(10.0, 10.0, 11.0, 11.0),
                properties={"platform": "test"},
                assets={
                    "data": Asset(
                        location=str(path),
                        size=path.stat().st_size,
                        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                    )
                },
            )
        )
    with SQLiteCatalogue(live.data / "catalogue.db") as catalogue:
        catalogue.add_items(items)


def refresh_until(page: Page, done, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "the subscription did not fill in time"
        page.click("#subscription button:has-text('Refresh')")
        page.wait_for_timeout(300)


def test_a_subscription_is_made_from_the_current_search_and_removed(page, live, sleeper, screens):
    sign_in(page, live)
    for side, value in zip(("west", "south", "east", "north"), (5, 5, 15, 15), strict=True):
        page.fill(f"#bbox-{side}", str(value))
    page.click("#search-form button[type=submit]")
    expect(page.locator("#search-summary")).not_to_have_text("Searching…")

    page.click("#nav a[data-view=subscriptions]")
    expect(page.locator("#subscription-list tbody")).to_contain_text("No subscriptions yet.")
    page.select_option("#subscribe-process", sleeper)
    expect(page.locator("#subscribe-input")).to_have_value("granules")
    page.fill("#subscribe-form input[name=seconds]", "0")
    page.check("#subscribe-form input[name=policy][value=batch]")
    page.fill("#subscribe-form input[name=batch-size]", "3")
    expect(page.locator("#subscribe-form")).to_contain_text("box 5, 5, 15, 15")
    page.click("#subscribe-form button[type=submit]")
    expect(page.locator("#subscribe-form .message")).to_contain_text("Subscribed:")

    with live.client("alice") as client:
        (made,) = client.get("/subscriptions").json()["subscriptions"]
    assert made["process"] == sleeper
    assert made["search"] == {"collections": [COLLECTION], "bbox": [5, 5, 15, 15]}
    assert made["policy"] == {"batch": 3}
    assert made["parameters"] == {"seconds": 0}
    expect(page.locator("#subscription-list tbody tr", has_text=made["id"])).to_contain_text(
        "batches of 3"
    )

    ingest(live, [f"subscribed-{index}" for index in range(4)])
    runs = page.locator("#subscription table.runs tbody tr:not(.empty)")
    waiting = page.locator("#subscription ul.waiting li")
    refresh_until(page, lambda: runs.count() == 1 and waiting.count() == 1)
    expect(waiting).to_contain_text(f"{COLLECTION}/subscribed-3")
    expect(runs).to_contain_text(", ".join(f"{COLLECTION}/subscribed-{i}" for i in range(3)))
    snap(page, screens, "subscriptions")

    runs.locator("button.link").click()
    expect(page.locator("#job-status")).to_have_text("successful", timeout=60_000)

    page.click("#nav a[data-view=subscriptions]")
    page.click(f"#subscription-list tbody tr:has-text('{made['id']}')")
    page.click("#subscription button.remove")
    removed = f"Removed subscription {made['id']}"
    expect(page.locator("#subscriptions-message")).to_contain_text(removed)
    expect(page.locator("#subscription-list tbody")).to_contain_text("No subscriptions yet.")
    with live.client("alice") as client:
        assert client.get("/subscriptions").json()["subscriptions"] == []
