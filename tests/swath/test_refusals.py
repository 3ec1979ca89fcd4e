"""What a user is told of a file nearline cannot read: one line naming the file and, for
every reader, what it looked for and did not find; a reader's own failure (a plug-in's bug,
or a library's surprise) turned into that one line too; text beside the granules of a
folder passed over, not failed on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nearline.errors import GranuleError
from nearline.swath import available_readers, companion_kind, open_granule
from nearline.swath._orbit import NOAA19_TLE
from nearline.swath._registry import READERS

from ..test_plugins import install

PLUGIN = """
from nearline.errors import GranuleError
from nearline.swath import Reader

class Broken(Reader):
    name = "broken"

    @classmethod
    def can_open(cls, path):
        with open(path, "rb") as handle:
            return handle.read(6) == b"BROKEN"

    @classmethod
    def why_not(cls, path):
        raise RuntimeError("its explanation broke too")

    def open(self, path):
        return {}["no such key"]
"""


@pytest.fixture
def broken_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A third party's reader, installed through a real entry point, whose open() fails
    with a KeyError and whose why_not() fails too."""
    install(
        tmp_path, module="broken_reader", source=PLUGIN,
        points={"nearline.readers": {"broken": "broken_reader:Broken"}},
    )  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path))
    READERS.forget()
    yield
    READERS.forget()


def test_an_unknown_file_is_refused_in_one_line_with_each_readers_reason(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(GranuleError) as caught:
        open_granule(junk)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"granule {junk}: no reader recognises this file; tried ")
    for name in available_readers():
        assert f"{name} (" in message  # each reader says what it found missing
    assert "nearline-avhrr (not netCDF-4/HDF5)" in message
    assert "modis-l2 (not HDF4)" in message


def test_a_readers_own_failure_is_one_line_naming_the_file_and_the_reader(tmp_path, broken_reader):
    bad = tmp_path / "bad.dat"
    bad.write_bytes(b"BROKEN" + bytes(1000))
    with pytest.raises(GranuleError) as caught:
        open_granule(bad)
    assert str(caught.value) == (
        f"granule {bad}: the broken reader failed on it (KeyError: 'no such key'); the file "
        "may be damaged, or this is a bug in the reader: please report it"
    )
    other = tmp_path / "other.dat"
    other.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(GranuleError, match=r"broken \(could not say why \(RuntimeError\)\)"):
        open_granule(other)


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (b"# README\nwhat this folder holds\n", "text, not a granule"),
        ("caf\u00e9 \u00e0 la cr\u00e8me\n".encode(), "text, not a granule"),
        (b"1 11060U 78096A   80003.42977674\n" * 2, "text, not a granule"),  # no checksums
        (
            "\n".join(NOAA19_TLE).encode() + b"\n",
            "two-line element sets, which AVHRR GAC Level 1b geolocation reads",
        ),
        (b"\x0e\x03\x13\x01" + bytes(100), None),  # HDF4's signature: a granule's to refuse
        (b"NSS.GHRR.NP.D12347" + bytes(8000), None),  # a Level 1b header's text, then binary
        (b"", None),
    ],
)
def test_text_beside_granules_is_told_apart_from_binary_files(tmp_path, content, kind):
    path = tmp_path / "file"
    path.write_bytes(content)
    assert companion_kind(path) == kind
