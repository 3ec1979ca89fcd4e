"""openEO's documents of a batch job, made from the nearline order that runs it: its status
(openEO's words for the order's), the job's metadata, its results as a STAC item whose
assets link to signed downloads, its logs as openEO log entries, and the job options a
client may send (tighter limits than the built-in's, never looser)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nearline.archive import STAC_VERSION
from nearline.errors import ConfigError, OpenEOError
from nearline.openeo._job_store import BatchJob
from nearline.units import parse_size

# an order's status (OGC's, nearline's jobs') in openEO's words; no order yet: created
STATUS = {"accepted": "queued", "running": "running", "successful": "finished",
          "failed": "error", "dismissed": "canceled"}  # fmt: skip
LOCKED = ("queued", "running")  # a job being computed is not changed (openEO's JobLocked)
LINK_SECONDS = 7 * 24 * 3600  # how long a signed result link works
MAC_BYTES = 16
LEVELS = {"DEBUG": "debug", "INFO": "info", "WARNING": "warning", "ERROR": "error",
          "CRITICAL": "error"}  # fmt: skip
# job options a client may send, each the built-in's parameter ``limits`` at most
OPTIONS = ("memory", "disk", "timeout")
MIN_MEMORY = 256 * 1024**2  # the processes' libraries alone take ~300 MB
MIN_DISK = 1024**2
_TIMEOUT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$")


@dataclass(frozen=True)
class Order:
    """What a batch job's order says of it: status (OGC's), progress, and its failure."""

    status: str
    progress: int
    message: str | None = None
    usage: Mapping[str, Any] | None = None


def openeo_status(order: Order | None) -> str:
    """openEO's status of a job whose order is ``order`` (None: not started)."""
    return "created" if order is None else STATUS[order.status]


def job_document(job: BatchJob, order: Order | None, *, full: bool) -> dict[str, Any]:
    """A job as ``GET /jobs`` (``full`` false) or ``GET /jobs/{id}`` lists it.

    Parameters
    ----------
    job
        The job.
    order
        Its order's state (None: not started).
    full
        Whether to carry the process and usage too.
    """
    document: dict[str, Any] = {
        "id": job.id,
        "title": job.title,
        "description": job.description,
        "status": openeo_status(order),
        "created": _stamp(job.created),
        "updated": _stamp(job.updated),
    }
    if order is not None:
        document["progress"] = order.progress
    if full:
        document["process"] = job.process
        if order is not None and order.usage:
            document["usage"] = _usage(order.usage)
        if job.options:
            document["job_options"] = job.options
        if job.order:
            document["nearline:job"] = job.order
    return document


def _usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """nearline's usage in openEO's terms where they have one."""
    found: dict[str, Any] = {}
    if usage.get("cpu_seconds") is not None:
        found["cpu"] = {"value": usage["cpu_seconds"], "unit": "cpu-seconds"}
    if usage.get("wall_seconds") is not None:
        found["duration"] = {"value": usage["wall_seconds"], "unit": "seconds"}
    if usage.get("peak_memory") is not None:
        found["memory"] = {"value": usage["peak_memory"], "unit": "bytes"}
    return found


def _stamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def job_limits(options: Any) -> dict[str, Any]:
    """A job's options as the built-in's ``limits``: ``memory`` and ``disk`` (sizes such as
    ``"1GiB"``, or bytes) and ``timeout`` (seconds, or ``"30s"``, ``"10m"``, ``"1h"``).

    Raises
    ------
    OpenEOError
        An option not known, or a value not a size or duration (400).
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise _bad_option('job_options must be an object, e.g. {"memory": "1GiB", "timeout": 600}')
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise _bad_option(f"job_options: {unknown[0]!r} is not an option here; the options "
                          f"are {', '.join(OPTIONS)} (each only tightens a limit)")  # fmt: skip
    limits: dict[str, Any] = {}
    for name, least in (("memory", MIN_MEMORY), ("disk", MIN_DISK)):
        if name in options:
            try:
                limits[name] = parse_size(options[name], what=f"job_options {name}")
            except ConfigError as error:
                raise _bad_option(str(error)) from None
            if limits[name] < least:
                raise _bad_option(f"job_options {name}: at least {least // 1024**2} MiB")
    if "timeout" in options:
        limits["timeout"] = _seconds(options["timeout"])
    return limits


def _seconds(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    match = _TIMEOUT.match(str(value)) if isinstance(value, str) else None
    if match is None or float(match.group(1)) <= 0:
        raise _bad_option(f"job_options timeout: expected seconds or '30s', '10m', '1h'; "
                          f"got {value!r}")  # fmt: skip
    return float(match.group(1)) * {None: 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def _bad_option(message: str) -> OpenEOError:
    return OpenEOError(message, status=400, openeo_code="BadRequest")


def log_entries(text: str, *, failure: str | None) -> list[dict[str, Any]]:
    """The job's log as openEO's entries: each line the job's program logged (its level
    first), then the order's failure, if it failed (the sandbox's reason: a limit broken).

    Parameters
    ----------
    text
        The runs' logs (each under a ``== run N ==`` heading).
    failure
        Why the order failed (None: it did not).
    """
    entries: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("== run "):
            continue
        word, _, rest = line.partition(" ")
        level = LEVELS.get(word)
        if level is None and entries and line.startswith((" ", "\t")):
            entries[-1]["message"] += "\n" + line  # a traceback's or message's next line
            continue
        entries.append({"id": str(len(entries) + 1), "level": level or "info",
                        "message": rest if level else line})  # fmt: skip
    if failure:
        entries.append({"id": str(len(entries) + 1), "level": "error",
                        "message": f"the job failed: {failure}"})  # fmt: skip
    return entries


@dataclass(frozen=True)
class ResultFile:
    """One file a job made: its name, media type, size and where to download it."""

    name: str
    media_type: str
    size: int | None
    href: str


def results_item(job: BatchJob, files: Sequence[ResultFile], *, base: str,
                 start: datetime | None, end: datetime | None) -> dict[str, Any]:  # fmt: skip
    """``GET /jobs/{id}/results``: a STAC item whose assets are the job's files.

    Parameters
    ----------
    job
        The job.
    files
        Its result files, each with its signed download link.
    base
        The openEO face's root URL.
    start, end
        The period its inputs cover.
    """
    properties: dict[str, Any] = {"datetime": None, "title": job.title or f"Results of {job.id}"}
    if start is not None and end is not None:
        properties |= {"start_datetime": _stamp(start), "end_datetime": _stamp(end)}
    return {
        "type": "Feature",
        "stac_version": STAC_VERSION,
        "id": job.id,
        "geometry": None,
        "properties": properties,
        "assets": {
            file.name: {"href": file.href, "type": file.media_type, "roles": ["data"],
                        "title": file.name, **({"file:size": file.size} if file.size else {})}
            for file in files
        },
        "links": [
            {"rel": "self", "type": "application/json", "href": f"{base}/jobs/{job.id}/results"},
            {"rel": "canonical", "type": "application/json", "href": f"{base}/jobs/{job.id}"},
        ],
    }  # fmt: skip


class ResultLinks:
    """Signed links to a job's result files: they work without a token (a notebook, a
    browser, a colleague) until they expire, for that job's that file only."""

    def __init__(self, key: bytes) -> None:
        self.key = key

    def query(self, job_id: str, name: str, *, now: float) -> str:
        """The query string signing ``name`` of ``job_id`` until a week from ``now``."""
        expires = int(now) + LINK_SECONDS
        return f"expires={expires}&signature={self._mac(job_id, name, expires)}"

    def check(self, job_id: str, name: str, *, expires: str, signature: str, now: float) -> None:
        """Refuse a link this service did not sign for this file, or one expired.

        Raises
        ------
        OpenEOError
            ``ResultLinkExpired`` (410), or ``NotFound`` (404) for a signature not ours.
        """
        if not expires.isdigit() or not hmac.compare_digest(
            signature.encode(), self._mac(job_id, name, int(expires)).encode()
        ):
            raise OpenEOError(f"no result {name!r} of job {job_id!r} at this link; GET "
                              f"/jobs/{job_id}/results gives the job's links",
                              status=404, openeo_code="NotFound")  # fmt: skip
        if int(expires) < now:
            raise OpenEOError(f"this link to job {job_id}'s result {name} has expired; GET "
                              f"/jobs/{job_id}/results gives fresh ones", status=410,
                              openeo_code="ResultLinkExpired")  # fmt: skip

    def _mac(self, job_id: str, name: str, expires: int) -> str:
        message = f"{job_id}\0{name}\0{expires}".encode()
        digest = hmac.new(self.key, message, hashlib.sha256).digest()[:MAC_BYTES]
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")
