"""nearline's granule format: what is written is read back exactly; damage is named."""

from __future__ import annotations

from datetime import UTC, datetime

import h5py
import netCDF4
import numpy as np
import pytest

from nearline.errors import GranuleError
from nearline.swath import N_PIXELS, SwathBlock, get_reader, open_granule
from nearline.swath.netcdf_granule import NetCDFGranuleReader, write_granule

LINES = 1030  # more than one 1024-line block


def _random_block(n: int, seed: int = 3) -> SwathBlock:
    rng = np.random.default_rng(seed)
    start = np.datetime64("2012-12-12T04:16:01.500", "ms")
    tie = lambda low, high: rng.uniform(low, high, (n, 51)).astype(np.float32)  # noqa: E731
    return SwathBlock(
        granule="",
        platform="noaa19",
        first_line=0,
        times=start + np.arange(n) * np.timedelta64(500, "ms"),
        counts=rng.integers(0, 1024, (5, n, N_PIXELS), dtype=np.uint16),
        tie_lat=tie(-90, 90),
        tie_lon=tie(-180, 180),
        tie_sat_zenith=tie(0, 70),
        tie_sun_zenith=tie(0, 180),
        tie_rel_azimuth=tie(0, 180),
        prt_counts=np.where(np.arange(n) % 5 == 0, 0.0, rng.uniform(250, 270, n)),
        ict_counts=rng.uniform(400, 800, (n, 3)),
        space_counts=rng.uniform(980, 1000, (n, 3)),
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    path = tmp_path_factory.mktemp("nc") / "granule.nc"
    block = _random_block(LINES)
    write_granule(path, block, {"synthetic": 1})
    return path, block


def test_every_field_reads_back_exactly(written):
    path, block = written
    with open_granule(path) as granule:
        assert type(granule).__name__ == "NetCDFGranule"
        assert granule.n_lines == LINES
        assert granule.platform == "noaa19"
        assert granule.start_time == datetime(2012, 12, 12, 4, 16, 1, 500000, tzinfo=UTC)
        assert granule.end_time == datetime(2012, 12, 12, 4, 24, 36, tzinfo=UTC)
        got = granule.read(3, 1027)
        np.testing.assert_array_equal(granule.read_tie_latitudes(), block.tie_lat)
        telemetry = granule.read_telemetry()
    want = block.slice(3, 1027)
    assert got.first_line == 3
    assert got.granule == path.name
    for name in (
        "times", "counts", "tie_lat", "tie_lon", "tie_sat_zenith", "tie_sun_zenith",
        "tie_rel_azimuth", "prt_counts", "ict_counts", "space_counts",
    ):  # fmt: skip
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    np.testing.assert_array_equal(telemetry.times, block.times)
    np.testing.assert_array_equal(telemetry.prt_counts, block.prt_counts)


def test_a_block_slice_is_a_view_that_knows_its_first_line(written):
    _, block = written
    part = block.slice(10, 20).slice(2, 5)
    assert part.first_line == 12
    assert part.n_lines == 3
    assert part.counts.shape == (5, 3, N_PIXELS)
    assert np.shares_memory(part.counts, block.counts)
    np.testing.assert_array_equal(part.tie_lon, block.tie_lon[12:15])


def test_variables_are_stored_uncompressed_and_contiguous(written):
    path, _ = written
    with h5py.File(path, "r") as handle:
        for name in ("counts", "latitude", "longitude", "time", "prt_counts"):
            assert handle[name].chunks is None, name
            assert handle[name].compression is None, name
    with netCDF4.Dataset(path) as dataset:
        assert dataset.variables["counts"].dtype == np.uint16


@pytest.mark.parametrize("fraction", [0.5, 0.9, 0.02])
def test_a_truncated_granule_raises_a_granule_error_naming_it(written, tmp_path, fraction):
    path, _ = written
    broken = tmp_path / f"cut-{fraction}.nc"
    data = path.read_bytes()
    broken.write_bytes(data[: int(len(data) * fraction)])
    # opening or reading may be what notices
    with pytest.raises(GranuleError, match=broken.name), open_granule(broken) as granule:  # noqa: PT012
        granule.read(0, granule.n_lines)
        granule.read_into(0, granule.n_lines, np.empty(1 << 24, np.uint8))


def test_garbage_behind_an_hdf5_signature_raises_a_granule_error(tmp_path):
    fake = tmp_path / "fake.nc"
    fake.write_bytes(b"\x89HDF\r\n\x1a\n" + np.random.default_rng(0).bytes(100_000))
    assert not NetCDFGranuleReader.can_open(fake)
    with pytest.raises(GranuleError, match=rf"{fake.name}: .*HDF5 cannot open it: truncated"):
        open_granule(fake)


def test_another_netcdf_file_is_not_taken_for_a_granule(tmp_path):
    other = tmp_path / "other.nc"
    with netCDF4.Dataset(other, "w") as dataset:
        dataset.createDimension("x", 3)
        dataset.createVariable("x", "f4", ("x",))[:] = [1, 2, 3]
    assert not NetCDFGranuleReader.can_open(other)
    with pytest.raises(GranuleError, match=r"other\.nc: no reader .* without a global attribute"):
        open_granule(other)


def test_lines_outside_the_granule_are_refused(written):
    path, _ = written
    with open_granule(path) as granule:
        with pytest.raises(GranuleError, match="asked of"):
            granule.read(-1, 4)
        with pytest.raises(GranuleError, match="asked of"):
            granule.read(5, 4)


def test_readers_are_found_by_name_and_unknown_names_list_the_installed_ones():
    assert get_reader("nearline-avhrr") is NetCDFGranuleReader
    with pytest.raises(GranuleError, match=r"no granule reader called 'hrpt'.*nearline-avhrr"):
        get_reader("hrpt")


def test_sniffing_ignores_the_file_name(written, tmp_path):
    path, _ = written
    renamed = tmp_path / "NSS.GHRR.NP.D12347.S0416.E0424.B1234567.GC"  # an L1b-style name
    renamed.write_bytes(path.read_bytes())
    with open_granule(renamed) as granule:
        assert type(granule).__name__ == "NetCDFGranule"
