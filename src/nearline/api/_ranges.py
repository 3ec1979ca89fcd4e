"""Which bytes of a file a download sends, by its ``Range`` and ``If-Range`` headers.

Starlette's ``FileResponse`` answers ranges of a local file itself; its own parser is asked
first here, so a range it would refuse is refused as the service refuses any bad input, with
an OGC exception document (400, or 416 with ``Content-Range: bytes */SIZE``), and the two
never disagree. An object streamed from a bucket gets the same refusals and one range."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi.responses import FileResponse
from starlette.exceptions import HTTPException
from starlette.responses import MalformedRangeHeader, RangeNotSatisfiable

from nearline.errors import InvalidRequest


def requested_ranges(header: str | None, size: int) -> list[tuple[int, int]]:
    """The ``(start, stop)`` byte ranges ``header`` asks of a file of ``size`` bytes, merged
    and clipped to its end; none: the whole file.

    Parameters
    ----------
    header
        The request's ``Range``, if it has one.
    size
        The file's bytes.
    """
    if header is None:
        return []
    try:
        return FileResponse._parse_range_header(header, size)
    except MalformedRangeHeader as error:
        raise InvalidRequest(f"Range {header!r}: {error.content}") from None
    except RangeNotSatisfiable:
        raise HTTPException(
            416,
            f"Range {header!r}: no range starts in the file's {size} bytes",
            headers={"Content-Range": f"bytes */{size}"},
        ) from None


def one_range(
    headers: Mapping[str, str], size: int | None, etag: str | None
) -> tuple[int, int] | None:
    """The one range a streamed download sends, or None for the whole object: no Range, an
    ``If-Range`` other than ``etag`` (the object changed), or several ranges (a 200 with
    the whole object answers those, as HTTP allows).

    Parameters
    ----------
    headers
        The request's headers.
    size
        The object's bytes (None: not known, so the whole object).
    etag
        The object's ETag.
    """
    if size is None or headers.get("if-range", etag) != etag:
        return None
    ranges = requested_ranges(headers.get("range"), size)
    return ranges[0] if len(ranges) == 1 else None
