"""The web page, driven as a user drives it: a live `nearline serve`, Debian's Chromium
(headless) through Playwright's sync API, one browser for the whole session and a fresh
context (cookies, sessionStorage) per test.

Playwright cannot download its own browsers here, so Chromium is Debian's package
(scripts/system-packages installs it), launched by path. Screenshots of each view are kept
under a folder that the end of the test run names.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Page

from nearline.archive import Asset, Collection, Item, SQLiteCatalogue

from ..chromium_browser import SCREENS
from ..live_service import LiveService
from ..service.conftest import serving
from ..service.granules import START

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = '<img src=x onerror="window.hacked=1;alert(1)">'  # a title a user might give
QUICKLOOKS = "quicklooks"
QUICKLOOK_ITEM = "composite-2012-12-12"


def quicklook_png() -> bytes:
    """A small image that looks like a composite's NDVI quicklook."""
    import numpy as np
    from PIL import Image

    lat, lon = np.mgrid[0:90, 0:180]
    green = (np.sin(lon / 14.0) * np.cos(lat / 11.0) + 1) / 2
    rgb = np.stack([160 - 120 * green, 130 + 60 * green, 90 - 50 * green], axis=-1)
    buffer = io.BytesIO()
    Image.fromarray(rgb.astype(np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def add_web_items(data: Path) -> None:
    """An item with a PNG asset (alice and everyone see it), and bob's own collection whose
    title and item title hold HTML."""
    folder = data.parent / "web-items"
    folder.mkdir(exist_ok=True)
    png = folder / "quicklook.png"
    png.write_bytes(quicklook_png())
    digest = hashlib.sha256(png.read_bytes()).hexdigest()
    europe = [[[-10.0, 35.0], [30.0, 35.0], [30.0, 60.0], [-10.0, 60.0], [-10.0, 35.0]]]
    across = {  # a footprint split at the antimeridian, as the catalogue keeps them
        "type": "MultiPolygon",
        "coordinates": [
            [[[170.0, -30.0], [180.0, -30.0], [180.0, -20.0], [170.0, -20.0], [170.0, -30.0]]],
            [[[-180.0, -30.0], [-170.0, -30.0], [-170.0, -20.0], [-180.0, -20.0], [-180, -30.0]]],
        ],
    }
    quicklook = Item(
        id=QUICKLOOK_ITEM,
        collection=QUICKLOOKS,
        start=START,
        end=START + timedelta(days=1),
        geometry={"type": "Polygon", "coordinates": europe},
        bbox=(-10.0, 35.0, 30.0, 60.0),
        properties={"title": "NDVI over Europe"},
        assets={
            "quicklook": Asset(
                location=str(png),
                media_type="image/png",
                size=png.stat().st_size,
                sha256=digest,
                roles=("overview",),
                title="NDVI quicklook",
            )
        },
    )
    fiji = Item(
        id="across-the-antimeridian",
        collection=QUICKLOOKS,
        start=START,
        end=START + timedelta(hours=1),
        geometry=across,
        bbox=(170.0, -30.0, -170.0, -20.0),
        properties={},
        assets={},
    )
    hostile = Item(
        id="bobs-granule",
        collection="bobs-collection",
        start=START,
        end=START + timedelta(hours=1),
        geometry={"type": "Polygon", "coordinates": europe},
        bbox=(-10.0, 35.0, 30.0, 60.0),
        properties={"title": HOSTILE},
        assets={},
        owner="bob",
    )
    with SQLiteCatalogue(data / "catalogue.db") as catalogue:
        catalogue.put_collection(Collection(id=QUICKLOOKS, title="Composite quicklooks"))
        catalogue.put_collection(Collection(id="bobs-collection", title=HOSTILE, owner="bob"))
        catalogue.add_items([quicklook, fiji, hostile])


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with serving(tmp_path_factory.mktemp("web"), lambda service: add_web_items(service.data)) as s:
        yield s


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    folder = config.stash.get(SCREENS, None)
    if folder is not None:
        terminalreporter.write_line(f"web page screenshots: {folder}")


def snap(page: Page, folder: Path, name: str) -> Path:
    """A screenshot of the viewport as a small PNG (256 colours) in ``folder``."""
    from PIL import Image

    image = Image.open(io.BytesIO(page.screenshot()))
    path = folder / f"{name}.png"
    image.convert("RGB").quantize(colors=256).save(path, format="PNG", optimize=True)
    return path


def sign_in(page: Page, live: LiveService, user: str = "alice", view: str = "search") -> None:
    page.goto(f"{live.url}/app/#{view}")
    page.fill("#signin-token", live.tokens[user])
    page.click("#signin-form button[type=submit]")
    page.wait_for_selector(f"#view-{view}:not([hidden])")
