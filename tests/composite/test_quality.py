"""Pinholes counted on a composite: empty cells with at least 6 of their 8 neighbours filled."""

from __future__ import annotations

import numpy as np

from nearline.composite._quality import coverage, filled_neighbours, pinhole_mask


def test_a_lone_empty_cell_in_a_filled_field_is_a_pinhole_and_an_edge_is_not():
    filled = np.ones((6, 7), bool)
    filled[2, 3] = False  # inside: 8 filled neighbours
    filled[0, 0] = False  # at the grid's corner: 3 neighbours, 3 filled
    filled[5, 3] = False  # on the border: 5 neighbours, all filled
    mask = pinhole_mask(filled)
    assert mask.sum() == 1
    assert mask[2, 3]
    assert filled_neighbours(filled)[0, 0] == 3
    assert filled_neighbours(filled)[5, 3] == 5


def test_six_filled_neighbours_make_a_pinhole_five_do_not():
    filled = np.zeros((3, 3), bool)
    filled.flat[[0, 1, 2, 3, 5, 6]] = True  # 6 of the centre's 8
    assert pinhole_mask(filled)[1, 1]
    filled[0, 0] = False  # 5 of 8
    assert not pinhole_mask(filled)[1, 1]


def test_a_one_cell_wide_gap_counts_along_its_length():
    filled = np.ones((10, 10), bool)
    filled[2:8, 4] = False  # a stripe between two swaths' rows of cells
    result = coverage(filled)
    assert result.pinholes == 6
    assert result.filled == 94
    assert result.pinhole_fraction == 6 / 94


def test_counting_in_blocks_equals_counting_at_once():
    rng = np.random.default_rng(3)
    filled = rng.random((1100, 40)) < 0.8
    whole = coverage(filled, block_rows=5000)
    for rows in (1, 7, 512):
        assert coverage(filled, block_rows=rows) == whole
    assert whole.pinholes == int(pinhole_mask(filled).sum()) > 0
