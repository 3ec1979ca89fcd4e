"""Every error nearline raises derives from :class:`NearlineError`.

Messages name the thing that went wrong (a file, a value) and what to do about it. Where a
builtin exception fits, the subclass inherits it too, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

from typing import Any


class NearlineError(Exception):
    """Base of every nearline error."""


class ConfigError(NearlineError, ValueError):
    """A setting (an argument or a ``NEARLINE_*`` variable) has a value nearline cannot use."""


class BurstError(NearlineError):
    """The write side failed: a sink raised, an I/O server died, or assembly found a fault.

    Raised on the compute side at the next call after the I/O server noticed the fault.
    """


class BurstInputError(BurstError, ValueError):
    """A ``write`` call was given something burst cannot store (dtype, block bounds, name)."""


class LayoutError(NearlineError, ValueError):
    """A path does not follow nearline's output layout."""


class MigrationError(LayoutError):
    """A closed set could not be migrated to the archive tier; its source files are kept."""


class ArchiveError(MigrationError):
    """The archive tier failed (full, unreachable) or holds a bundle its manifest disowns."""


class RestoreError(ArchiveError):
    """A restore brought every good set back but not these: ``failed`` holds each bad set's
    manifest and error, ``restored`` the manifests of the sets that did come back
    (:class:`nearline.layout._manifest.Manifest`; not imported here: errors import nothing)."""

    def __init__(
        self,
        message: str,
        *,
        restored: list[Any],
        failed: list[tuple[Any, ArchiveError]],
    ) -> None:
        super().__init__(message)
        self.restored = restored
        self.failed = failed


class ObjectStoreError(ArchiveError):
    """An object store refused a request: wrong credentials, a missing bucket, no permission
    to write. The message names the endpoint, the bucket and the fix, never the credentials."""


class ObjectStoreUnreachable(ObjectStoreError):
    """An object store did not answer, through every retry: the message names the endpoint
    and what was in flight. Nothing published is lost; run the command again once it is back."""


class SwathError(NearlineError):
    """Satellite swath input cannot be read or made."""


class GranuleError(SwathError, ValueError):
    """A granule file is truncated, corrupt or of a format no reader knows (names the file)."""


class NotThisFormat(GranuleError):
    """A reader's quick sniff took a file that its header then showed to be of another format
    (an HDF5 file that is not nearline's own, say): another reader may still know it."""


class GridError(NearlineError, ValueError):
    """A target grid name or its parameters are unknown or inconsistent."""


class CompositeError(NearlineError):
    """The compositing run failed; no output that looks complete is left behind."""


class MonitorError(NearlineError):
    """The machine's sampling cannot start or go on, or a run folder holds no samples to
    plot (names the folder and how to record one)."""


class CapabilityMissing(NearlineError):
    """Something nearline needs from the machine (a Debian package, root, a working browser)
    does not work here: the message says what failed; ``remedy``, when given, is what fixes it
    if installing the capability's packages would not (such as running as root)."""

    def __init__(self, message: str, *, remedy: str | None = None) -> None:
        super().__init__(message)
        self.remedy = remedy


# -- the service ---------------------------------------------------------------------------
class ServiceError(NearlineError):
    """An error a service user may see: an HTTP status, an OGC exception type and a message
    that is safe to show (it names the user's own input, never a server path)."""

    status = 500
    code = "http://www.opengis.net/def/exceptions/ogcapi-processes-1/1.0/server-error"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidRequest(ServiceError, ValueError):
    """The request itself is wrong (a bad bbox, datetime, body or parameter): 400."""

    status = 400
    code = "http://www.opengis.net/def/exceptions/ogcapi-processes-1/1.0/invalid-parameter-value"


class NotFound(ServiceError, LookupError):
    """No such thing, or not the caller's to see: 404 either way, so a 404 never confirms
    that another user's job, algorithm or result exists."""

    status = 404
    code = "http://www.opengis.net/def/exceptions/ogcapi-processes-1/1.0/no-such-process"


class Unauthorized(ServiceError):
    """No bearer token, or one that is unknown or revoked: 401."""

    status = 401
    code = "unauthorized"


class Forbidden(ServiceError):
    """Signed in, but the operator's policy (or the caller's role) does not allow this: 403."""

    status = 403
    code = "forbidden"


class Conflict(ServiceError):
    """The request clashes with the service's state (an id already taken): 409."""

    status = 409
    code = "conflict"


class DuplicatedProcess(Conflict):
    """A deploy of a process id that is taken already: 409, with OGC API - Processes Part 2's
    type, so a client knows to replace (PUT) its own process or choose another id."""

    code = "http://www.opengis.net/def/exceptions/ogcapi-processes-2/1.0/duplicated-process"


class UnsupportedMediaType(ServiceError):
    """A deploy or replace whose body is not a package nearline runs: 415, with Part 2's type."""

    status = 415
    code = "http://www.opengis.net/def/exceptions/ogcapi-processes-2/1.0/unsupported-media-type"


class TooLarge(ServiceError):
    """An upload over the service's size limit: 413."""

    status = 413
    code = "payload-too-large"


class CoverageError(InvalidRequest):
    """A coverage or EDR query the data cannot answer as asked (a box off the grid or
    reversed, a band it does not hold, a time outside its extent, a scale of 0): names the
    parameter, what it holds and what would do."""


class CoverageTooLarge(TooLarge):
    """A coverage or EDR query over the operator's limit: 413, naming the limit, its setting
    and how to ask for less."""


class SubsetError(InvalidRequest):
    """A swath subset cannot be made as asked (an unknown variable, a reversed box or window,
    a format without scan lines): names the part and what would do. A 400 through the service."""


class SubsetEmpty(SubsetError):
    """No scan line of the granule lies in the subset's box and time window: nothing is
    written (never an empty file that looks complete)."""


class SearchError(InvalidRequest):
    """A catalogue search parameter cannot be used (names the parameter and what it wants)."""


class CollectionNotFound(NotFound):
    """No collection of that id (or not one the caller may see)."""

    code = "not-found"


class ItemNotFound(NotFound):
    """No item of that id in that collection (or not one the caller may see)."""

    code = "not-found"


class OutputsLost(NearlineError):
    """A run's outputs went with the server that ran it, before they reached the archive's
    bucket: the run is queued to run again."""


class IngestError(NearlineError, ValueError):
    """A file cannot be catalogued (no reader knows it, or it is unreadable); names the file."""


class ManifestError(InvalidRequest):
    """``algorithm.yaml`` is missing or wrong; ``field`` names the offending entry."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(f"algorithm.yaml: {field}: {message}" if field else message)
        self.field = field


class PackageError(InvalidRequest):
    """An uploaded algorithm package is unusable (not a zip, unsafe paths, too large)."""


class DeployError(InvalidRequest):
    """The package is well formed but its build, requirements or declared tests failed; the
    message carries the tail of the log. The version is not promoted."""


class AlgorithmNotFound(NotFound):
    """No deployed algorithm (process) of that id the caller may see."""


class ImmutableProcess(ServiceError):
    """A process the caller may see but not change (another user's public algorithm, or a
    built-in): 403, as OGC API - Processes Part 2 answers a replace or undeploy of it."""

    status = 403
    code = "http://www.opengis.net/def/exceptions/ogcapi-processes-2/1.0/immutable-process"


class SandboxError(NearlineError):
    """A run could not be started in its sandbox (not: the run failed; that is an outcome)."""


class DiskQuotaExceeded(NearlineError):
    """A run's outputs would take their owner past their disk quota: they are not kept."""


class SubscriptionNotFound(NotFound):
    """No subscription of that id the caller may see (another user's is a 404 too)."""

    code = "not-found"


class JobNotFound(NotFound):
    """No job of that id the caller may see."""

    code = "http://www.opengis.net/def/exceptions/ogcapi-processes-1/1.0/no-such-job"


class OrderError(InvalidRequest):
    """An order (an execute request) cannot be run: unknown input, bad parameters, no data."""


class ResultsNotReady(NotFound):
    """A job's results were asked for before it succeeded (OGC: 404, result-not-ready)."""

    code = "http://www.opengis.net/def/exceptions/ogcapi-processes-1/1.0/result-not-ready"


class OpenEOError(ServiceError):
    """A refusal of the openEO face that names one of openEO's own error codes (its
    errors.json: ``TokenInvalid``, ``CollectionNotFound``, ...), with the status that code
    carries."""

    code = "openeo"

    def __init__(self, message: str, *, status: int, openeo_code: str) -> None:
        super().__init__(message, status=status)
        self.openeo_code = openeo_code
