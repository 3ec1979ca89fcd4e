"""Real NOAA KLM GAC Level 1b, written by nearline and decoded by pygac."""

from __future__ import annotations

import numpy as np
import pytest

from nearline.errors import ConfigError, GranuleError
from nearline.swath import open_granule
from nearline.swath._gac import GACReader, klm_name, write_klm
from nearline.swath._synth import synthesize_day
from nearline.swath.netcdf_granule import NetCDFGranuleReader
from nearline.testing.reader import ReaderTests

LINES = 300


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """A short synthetic granule (real geometry) and the same lines as KLM L1b."""
    folder = tmp_path_factory.mktemp("l1b")
    source = synthesize_day("2012-12-12", 1, folder, lines_per_orbit=LINES, seed=2)[0]
    with open_granule(source) as granule:
        block = granule.read(0, granule.n_lines)
    path = folder / klm_name("noaa19", granule.start_time, granule.end_time)
    write_klm(path, block)
    return path, block


@pytest.fixture
def granule_path(synthetic):
    return synthetic[0]


class TestGACReader(ReaderTests):
    reader = GACReader


def test_pygac_reads_back_what_was_written(synthetic):
    path, want = synthetic
    assert GACReader.can_open(path)
    assert not NetCDFGranuleReader.can_open(path)
    with open_granule(path) as granule:
        assert type(granule).__name__ == "GACGranule"
        assert granule.platform == "noaa19"
        assert granule.n_lines == LINES
        assert granule.start_time.isoformat() == "2012-12-12T00:00:00+00:00"
        got = granule.read(0, LINES)
    np.testing.assert_array_equal(got.counts, want.counts)
    np.testing.assert_array_equal(got.times, want.times)
    np.testing.assert_allclose(got.tie_lat, want.tie_lat, atol=1e-4)
    np.testing.assert_allclose(got.tie_lon, want.tie_lon, atol=1e-4)
    np.testing.assert_array_equal(got.prt_counts, np.rint(want.prt_counts))
    np.testing.assert_array_equal(got.ict_counts, np.rint(want.ict_counts))
    np.testing.assert_array_equal(got.space_counts, np.rint(want.space_counts))


def test_the_derived_viewing_geometry_agrees_with_pyorbitals(synthetic):
    """L1b angles are not read (pygac would need downloaded element sets); the reader's own
    estimates stay close to what pyorbital computed for the synthetic granule."""
    path, want = synthetic
    with open_granule(path) as granule:
        got = granule.read(0, LINES)
    np.testing.assert_allclose(got.tie_sun_zenith, want.tie_sun_zenith, atol=0.1)
    np.testing.assert_allclose(got.tie_sat_zenith, want.tie_sat_zenith, atol=1.5)
    lit = want.tie_sun_zenith < 85
    relative = np.abs(got.tie_rel_azimuth - want.tie_rel_azimuth)[lit]
    off_nadir = (want.tie_sat_zenith > 10)[lit]  # at nadir the azimuth is ill defined
    assert np.median(relative) < 1.0
    assert np.percentile(relative[off_nadir], 99) < 3.0


def test_a_truncated_l1b_file_raises_a_granule_error_naming_it(synthetic, tmp_path):
    path, _ = synthetic
    broken = tmp_path / path.name
    broken.write_bytes(path.read_bytes()[: 4608 * (LINES // 2) + 100])
    with pytest.raises(GranuleError, match=rf"{broken.name}.*truncated"):
        open_granule(broken)


def test_only_klm_platforms_are_written(synthetic, tmp_path):
    _, block = synthetic
    from dataclasses import replace

    with pytest.raises(GranuleError, match="not 'metopb'"):
        write_klm(tmp_path / "x.l1b", replace(block, platform="metopb"))


def test_a_header_with_a_bad_data_set_name_is_not_gac(synthetic, tmp_path):
    path, _ = synthetic
    data = bytearray(path.read_bytes())
    data[22:30] = b"NSS.LHRR"  # an LAC data set name inside the header
    lac = tmp_path / "lac.l1b"
    lac.write_bytes(bytes(data))
    assert not GACReader.can_open(lac)
    with pytest.raises(GranuleError, match="not an AVHRR GAC level 1b file"):
        GACReader().open(lac)


def test_a_synthetic_day_can_be_written_as_l1b(tmp_path):
    paths = synthesize_day("2012-12-12", 2, tmp_path, lines_per_orbit=80, file_format="l1b")
    assert [p.name[:31] for p in paths] == [
        "NSS.GHRR.NP.D12347.S0000.E0000.",
        "NSS.GHRR.NP.D12347.S0142.E0142.",  # one period (102 min) after midnight
    ]
    with open_granule(paths[1]) as granule:
        assert type(granule).__name__ == "GACGranule"
        assert granule.n_lines == 80
        assert granule.read(0, 80).counts.max() < 1024
    with pytest.raises(ConfigError, match="--format"):
        synthesize_day("2012-12-12", 1, tmp_path, file_format="hdf4")
