"""Writing NOAA KLM AVHRR GAC Level 1b files (version 5), as the NOAA KLM User's Guide
section 8.3.1 lays them out, for tests and demonstrations.

A file is an optional 512-byte Archive Retrieval System (ARS) header (Table 8.3.1.2-1: what
NOAA's archive puts before a data set it hands out), then header records and one record per
scan line, all 4608 bytes for GAC. pygac's record layouts (``pygac.klm_reader.header``,
``pygac.gac_klm.scanline``) name the fields; this module fills in what a reader needs and
leaves the rest zero.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np

from nearline.errors import GranuleError
from nearline.swath._block import N_PIXELS, SwathBlock

KLM_RECORD = 4608  # bytes: every GAC header and data record (Guide 8.3.1.4)
ARS_HEADER = 512  # bytes: the archive's header before a retrieved data set (Guide 8.3.1.2)
GAC_DATA_TYPE = 2  # the header's data type code: 1 LAC, 2 GAC, 3 HRPT
# the header's spacecraft identification code, and the data set name's spacecraft code
KLM_SPACECRAFT = {
    "noaa15": 4, "noaa16": 2, "noaa17": 6, "noaa18": 7, "noaa19": 8,
    "metopa": 12, "metopb": 11, "metopc": 13,
}  # fmt: skip
KLM_CODES = {
    "noaa15": "NK", "noaa16": "NL", "noaa17": "NM", "noaa18": "NN", "noaa19": "NP",
    "metopa": "M2", "metopb": "M1", "metopc": "M3",
}  # fmt: skip
DAY_COUNT_EPOCH = np.datetime64("1950-01-01", "D")  # the header's day counts start here


def klm_name(platform: str, start: datetime, end: datetime) -> str:
    """The NOAA CLASS data set name, e.g. NSS.GHRR.NP.D12347.S0416.E0424.B0000001.GC."""
    code = KLM_CODES[platform]
    return f"NSS.GHRR.{code}.D{start:%y%j}.S{start:%H%M}.E{end:%H%M}.B0000001.GC"


def write_klm(
    path: Path,
    block: SwathBlock,
    *,
    ch3_select: np.ndarray | None = None,
    archive_header: bool = False,
) -> None:
    """Write ``block`` (a whole granule) as a NOAA KLM AVHRR GAC Level 1b file (version 5).

    Filled in: the header's creation site, format version, header record count (1), data set
    name, spacecraft, data type (GAC), start and end (year, day, milliseconds and the day
    count from 1950) and record counts; per scan line its number, time, channel-3 select
    bits (``ch3_select``, default 3b on every line) in the scan line bit field, the 51
    tie-point latitudes/longitudes (1e-4 degrees), PRT, blackbody (back scan: 3b, 4, 5 ten
    times) and space counts (channels 1, 2, 3, 4, 5 ten times) and the five channels'
    10-bit counts packed three to a 32-bit word. Angles, calibration coefficients and
    housekeeping stay zero. ``archive_header``: begin with the ARS header NOAA's archive
    puts before a data set it hands out.
    """
    from pygac.gac_klm import scanline
    from pygac.klm_reader import header

    if block.platform not in KLM_SPACECRAFT:
        raise GranuleError(
            f"granule {path}: KLM L1b is written for {', '.join(KLM_SPACECRAFT)}, "
            f"not {block.platform!r}"
        )
    n = block.n_lines
    times = block.times.astype("datetime64[ms]")
    start, end = times[0].astype(datetime), times[-1].astype(datetime)
    name = klm_name(block.platform, start, end)
    head = np.zeros(1, header)
    head["data_set_creation_site_id"] = b"NSS"
    head["ascii_blank_=_x20"] = b" "
    head["noaa_level_1b_format_version_number"] = 5
    head["count_of_header_records"] = 1
    head["data_set_name"] = name.encode()
    head["noaa_spacecraft_identification_code"] = KLM_SPACECRAFT[block.platform]
    head["data_type_code"] = GAC_DATA_TYPE
    head["count_of_data_records"] = n
    head["count_of_calibrated,_earth_located_scan_lines"] = n
    for prefix, moment in (("start", times[0]), ("end", times[-1])):
        day = moment.astype("datetime64[D]")
        year = day.astype("datetime64[Y]")
        days = (day - DAY_COUNT_EPOCH).astype(int)
        head[f"{prefix}_of_data_set_day_count_starting_from_0_at_00h,_1_jan_1950"] = days
        head[f"{prefix}_of_data_set_year"] = year.astype(int) + 1970
        head[f"{prefix}_of_data_set_day_of_year"] = (day - year).astype(int) + 1
        head[f"{prefix}_of_data_set_utc_time_of_day"] = (moment - day).astype(np.int64)

    lines = np.zeros(n, scanline)
    day = times.astype("datetime64[D]")
    year = day.astype("datetime64[Y]")
    lines["scan_line_number"] = np.arange(1, n + 1)
    if ch3_select is not None:
        lines["scan_line_bit_field"] = np.asarray(ch3_select, np.uint16) & 3
    lines["scan_line_year"] = year.astype(int) + 1970
    lines["scan_line_day_of_year"] = (day - year).astype(int) + 1
    lines["scan_line_utc_time_of_day"] = (times - day).astype(np.int64)
    lines["earth_location"]["lats"] = np.rint(block.tie_lat * 1e4)
    lines["earth_location"]["lons"] = np.rint(block.tie_lon * 1e4)
    lines["telemetry"]["PRT"] = np.rint(block.prt_counts)[:, None]
    lines["back_scan"] = np.tile(np.rint(block.ict_counts), 10)  # 3b, 4, 5, 3b, 4, 5, ...
    space = np.zeros((n, 5))
    space[:, 2:] = np.rint(block.space_counts)
    lines["space_data"] = np.tile(space, 10)  # 1, 2, 3, 4, 5, 1, 2, ...
    # pixel-major, channel-minor, three 10-bit counts to a word (2045 counts, one pad)
    flat = np.zeros((n, 682 * 3), np.uint32)
    flat[:, : N_PIXELS * 5] = np.moveaxis(block.counts, 0, 2).reshape(n, N_PIXELS * 5)
    words = flat.reshape(n, 682, 3)
    lines["sensor_data"] = (words[:, :, 0] << 20) | (words[:, :, 1] << 10) | words[:, :, 2]

    with open(path, "wb") as handle:
        if archive_header:
            handle.write(_ars_header(name, block))
        handle.write(head.tobytes().ljust(KLM_RECORD, b"\0"))
        handle.write(lines.tobytes())


def _ars_header(name: str, block: SwathBlock) -> bytes:
    """The ARS header record (Guide Table 8.3.1.2-1), all ASCII: order, data selection (the
    whole data set: select flag T, channels 1-5 selected, 10-bit packed words) and summary
    (first and last latitude and longitude, record size and count, "NOAA Level 1b")."""
    times = block.times.astype("datetime64[ms]")
    start = times[0].astype(datetime)
    minutes = int(np.ceil((times[-1] - times[0]) / np.timedelta64(1, "m")))
    lat, lon = block.tie_lat[[0, -1], 25], block.tie_lon[[0, -1], 25]
    fields = [
        "000000",  # order (NeS) number
        " " * 8,  # CLASS number
        f"{start:%Y%j}",  # order creation year and day of year
        "A",  # processing site: CLASS
        "nearline",  # processing software
        name.ljust(42),
        "  ",
        "T",  # total data set copy
        "+90-90-180+180",  # beginning/ending latitude, beginning/ending longitude
        f"{start:%H%M}{minutes:03d}",
        "N",  # no appended data
        "Y" * 5 + "N" * 15,  # channel select flags
        "10",  # 10-bit packed sensor words
        " " * 27,
        "D" if lat[1] < lat[0] else "A",  # ascending or descending
        f"{lat[0]:+03.0f}{lat[1]:+03.0f}{lon[0]:+04.0f}{lon[1]:+04.0f}",
        "NOAA Level 1b".ljust(20),
        f"{KLM_RECORD:6d}",
        f"{block.n_lines + 1:6d}",  # the header record and the data records
    ]
    record = "".join(fields).encode("ascii")
    return record.ljust(ARS_HEADER, b" ")
