"""The page's files as the server sends them: public, with a Content-Security-Policy that
allows no inline script, only files the package ships; and scripts that never parse data as
HTML."""

from __future__ import annotations

import io
import re
from importlib.resources import files

import httpx
import pytest
from PIL import Image

STATIC = files("nearline.api") / "static"
SCRIPTS = sorted((STATIC / "js").iterdir(), key=lambda entry: entry.name)


def test_the_page_is_public_and_sent_with_a_content_security_policy(live):
    entered = httpx.get(f"{live.url}/app")
    assert entered.status_code == 308
    assert entered.headers["location"] == f"{live.url}/app/"
    page = httpx.get(f"{live.url}/app/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy
    assert "script-src 'self'" in policy
    assert "unsafe" not in policy
    assert "frame-ancestors 'none'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    script = httpx.get(f"{live.url}/app/js/main.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert script.headers["content-security-policy"] == policy


@pytest.mark.parametrize(
    "path", ["/app/nothing.js", "/app/../catalogue.db", "/app/%2e%2e/service.db", "/app/js"]
)
def test_only_the_shipped_files_are_served(live, path):
    response = httpx.get(f"{live.url}{path}")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert response.json()["status"] == 404


def test_the_world_map_is_made_from_the_land_mask(live):
    response = httpx.get(f"{live.url}/app/world.png", timeout=120)  # made on first request
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    assert len(response.content) < 200_000
    image = Image.open(io.BytesIO(response.content)).convert("RGB")
    assert image.size == (1440, 720)

    def at(lon: int, lat: int) -> tuple[int, int, int]:
        return image.getpixel(((lon + 180) * 4, (90 - lat) * 4))  # 4 pixels a degree

    sahara, pacific = at(10, 23), at(-140, 0)
    assert sahara[2] < sahara[0]  # sand: more red than blue
    assert pacific[2] > pacific[0]  # sea: more blue than red


def test_the_landing_page_links_the_web_page(live):
    landing = httpx.get(f"{live.url}/", headers={"Accept": "text/html"})
    assert f'href="{live.url}/app/"' in landing.text


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda entry: entry.name)
def test_no_script_parses_text_as_html_or_code(script):
    source = script.read_text()
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "localStorage",
    ):
        assert sink not in source, f"{script.name} uses {sink}"


def test_the_html_has_no_inline_script_or_style():
    html = (STATIC / "index.html").read_text()
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == []
    assert re.findall(r"\son[a-z]+=", html) == []
    assert "style=" not in html
    assert "<style" not in html
