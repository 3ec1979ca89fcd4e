"""Files that travel with granules but are none: a folder of granules as users download it
often holds a README, checksum lists, ECS ``.met`` metadata or the element sets that AVHRR
Level 1b geolocation reads. Ingesting the folder passes over them, saying what they are,
rather than failing on each."""

from __future__ import annotations

from pathlib import Path

from nearline.swath._tle import is_tle_file

SNIFF_BYTES = 8192  # every granule format nearline reads has a zero byte well before this


def companion_kind(path: Path) -> str | None:
    """What ``path`` is if it is no granule but a text file beside them (element sets, or
    other text), or None: a binary file, which a reader must take or refuse by name."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return None
    if not head or b"\0" in head:
        return None
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(head) - 4:  # not just a character cut at the end of the sniff
            return None
    if is_tle_file(path):
        return "two-line element sets, which AVHRR GAC Level 1b geolocation reads"
    return "text, not a granule"
