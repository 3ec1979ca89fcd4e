"""docs/algorithms.md shows the example packages as they are: each file it quotes is the
file under examples/algorithms, to the byte (the page's own blocks are run by test_docs)."""

from __future__ import annotations

import pytest

from tests.markdown_blocks import ROOT, blocks

from .example_data import EXAMPLES

QUOTED = [
    "counts-histogram/algorithm.yaml",
    "counts-histogram/histogram.py",
    "gac-quicklook/algorithm.yaml",
    "gac-quicklook/Makefile",
    "gac-quicklook/quicklook.c",
]


@pytest.mark.parametrize("name", QUOTED)
def test_the_page_quotes_the_example_file_exactly(name):
    shown = [block.code for block in blocks(ROOT / "docs" / "algorithms.md")]
    assert (EXAMPLES / name).read_text() in shown
