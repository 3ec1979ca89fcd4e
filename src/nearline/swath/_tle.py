"""Two-line element sets (TLEs): telling them by their content, and finding the one a GAC
granule needs.

pygac needs a spacecraft's element set for a POD granule of a platform whose clock drifted
(NOAA-7, -9, -11, -12, -14): it corrects the geolocation for the drift, and fills the lines
that shift in from beyond the file's ends with positions propagated from the elements. It
looks for them as ``TLE_<satname>.txt`` (``TLE_noaa14.txt``) in a folder; nearline looks
beside the granule, then in ``$NEARLINE_TLE_DIR``.
"""

from __future__ import annotations

import itertools
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

TLE_DIR_ENV = "NEARLINE_TLE_DIR"
TLE_NAME = "TLE_%(satname)s.txt"  # pygac's tle_name convention
LINE_LENGTH = 69
NAME_LENGTH = 24  # a title line ("0 NOAA 14" or "NOAA 14") is at most 24 characters
HEAD_BYTES = 4096  # what is_tle_file reads: the first sets are enough to tell
MAX_DAYS = 7.0  # pygac's tle_thresh: an element set farther from the granule is not used


def tle_checksum(line: str) -> int:
    """The mod-10 checksum of a TLE line's first 68 characters: digits count their value,
    a minus sign 1, anything else 0."""
    return sum(int(c) if c.isdigit() else c == "-" for c in line[: LINE_LENGTH - 1]) % 10


def _element_line(line: str, number: str) -> bool:
    """Whether ``line`` is line ``number`` ("1" or "2") of a set with a valid checksum."""
    return (
        len(line) == LINE_LENGTH
        and line.startswith(number + " ")
        and line[-1].isdigit()
        and tle_checksum(line) == int(line[-1])
    )


def is_tle_file(path: str | Path) -> bool:
    """Whether ``path`` holds two-line element sets, judged by its first 4 KiB: one or more
    sets, each an optional title line, then line 1 (starting "1 ") and line 2 (starting
    "2 ", of the same satellite), both with valid mod-10 checksums. Never raises.

    ``nearline ingest`` and ``nearline composite`` pass over such files in a folder: they are
    companions of the GAC granules beside them, not granules.
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES + 1)
        text = head[:HEAD_BYTES].decode("ascii")
    except (OSError, UnicodeDecodeError):
        return False
    cut = len(head) > HEAD_BYTES  # the window may end inside a set
    lines = [line.rstrip() for line in text.splitlines()]
    lines = [line for line in (lines[:-1] if cut else lines) if line]
    sets, i = 0, 0
    while i < len(lines):
        if not lines[i].startswith(("1 ", "2 ")):  # a title line
            if len(lines[i]) > NAME_LENGTH:
                return False
            i += 1
        pair = lines[i : i + 2]
        if len(pair) < 2:  # a set begun at the end: whole only if the window cut it
            return cut and sets > 0 and all(_element_line(line, "1") for line in pair)
        first, second = pair
        if not (_element_line(first, "1") and _element_line(second, "2")):
            return False
        if first[2:7] != second[2:7]:  # the satellite catalogue number
            return False
        sets, i = sets + 1, i + 2
    return sets > 0


def find_tle(granule: Path, satname: str) -> Path | None:
    """The element-set file for ``satname`` (pygac's name: "noaa14"): ``TLE_<satname>.txt``
    beside ``granule``, else in ``$NEARLINE_TLE_DIR``; None if neither holds one."""
    name = TLE_NAME % {"satname": satname}
    folders = [Path(granule).resolve().parent]
    if os.environ.get(TLE_DIR_ENV):
        folders.append(Path(os.environ[TLE_DIR_ENV]))
    for folder in folders:
        if (folder / name).is_file():
            return folder / name
    return None


def element_epoch(line1: str) -> datetime:
    """The epoch of a set from its line 1 (columns 19-32, YYDDD.DDDDDDDD; years 57-99 are
    the 1900s, as NORAD's catalogue counts them)."""
    year = int(line1[18:20])
    year += 1900 if year >= 57 else 2000
    day = float(line1[20:32])
    return datetime(year, 1, 1, tzinfo=UTC) + timedelta(days=day - 1)


def nearest_element_set(path: Path, moment: datetime) -> tuple[str, str] | None:
    """Lines 1 and 2 of the set in ``path`` whose epoch is nearest ``moment`` (UTC), if
    within :data:`MAX_DAYS` of it; None if none is. Title lines are passed over, so files of
    three-line sets serve as well as pygac's two-line ones."""
    text = Path(path).read_text("ascii", errors="replace")  # is_tle_file judged its start
    lines = [line.rstrip() for line in text.splitlines()]
    apart = {}
    for first, second in itertools.pairwise(lines):
        if _element_line(first, "1") and _element_line(second, "2"):
            try:
                apart[first, second] = abs(element_epoch(first) - moment)
            except ValueError:  # an epoch field that is not a number: not a set after all
                continue
    if not apart or min(apart.values()) > timedelta(days=MAX_DAYS):
        return None
    return min(apart, key=apart.__getitem__)
