"""Two-line element sets: told by their content (checksums and all), found beside a granule
or in $NEARLINE_TLE_DIR, and passed over in a folder of granules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nearline.swath import granule_paths, is_tle_file
from nearline.swath._orbit import METOPA_TLE, NOAA19_TLE
from nearline.swath._tle import element_epoch, find_tle, nearest_element_set, tle_checksum


def _write(path, *lines: str) -> object:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_checksums_are_mod_10_of_digits_and_minus_signs():
    for line in (*NOAA19_TLE, *METOPA_TLE):
        assert tle_checksum(line) == int(line[-1])
    assert tle_checksum("1 -2-3" + " " * 62 + "0") == (1 + 1 + 2 + 1 + 3) % 10


@pytest.mark.parametrize(
    "lines",
    [
        NOAA19_TLE,
        (*NOAA19_TLE, *NOAA19_TLE),  # several sets of one spacecraft, as pygac's files hold
        ("NOAA 19", *NOAA19_TLE, "0 METOP-A", *METOPA_TLE),  # three-line sets with titles
    ],
    ids=["one set", "several", "with titles"],
)
def test_element_set_files_are_told_by_their_content(tmp_path, lines):
    assert is_tle_file(_write(tmp_path / "elements", *lines))


def test_a_long_file_is_told_by_its_first_sets(tmp_path):
    path = _write(tmp_path / "TLE_noaa19.txt", *(NOAA19_TLE * 200))  # 28 KB, cut mid-set
    assert path.stat().st_size > 4096
    assert is_tle_file(path)


@pytest.mark.parametrize(
    "lines",
    [
        (NOAA19_TLE[0], NOAA19_TLE[1][:-1] + "0"),  # a wrong checksum
        (NOAA19_TLE[0], METOPA_TLE[1]),  # line 2 of another satellite
        (NOAA19_TLE[1], NOAA19_TLE[0]),  # the lines swapped
        (NOAA19_TLE[0],),  # line 1 alone
        ("a title far longer than the 24 characters a title has", *NOAA19_TLE),
        ("x,y", "1,2"),  # a CSV file
        (),  # empty
    ],
    ids=["checksum", "two satellites", "swapped", "half a set", "long title", "csv", "empty"],
)
def test_other_files_are_not_element_sets(tmp_path, lines):
    assert not is_tle_file(_write(tmp_path / "other", *lines))


def test_binary_and_missing_files_are_not_element_sets(tmp_path):
    binary = tmp_path / "binary"
    binary.write_bytes(bytes(range(256)) * 4)
    assert not is_tle_file(binary)
    assert not is_tle_file(tmp_path / "missing")


def test_the_nearest_set_within_seven_days_is_chosen(tmp_path):
    path = _write(tmp_path / "TLE_x.txt", "NOAA 19", *NOAA19_TLE, *METOPA_TLE)
    assert element_epoch(NOAA19_TLE[0]).date().isoformat() == "2012-12-10"
    assert element_epoch(METOPA_TLE[0]).year == 2011
    near = nearest_element_set(path, datetime(2012, 12, 12, tzinfo=UTC))
    assert near == NOAA19_TLE
    assert nearest_element_set(path, datetime(2012, 12, 20, tzinfo=UTC)) is None


def test_element_sets_are_found_beside_the_granule_then_in_the_folder_named(tmp_path, monkeypatch):
    granule = tmp_path / "day" / "NSS.GHRR.NJ.D95013.S2300.E0045.B0000001.GC"
    granule.parent.mkdir()
    granule.write_bytes(b"")
    elsewhere = tmp_path / "elements"
    elsewhere.mkdir()
    kept = _write(elsewhere / "TLE_noaa14.txt", *NOAA19_TLE)
    assert find_tle(granule, "noaa14") is None
    monkeypatch.setenv("NEARLINE_TLE_DIR", str(elsewhere))
    assert find_tle(granule, "noaa14") == kept
    beside = _write(granule.parent / "TLE_noaa14.txt", *NOAA19_TLE)
    assert find_tle(granule, "noaa14") == beside


def test_a_folder_of_granules_passes_over_its_element_sets(tmp_path):
    granule = tmp_path / "NSS.GHRR.TN.D80003.S1147.E1332.B0630506.GC"
    granule.write_bytes(b"\0" * 100)
    tle = _write(tmp_path / "TLE_tirosn.txt", *NOAA19_TLE)
    notes = _write(tmp_path / "notes.txt", "not an element set")
    # text beside granules (element sets, notes) is passed over, unless the caller sorts it out
    assert granule_paths([tmp_path]) == [granule]
    assert granule_paths([tmp_path], recursive=True) == [granule]
    assert granule_paths([tmp_path], companions=True) == [granule, tle, notes]
    assert granule_paths([tle]) == [tle]  # named on its own, it is what was asked for
    assert granule_paths([notes]) == [notes]
