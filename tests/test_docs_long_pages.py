"""The longest pages' blocks run as written, as tests/test_docs.py runs every other page's: in
a file of their own so that ``--dist loadfile`` can give them to another worker than the rest
(each page is a minute or more of real work: a day of orbits composited, a service ordered)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .markdown_blocks import LONG_PAGES, ROOT
from .test_docs import run_page


def test_the_long_pages_are_pages() -> None:
    assert all((ROOT / name).is_file() for name in LONG_PAGES)


@pytest.mark.parametrize("name", LONG_PAGES)
def test_every_block_of_the_page_runs(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    run_page(ROOT / name, tmp_path, request)
