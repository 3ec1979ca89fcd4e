"""Cutting an AVHRR GAC Level 1b file (POD or KLM) by scan-line records.

A Level 1b data set is its header record(s) and one fixed-size record per scan line, each
holding every channel's counts, the line's time, its tie-point geolocation and its
telemetry together (NOAA POD Guide section 3; KLM Guide section 8.3.1). So the cut keeps
whole records: everything before the first scan line (the TBM or ARS archive header and
the header records) and the kept lines' records, byte for byte, and brings up to date what
the header says of them, as a reader checks it:

- **POD**: ``number_of_scans``, and ``start_time``/``end_time`` set to the first and last
  kept line's ``time_code`` (the header and the scan lines share that 48-bit year, day and
  millisecond encoding);
- **KLM**: ``count_of_data_records`` and ``count_of_calibrated,_earth_located_scan_lines``,
  and the start and end year, day of year, millisecond of the day and day count from 1950;
- both: the scan line numbers run 1, 2, ... again (pygac drops lines whose numbers stray
  from that), and the data set name (in the header and the archive header) carries the new
  ``D``/``S``/``E`` date and times.

``variables`` cannot be asked of a Level 1b file: there is no variable to leave out of a
record, and a record with some channels left out is no longer Level 1b. The AVHRR FDR (CF
netCDF) holds the same lines variable by variable. A file some of whose lines pygac drops
(corrupt line numbers) is refused too: its lines cannot be matched to its records.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from nearline.errors import SubsetError
from nearline.swath._gac_klm import ARS_HEADER, DAY_COUNT_EPOCH
from nearline.swath._l1b import POD_TBM_HEADER, identify, layout
from nearline.swath._subset_request import SubsetRequest, SubsetResult, as_datetime, row_span

_NAME_TIMES = re.compile(r"\.D\d{5}\.S\d{4}\.E\d{4}")


def cut_l1b(source: Path, target: Path, request: SubsetRequest) -> SubsetResult:
    """Write the header and the scan-line records of ``source`` that ``request`` keeps to
    ``target``; the module says what is brought up to date."""
    from pygac.utils import file_opener

    from nearline.swath._geolocation import lonlat
    from nearline.swath._registry import open_granule

    if request.variables is not None:
        raise SubsetError(
            f"granule {source.name}: a GAC Level 1b file cannot be cut by variables: each "
            "scan-line record holds every channel, its geolocation and telemetry, so whole "
            "records are kept; leave out variables (the AVHRR FDR, netCDF, can be cut by them)"
        )
    with file_opener(str(source)) as handle:  # pygac reads gzip-compressed copies too
        data = handle.read()
    found = identify(source)
    if found is None:
        raise SubsetError(f"granule {source.name}: not a GAC Level 1b file")
    reader_class, archive, head = found
    reader = reader_class(interpolate_coords=False)
    shape = layout(reader, archive, head, len(data))
    with open_granule(source) as granule:
        if granule.n_lines != shape.whole:
            raise SubsetError(
                f"granule {source.name}: pygac reads {granule.n_lines} of its {shape.whole} "
                "scan-line records (it drops lines with corrupt line numbers), so its lines "
                "cannot be matched to its records to cut"
            )
        block = granule.read(0, granule.n_lines)
    positions = lonlat(block) if request.bbox is not None else None
    first, stop = row_span(source.name, request, lonlat=positions, times=block.times)
    records = np.frombuffer(data, reader.scanline_type, count=shape.whole, offset=shape.first_line)[
        first:stop
    ].copy()
    records["scan_line_number"] = np.arange(1, records.size + 1)
    times = block.times[first:stop].astype("datetime64[ms]")
    prefix = bytearray(data[: shape.first_line])
    at = (POD_TBM_HEADER if shape.kind == "POD" else ARS_HEADER) if archive is not None else 0
    header = np.frombuffer(bytes(prefix[at : at + head.dtype.itemsize]), head.dtype).copy()
    if shape.kind == "POD":
        _pod_header(header, records)
    else:
        _klm_header(header, records.size, times[0], times[-1])
    prefix[at : at + head.dtype.itemsize] = header.tobytes()
    prefix = _renamed(prefix, as_datetime(times[0]), as_datetime(times[-1]))
    with open(target, "wb") as out:
        out.write(bytes(prefix))
        out.write(records.tobytes())
    return SubsetResult(
        target, first, stop, shape.whole, as_datetime(times[0]), as_datetime(times[-1])
    )


def _pod_header(header: np.ndarray, records: np.ndarray) -> None:
    header["number_of_scans"] = records.size
    header["start_time"] = records["time_code"][0]
    header["end_time"] = records["time_code"][-1]


def _klm_header(header: np.ndarray, count: int, start: np.datetime64, end: np.datetime64) -> None:
    header["count_of_data_records"] = count
    header["count_of_calibrated,_earth_located_scan_lines"] = count
    for prefix, moment in (("start", start), ("end", end)):
        day = moment.astype("datetime64[D]")
        year = day.astype("datetime64[Y]")
        header[f"{prefix}_of_data_set_day_count_starting_from_0_at_00h,_1_jan_1950"] = (
            day - DAY_COUNT_EPOCH
        ).astype(int)
        header[f"{prefix}_of_data_set_year"] = year.astype(int) + 1970
        header[f"{prefix}_of_data_set_day_of_year"] = (day - year).astype(int) + 1
        header[f"{prefix}_of_data_set_utc_time_of_day"] = (moment - day).astype(np.int64)


def _renamed(prefix: bytearray, start: datetime, end: datetime) -> bytearray:
    """Every data set name in ``prefix`` (ASCII, or EBCDIC as some POD headers write it)
    with the cut's day, start and end."""
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    times = (f"{start:%y%j}", f"{start:%H%M}", f"{end:%H%M}")
    out = bytearray(prefix)
    for encoding in ("latin-1", "cp500"):  # one byte a character: offsets are the text's
        text = bytes(out).decode(encoding)
        for match in _NAME_TIMES.finditer(text):
            new = f".D{times[0]}.S{times[1]}.E{times[2]}".encode(encoding)
            out[match.start() : match.end()] = new
    return out
