"""Real granules' footprints drawn on the web page's map where they belong: the real product
files copied into the project (a MODIS swath across the antimeridian at high latitude, a
MODIS tile that is a sliver by the south pole, a GOES-16 GLM field of view) and a whole
synthetic orbit, whose footprint holds both polar caps, ingested as a user does; then, in
the browser, each drawn path's fill (SVG's own ``isPointInFill``, in degrees) holds points
inside the item's footprint as the API gives it and not points outside it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import shapely
import stac_pydantic
from playwright.sync_api import Page, expect
from pystac.validation import JsonSchemaSTACValidator, validate_dict
from shapely.geometry import shape

from nearline.archive import FILE_EXTENSION
from nearline.swath import synthesize_day

from ..live_service import LiveService, nearline
from ..service.conftest import serving
from ..service.test_standards import offline_schemas
from .conftest import sign_in, snap

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
COLLECTION = "real"


def ingest_real(service: LiveService) -> None:
    orbit = synthesize_day("2012-12-12", 1, service.data.parent / "orbit")
    for source in (REAL, orbit[0]):
        nearline("ingest", str(source), "--collection", COLLECTION, data=service.data)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with serving(tmp_path_factory.mktemp("web-real"), ingest_real) as service:
        yield service


def probes(footprint, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Points well inside the footprint, and points near it but outside it (degrees)."""
    inside_area = shapely.buffer(footprint, -0.05)
    if inside_area.is_empty:  # a sliver: its representative point alone
        inside = np.array([shapely.get_coordinates(footprint.representative_point())[0]])
    else:
        west, south, east, north = inside_area.bounds
        candidates = rng.uniform([west, south], [east, north], size=(4000, 2))
        inside = candidates[shapely.contains_xy(inside_area, *candidates.T)][:40]
    ring = shapely.buffer(footprint, 1.0).difference(shapely.buffer(footprint, 0.3))
    west, south, east, north = ring.bounds
    candidates = rng.uniform([west, south], [east, north], size=(4000, 2))
    outside = candidates[shapely.contains_xy(ring, *candidates.T)]
    outside = outside[(np.abs(outside[:, 0]) < 180) & (np.abs(outside[:, 1]) < 90)][:40]
    return inside, outside


def filled(page: Page, item: str, points: np.ndarray) -> list[bool]:
    """Whether the item's drawn footprint fills each (lon, lat), as the browser decides."""
    return page.evaluate(
        """([item, points]) => {
            const path = document.querySelector(`#map path.footprint[data-item="${item}"]`);
            return points.map(([lon, lat]) => path.isPointInFill(new DOMPoint(lon, -lat)));
        }""",
        [item, points.tolist()],
    )


def test_real_footprints_are_drawn_where_the_api_puts_them(page, live, screens):
    with live.client("alice") as client:
        answer = client.get("/search", params={"collections": COLLECTION, "limit": 100}).json()
    items = {feature["id"]: feature for feature in answer["features"]}
    granules = [path.name for path in REAL.iterdir() if path.suffix not in (".md", ".tsv")]
    assert sorted(items) == sorted([*granules, "NSS.GHRR.NP.D12347.S0000.E0148.nc"])
    sign_in(page, live)
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.select_option("#search-limit", "200")
    page.click("#search-form button[type=submit]")  # every collection: the real ones too
    for name in items:
        expect(page.locator(f'#map path.footprint[data-item="{name}"]')).to_have_count(1)
    rng = np.random.default_rng(0)
    for name, feature in items.items():
        footprint = shape(feature["geometry"])
        inside, outside = probes(footprint, rng)
        assert len(inside), name
        assert len(outside), name
        assert all(filled(page, name, inside)), f"{name}: a point of its footprint not drawn"
        assert not any(filled(page, name, outside)), f"{name}: drawn where it does not lie"
    snap(page, screens, "real-footprints")


def test_real_items_are_valid_stac_offline(live):
    """Each real granule's item, as the API serves it, validates against STAC's item schema
    and stac-pydantic's model, and carries what its reader read: product and platform."""
    validator = JsonSchemaSTACValidator()
    validator.schema_cache.update(offline_schemas())
    with live.client("alice") as client:
        answer = client.get("/search", params={"collections": COLLECTION, "limit": 100}).json()
    assert len(answer["features"]) == len(list(REAL.glob("*"))) - 2 + 1  # but README, ORIGINS
    for item in answer["features"]:
        stac_pydantic.Item.model_validate(item)
        assert FILE_EXTENSION in validate_dict(item, validator=validator)
        assert item["properties"]["nearline:product"]
        assert item["properties"]["platform"]
        assert item["properties"]["start_datetime"] < item["properties"]["end_datetime"]
