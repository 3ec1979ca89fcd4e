"""NOAA KLM GAC Level 1b written by nearline to the KLM User's Guide and decoded by pygac: a
file cut short is read as far as it goes and says so; broken copies are refused."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from nearline.errors import ConfigError, GranuleError
from nearline.swath import open_granule
from nearline.swath._gac import GACReader, klm_name, write_klm
from nearline.swath._gac_klm import KLM_RECORD
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


def test_a_file_cut_short_is_read_as_far_as_it_goes_and_says_so(synthetic, tmp_path):
    path, want = synthetic
    cut = tmp_path / path.name
    cut.write_bytes(path.read_bytes()[: KLM_RECORD * (LINES // 2) + 100])  # 149 lines and a bit
    with open_granule(cut) as granule:
        assert granule.n_lines == LINES // 2 - 1
        assert granule.warnings == (
            "holds 149 of the 300 scan lines its header promises: the file is cut short",
        )
        assert granule.end_time.isoformat() == "2012-12-12T00:01:14+00:00"  # line 149's
        got = granule.read(0, granule.n_lines)
    np.testing.assert_array_equal(got.counts, want.counts[:, : LINES // 2 - 1])
    np.testing.assert_array_equal(got.times, want.times[: LINES // 2 - 1])


def _garbage(size: int) -> bytes:
    return np.random.default_rng(7).integers(0, 256, size, dtype=np.uint8).tobytes()


@pytest.mark.parametrize(
    ("cut", "said"),
    [
        (lambda data: data[:300], r"cut inside its NOAA Level 1b header \(300 bytes"),
        (lambda data: data[: KLM_RECORD + 1000], "holds no whole scan line of the 300"),
        (lambda data: data[:KLM_RECORD] + _garbage(KLM_RECORD * 3), "records are corrupt"),
        (lambda data: data[:KLM_RECORD] + bytes(KLM_RECORD * 3), "records are corrupt"),
        (lambda data: _garbage(len(data)), "header names spacecraft .*, not one of"),
    ],
    ids=["inside the header", "no whole line", "garbage lines", "zeroed lines", "garbage"],
)
def test_broken_copies_are_refused_naming_the_file(synthetic, tmp_path, cut, said):
    path, _ = synthetic
    broken = tmp_path / path.name  # named as the real file: pygac trusts a name it can read
    broken.write_bytes(cut(path.read_bytes()))
    with pytest.raises(GranuleError, match=rf"granule {broken}: .*{said}"):
        open_granule(broken)


def test_garbage_with_another_name_is_no_granule_at_all(tmp_path):
    junk = tmp_path / "orbit.l1b"
    junk.write_bytes(_garbage(KLM_RECORD * 4))
    assert not GACReader.can_open(junk)
    assert GACReader.why_not(junk).startswith("no NOAA Level 1b POD or KLM header")
    with pytest.raises(GranuleError, match=r"no reader recognises this file; tried .*avhrr-gac"):
        open_granule(junk)


def test_a_file_with_the_archives_header_reads_the_same(synthetic, tmp_path):
    """NOAA's archive puts a 512-byte ARS header before a data set it hands out (KLM User's
    Guide 8.3.1.2); pygac finds it by its "NOAA Level 1b" data format field."""
    path, want = synthetic
    ordered = tmp_path / path.name
    write_klm(ordered, want, archive_header=True)
    data = ordered.read_bytes()
    assert len(data) == 512 + KLM_RECORD * (LINES + 1)
    assert data[30:72] == path.name[:42].encode()  # the ARS header's data set name
    assert data[161:181] == b"NOAA Level 1b".ljust(20)
    assert data[512:] == path.read_bytes()
    _assert_same_granule(ordered, path)


def test_every_header_record_the_header_counts_is_skipped(synthetic, tmp_path):
    """The Guide (8.3.1.4.2.2): the first data record follows as many header records as
    the first one's count_of_header_records says; pygac assumes one."""
    path, _ = synthetic
    data = bytearray(path.read_bytes())
    data[14:16] = (2).to_bytes(2, "big")  # count of header records, octets 15-16
    two = tmp_path / path.name
    two.write_bytes(bytes(data[:KLM_RECORD]) + bytes(KLM_RECORD) + bytes(data[KLM_RECORD:]))
    _assert_same_granule(two, path)


def _assert_same_granule(path, reference):
    with open_granule(path) as granule, open_granule(reference) as want:
        assert granule.warnings == ()
        assert (granule.n_lines, granule.start_time) == (want.n_lines, want.start_time)
        got, expected = granule.read(0, granule.n_lines), want.read(0, want.n_lines)
    np.testing.assert_array_equal(got.counts, expected.counts)
    np.testing.assert_array_equal(got.tie_lat, expected.tie_lat)


def test_the_written_header_follows_the_klm_guide(synthetic):
    """Octets as the Guide's Table 8.3.1.4.2.1-1 numbers them (1-based), big-endian."""
    path, _ = synthetic
    data = path.read_bytes()
    assert data[0:4] == b"NSS "
    assert int.from_bytes(data[4:6], "big") == 5  # format version
    assert int.from_bytes(data[14:16], "big") == 1  # header records
    assert data[22:64] == path.name[:42].encode()
    assert int.from_bytes(data[72:74], "big") == 8  # NOAA-19
    assert int.from_bytes(data[76:78], "big") == 2  # GAC
    assert int.from_bytes(data[80:84], "big") == 22991  # days from 1950-01-01 to 2012-12-12
    assert int.from_bytes(data[84:86], "big") == 2012
    assert int.from_bytes(data[86:88], "big") == 347
    line = data[KLM_RECORD : 2 * KLM_RECORD]
    assert int.from_bytes(line[0:2], "big") == 1  # scan line number
    assert int.from_bytes(line[2:4], "big") == 2012


@pytest.mark.parametrize(("platform", "code"), [("metopb", 11), ("metopc", 13), ("noaa15", 4)])
def test_every_klm_platform_is_written_and_read(synthetic, tmp_path, platform, code):
    _, block = synthetic
    path = tmp_path / klm_name(platform, block.times[0].item(), block.times[-1].item())
    write_klm(path, replace(block, platform=platform))
    assert int.from_bytes(path.read_bytes()[72:74], "big") == code
    with open_granule(path) as granule:
        assert granule.platform == platform


def test_only_klm_platforms_are_written(synthetic, tmp_path):
    _, block = synthetic
    with pytest.raises(GranuleError, match="not 'noaa14'"):
        write_klm(tmp_path / "x.l1b", replace(block, platform="noaa14"))


def test_a_header_with_a_bad_data_set_name_is_not_gac(synthetic, tmp_path):
    path, _ = synthetic
    data = bytearray(path.read_bytes())
    data[22:30] = b"NSS.LHRR"  # an LAC data set name inside the header
    lac = tmp_path / "lac.l1b"
    lac.write_bytes(bytes(data))
    assert not GACReader.can_open(lac)
    assert GACReader.why_not(lac).endswith("of LHRR data, not GAC (GHRR)")
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
