"""NOAA Level 1b files as pygac opens them: which kind a file is (POD or KLM), where its scan
lines begin, how many whole ones it holds against what its header promises, and whether
its geolocation can be corrected for a POD spacecraft clock's drift.

The layouts are the NOAA Polar Orbiter Data User's Guide's (POD: NOAA-6..14 and TIROS-N)
and the NOAA KLM User's Guide's section 8.3.1 (KLM: NOAA-15..19, Metop):

- POD GAC: an optional 122-byte TBM header (tape copies), the header, and scan lines of
  3220 bytes; the records were written two to a 6440-byte tape block, so the first line
  begins at byte 6440 and a file with an odd number of lines ends in one of padding. The
  header's line count is ``number_of_scans``.
- KLM GAC: an optional 512-byte ARS header (data sets NOAA's archive hands out), then
  ``count_of_header_records`` header records and the scan lines, all of 4608 bytes. The
  header's line count is ``count_of_data_records``.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from nearline.swath._gac_klm import ARS_HEADER, GAC_DATA_TYPE, KLM_RECORD
from nearline.swath._tle import TLE_DIR_ENV, TLE_NAME, find_tle, is_tle_file, nearest_element_set

POD_TBM_HEADER = 122  # bytes
POD_FIRST_LINE = 6440  # bytes: the header's tape block
GROUND_SPEED = 6.6  # km/s: how fast the sub-satellite point moves, to put a clock error in km
DATA_SET_NAME = re.compile(r"[A-Z0-9]{3}\.([A-Z0-9]{4})\.([A-Z0-9]{2})\.D\d{5}\.S\d{4}\.E\d{4}")
NAME_BYTES = 1024  # where a data set name is looked for: the archive header and the header


def pygac_readers() -> list[Any]:
    from pygac.gac_klm import GACKLMReader
    from pygac.gac_pod import GACPODReader

    return [GACKLMReader, GACPODReader]


def identify(path: Path) -> tuple[Any, Any, Any] | None:
    """(pygac reader class, archive header or None, header) of a GAC file, by pygac's own
    header checks; None if neither the KLM nor the POD reader accepts it."""
    for reader_class in pygac_readers():
        try:
            archive, head = reader_class.read_header(str(path))
        except Exception:  # a header pygac cannot parse is not this kind
            continue
        return reader_class, archive, head
    return None


def header_problem(reader_class: Any, head: Any) -> str | None:
    """What makes a header pygac accepted (by its data set name, which pygac takes from the
    file's name when the header's cannot be decoded) not a GAC header after all: a spacecraft
    code neither Guide assigns, or a KLM data type code of another kind (1 LAC, 2 GAC, 3
    HRPT, ...; 0, unset, is let through). None if it is fine."""
    spacecraft = int(head["noaa_spacecraft_identification_code"])
    if spacecraft not in reader_class.spacecraft_names:
        known = ", ".join(map(str, sorted(reader_class.spacecraft_names)))
        return f"its header names spacecraft {spacecraft}, not one of {known}"
    if "count_of_data_records" in head.dtype.names:
        code = int(head["data_type_code"])
        if code not in (0, GAC_DATA_TYPE):
            return f"its header's data type code is {code}, not GAC's {GAC_DATA_TYPE}"
    return None


def data_set_name(path: Path) -> tuple[str, str, str] | None:
    """(name, transfer mode, spacecraft code) of the data set name in a file's first bytes
    (ASCII, or EBCDIC as some POD files have it); None if there is none."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(NAME_BYTES)
    except OSError:
        return None
    for encoding in ("latin-1", "cp500"):
        found = _name_in(head.decode(encoding))
        if found:
            return found
    return None


def _name_in(text: str) -> tuple[str, str, str] | None:
    found = DATA_SET_NAME.search(text)
    return None if found is None else (found.group(0), found.group(1), found.group(2))


def cut_in_header(path: Path) -> bool:
    """Whether ``path`` is a GAC data set by the name in its first bytes or, as pygac falls
    back to, its file name, but ends before its first scan line could begin: a copy cut
    inside its header, which pygac's checks cannot read."""
    found = data_set_name(path) or _name_in(path.name)
    return found is not None and found[1] == "GHRR" and path.stat().st_size < POD_FIRST_LINE


def decoded_size(path: Path) -> int:
    """The file's length as pygac reads it (pygac reads gzip-compressed files too)."""
    from pygac.utils import file_opener

    with file_opener(str(path)) as handle:
        try:
            return handle.seek(0, io.SEEK_END)
        except (OSError, ValueError):  # a compressed stream: count what it decodes to
            size = 0
            while chunk := handle.read(1 << 20):
                size += len(chunk)
            return size


@dataclass(frozen=True)
class Layout:
    """Where a Level 1b file's scan lines are, and how many it promises and holds."""

    kind: str  # "POD" or "KLM"
    first_line: int  # byte where the first scan line begins
    record: int  # bytes of a scan line
    promised: int  # scan lines the header says the data set holds
    whole: int  # whole scan lines in the file (a POD padding record not counted)


def layout(reader: Any, archive: Any, head: Any, size: int) -> Layout:
    """The layout of a file of ``size`` bytes whose headers pygac read; sets ``reader``'s
    offset past every KLM header record (the Guide: count_of_header_records), where pygac
    would assume one."""
    record = reader.scanline_type.itemsize
    if "number_of_scans" in head.dtype.names:
        kind, promised = "POD", int(head["number_of_scans"])
        first = reader.offset + (POD_TBM_HEADER if archive is not None else 0)
    else:
        kind, promised = "KLM", int(head["count_of_data_records"])
        reader.offset = KLM_RECORD * max(int(head["count_of_header_records"]), 1)
        first = reader.offset + (ARS_HEADER if archive is not None else 0)
    whole = max(size - first, 0) // record
    if kind == "POD" and promised % 2 and whole == promised + 1:
        whole = promised  # the tape block's second half: padding, which pygac drops
    return Layout(kind, first, record, promised, whole)


def completeness(shape: Layout, kept: int) -> list[str]:
    """What a reader of this file should know of what it holds: cut short, longer than its
    header says, or lines pygac left out for their corrupt line numbers."""
    notes = []
    if shape.whole < shape.promised:
        notes.append(
            f"holds {shape.whole:,} of the {shape.promised:,} scan lines its header promises: "
            "the file is cut short"
        )
    elif shape.whole > shape.promised:
        notes.append(
            f"holds {shape.whole:,} scan lines where its header promises {shape.promised:,}"
        )
    if kept < shape.whole:
        notes.append(
            f"{shape.whole - kept:,} of its scan lines carry corrupt line numbers and were left out"
        )
    return notes


def clock_drift(reader: Any, path: Path) -> list[str]:
    """Let pygac correct the geolocation of a POD file for the spacecraft clock's drift,
    which needs the spacecraft's element set (``TLE_<satname>.txt`` beside the granule or in
    ``$NEARLINE_TLE_DIR``); without one, turn the correction off and say so.

    pygac knows the drift of NOAA-7, -9, -11, -12 and -14 (its tables reach 0.8 s for
    NOAA-12, 1.3 to 1.75 s for NOAA-7, -9, -14 and 7.4 s for NOAA-11: 5 to 50 km along
    track); the other POD platforms and every KLM one (whose clock NOAA set daily) need no
    correction and no element set.
    """
    try:
        times = reader.get_times()
        drift = float(np.abs(reader.compute_clock_offsets()).max())
    except (AttributeError, KeyError):  # KLM, or a platform pygac has no drift table for
        return []
    satname = reader.spacecraft_name
    start = times[0].astype("datetime64[ms]").astype(datetime).replace(tzinfo=UTC)
    name = TLE_NAME % {"satname": satname}
    found = find_tle(path, satname)
    if found is None:
        why = f"no {name} beside the granule or in ${TLE_DIR_ENV}"
    elif not is_tle_file(found):
        why = f"{found} holds no two-line element sets"
    elif (elements := nearest_element_set(found, start)) is None:
        why = f"{found} holds no element set within 7 days of {start:%Y-%m-%d}"
    else:
        reader.tle_lines = elements  # pygac takes the set it is given
        return []
    reader.adjust_clock_drift = False
    return [
        f"geolocation not corrected for the spacecraft clock's drift of up to {drift:.2f} s "
        f"(about {drift * GROUND_SPEED:.0f} km along track): {why}; put {name}, element "
        f"sets of {start:%Y-%m-%d}, beside the granule or in ${TLE_DIR_ENV}"
    ]
