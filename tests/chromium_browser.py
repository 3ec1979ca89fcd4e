"""Debian's Chromium through Playwright's sync API: one browser for the whole test session,
shared by every folder that drives a page (tests/web, tests/oidc), and a fresh context per
test. Playwright's sync API allows one instance per thread, so a second session fixture in
another folder's conftest (a second `sync_playwright()` in the same worker) would fail: the
root conftest imports these, and no other conftest defines them."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from nearline.doctor._services import chromium_processes

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1100, "height": 700}
SCREENS = pytest.StashKey[Path]()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.is_file():
        check = subprocess.run(
            [str(ROOT / "scripts" / "system-packages"), "--check", "chromium"],
            capture_output=True,
            text=True,
        )
        pytest.fail(f"the web page's tests need Debian's chromium: {check.stderr.strip()}")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        started = chromium_processes()  # taken now: once closed, they may leave our tree
        try:
            yield launched
        finally:
            started += [p for p in chromium_processes() if p not in started]
            launched.close()
    _, left = psutil.wait_procs(started, timeout=10)
    for process in left:
        process.kill()
    assert left == [], "chromium processes were left running after the browser closed"


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A new tab in a new context; a script error on the page, or any dialog (alert, confirm:
    the page has none), fails the test."""
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    tab = context.new_page()
    tab.set_default_timeout(30_000)  # other tests run beside these, on the same 2 cores
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"script error: {error}"))

    def dialog(shown) -> None:
        problems.append(f"a {shown.type} dialog: {shown.message}")
        shown.dismiss()

    tab.on("dialog", dialog)
    try:
        yield tab
    finally:
        context.close()
    assert problems == []


@pytest.fixture(scope="session")
def screens(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    folder = tmp_path_factory.mktemp("screens")
    request.config.stash[SCREENS] = folder
    return folder
