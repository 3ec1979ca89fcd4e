"""Every error nearline raises derives from :class:`NearlineError`.

Messages name the thing that went wrong (a file, a value) and what to do about it. Where a
builtin exception fits, the subclass inherits it too, so ``except ValueError`` keeps working.
"""

from __future__ import annotations


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


class SwathError(NearlineError):
    """Satellite swath input cannot be read or made."""


class GranuleError(SwathError, ValueError):
    """A granule file is truncated, corrupt or of a format no reader knows (names the file)."""


class GridError(NearlineError, ValueError):
    """A target grid name or its parameters are unknown or inconsistent."""


class CompositeError(NearlineError):
    """The compositing run failed; no output that looks complete is left behind."""
