"""The day's composite under the footprints: in Chromium, a gridded collection chosen under
the map lays its map tiles on it, and the page's own pixels show the composite where numpy
says it has data, in the legend's colour, and the land and sea image where it has none;
switching the day and the band redraws it."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import Page, expect

from ..live_service import LiveService
from ..service.composites import made_composite
from ..tiles.gridded import NEXT_DAY_NDVI, PUBLIC, serving_composites
from ..tiles.sampling import expected_level, expected_values, legend_colours
from .conftest import sign_in, snap

ROWS, COLUMNS = 2, 4  # WorldCRS84Quad's matrix 1, as the page lays it
SIZE = 256
TOLERANCE = 4  # per channel: the browser scales 1024 x 512 tile pixels to the map's size


@pytest.fixture(scope="module")
def composite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return made_composite(tmp_path_factory)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, composite: Path) -> Iterator[LiveService]:
    with serving_composites(tmp_path_factory.mktemp("web-composite"), composite) as service:
        yield service


def world_values(composite: Path, band: str) -> np.ndarray:
    """What the page's 8 tiles show, as one (512, 1024) array of values (NaN: nothing)."""
    world = np.full((ROWS * SIZE, COLUMNS * SIZE), np.nan)
    for row in range(ROWS):
        for col in range(COLUMNS):
            level = expected_level("WorldCRS84Quad", 1, row, col)
            values = expected_values(composite, band, "WorldCRS84Quad", 1, row, col, level)
            world[row * SIZE : (row + 1) * SIZE, col * SIZE : (col + 1) * SIZE] = values
    return world


def probes(shown: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Up to 60 (row, col) of the world array whose 9 x 9 neighbourhood is all ``shown``, off
    the graticule (every 30 degrees: 85 pixels here) that the map draws over the tiles."""
    whole = np.ones_like(shown)
    for dr in range(-4, 5):
        for dc in range(-4, 5):
            whole &= np.roll(np.roll(shown, dr, axis=0), dc, axis=1)
    rows, cols = np.nonzero(whole)
    lon, lat = cols / 1024 * 360 - 180, 90 - rows / 512 * 180
    off_lines = (np.abs((lon + 180) % 30 - 15) < 13) & (np.abs((lat + 90) % 30 - 15) < 13)
    found = np.stack([rows, cols], axis=1)[off_lines]
    return found[rng.choice(len(found), size=min(60, len(found)), replace=False)]


def map_pixels(page: Page, places: np.ndarray) -> np.ndarray:
    """The map's rendered RGB at each (row, col) of the 512 x 1024 world array."""
    shot = np.asarray(Image.open(io.BytesIO(page.locator("#map").screenshot())).convert("RGB"))
    height, width = shot.shape[:2]
    y = ((places[:, 0] + 0.5) / 512 * height).astype(int)
    x = ((places[:, 1] + 0.5) / 1024 * width).astype(int)
    return shot[y, x].astype(int)


def drawn(page: Page, shows: str) -> None:
    """Wait for the tiles of ``shows`` (collection|day|band) to be laid (the first drawing
    of a composite makes its overviews: seconds)."""
    expect(page.locator(f'#map .tiles[data-shows="{shows}"]')).to_have_count(1, timeout=120_000)
    expect(page.locator("#map .tiles image")).to_have_count(ROWS * COLUMNS)
    page.wait_for_timeout(300)  # the images decoded and painted


def test_the_days_composite_is_drawn_where_it_belongs(page, live, composite, screens):
    with live.client("alice") as client:
        legend = client.get(f"/collections/{PUBLIC}/map/legend", params={"band": "ndvi"}).json()
    sign_in(page, live)
    page.set_viewport_size({"width": 1600, "height": 1000})
    expect(page.locator(f'#composite-collection option[value="{PUBLIC}"]')).to_have_count(1)
    page.select_option("#composite-collection", PUBLIC)
    drawn(page, f"{PUBLIC}||ndvi-index")
    expect(page.locator("#composite-message")).to_contain_text("NDVI from the red and near-in")
    page.select_option("#composite-band", "ndvi")  # the newest day: NDVI 0.8 wherever seen
    drawn(page, f"{PUBLIC}||ndvi")
    snap(page, screens, "composite-map")

    values = world_values(composite, "ndvi")  # the first day's: the newest has its cells
    rng = np.random.default_rng(0)
    seen, unseen = probes(~np.isnan(values), rng), probes(np.isnan(values), rng)
    assert len(seen) == 60
    assert len(unseen) == 60
    green = legend_colours(legend, np.array([NEXT_DAY_NDVI]))[0, :3].astype(int)
    assert np.all(np.abs(map_pixels(page, seen) - green) <= TOLERANCE)
    assert np.all(np.any(np.abs(map_pixels(page, unseen) - green) > TOLERANCE, axis=1))

    page.fill("#composite-day", "2012-12-12")  # the first day: its own NDVI, not all 0.8
    page.dispatch_event("#composite-day", "change")
    drawn(page, f"{PUBLIC}|2012-12-12|ndvi")
    first = map_pixels(page, seen)
    # the browser scales 1024 tile pixels to the map's width: a screen pixel shows one of
    # the tile pixels around the place it stands for
    near = [
        legend_colours(legend, values[seen[:, 0] + dr, seen[:, 1] + dc])[:, :3].astype(int)
        for dr in (-1, 0, 1)
        for dc in (-1, 0, 1)
    ]
    matched = np.any([np.all(np.abs(first - c) <= TOLERANCE, axis=1) for c in near], axis=0)
    assert np.mean(matched) >= 0.95
    assert np.any(np.any(np.abs(first - green) > TOLERANCE, axis=1))
