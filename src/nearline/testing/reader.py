"""Conformance tests every granule reader should pass; a reader's test subclasses
:class:`ReaderTests` and gives a ``granule_path`` fixture (a valid file) and ``reader``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nearline.errors import GranuleError
from nearline.swath import N_PIXELS, BlockHeader, Reader, block_nbytes, unpack_block


class ReaderTests:
    """Generic checks of the :class:`~nearline.swath.Reader` contract."""

    reader: type[Reader]

    def test_it_recognises_its_files_and_not_others(self, granule_path: Path, tmp_path: Path):
        assert self.reader.can_open(granule_path)
        other = tmp_path / "other.bin"
        other.write_bytes(b"not a granule" * 100)
        assert not self.reader.can_open(other)

    def test_blocks_have_the_contract_shapes(self, granule_path: Path):
        with self.reader().open(granule_path) as granule:
            block = granule.read(2, 10)
            assert block.first_line == 2
            assert block.counts.shape == (5, 8, N_PIXELS)
            assert block.counts.dtype == np.uint16
            assert block.tie_lat.shape == block.tie_lon.shape == (8, 51)
            assert block.times.shape == (8,)
            assert block.ict_counts.shape == block.space_counts.shape == (8, 3)
            assert granule.read_tie_latitudes().shape == (granule.n_lines, 51)
            assert granule.read_telemetry().prt_counts.shape == (granule.n_lines,)

    def test_read_into_gives_the_same_lines_as_read(self, granule_path: Path):
        with self.reader().open(granule_path) as granule:
            buffer = np.zeros(block_nbytes(6), np.uint8)
            granule.read_into(4, 10, buffer)
            got = unpack_block(buffer, BlockHeader(0, 4, 6), granule="g", platform="p")
            want = granule.read(4, 10)
            for name in ("counts", "tie_lat", "tie_lon", "prt_counts", "ict_counts"):
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name))

    def test_tie_sun_zenith_alone_is_what_read_gives(self, granule_path: Path):
        with self.reader().open(granule_path) as granule:
            want = granule.read(0, granule.n_lines).tie_sun_zenith
            np.testing.assert_array_equal(granule.read_tie_sun_zenith(), want)

    def test_lines_beyond_the_end_are_refused(self, granule_path: Path):
        with self.reader().open(granule_path) as granule, pytest.raises(GranuleError):
            granule.read(granule.n_lines - 1, granule.n_lines + 5)
