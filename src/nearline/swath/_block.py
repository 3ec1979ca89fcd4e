"""A block of AVHRR GAC scan lines as read from a granule, and a granule's calibration
telemetry: the nouns every other swath module shares, so they import this and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

N_PIXELS = 409
TIE_COLUMNS = np.arange(4, N_PIXELS, 8)  # 51 tie points, 0-based
CHANNELS = ("1", "2", "3b", "4", "5")

_PER_LINE = (
    "times", "tie_lat", "tie_lon", "tie_sat_zenith", "tie_sun_zenith", "tie_rel_azimuth",
    "prt_counts", "ict_counts", "space_counts",
)  # fmt: skip


@dataclass
class SwathBlock:
    """Scan lines ``[first_line, first_line + n)`` of one granule, as read.

    ``counts`` are raw 10-bit counts, channel-major (5, n, 409) so each channel is one
    contiguous piece; the third is channel 3b or 3a, whichever the line carries
    (:attr:`Telemetry.ch3_select`). Tie-point arrays are (n, 51) float32 degrees.
    Telemetry, per line as pygac's readers give it: ``prt_counts`` (n,) (0 every fifth
    line), ``ict_counts`` and ``space_counts`` (n, 3) for channels 3b, 4, 5.
    """

    granule: str
    platform: str
    first_line: int
    times: np.ndarray
    counts: np.ndarray
    tie_lat: np.ndarray
    tie_lon: np.ndarray
    tie_sat_zenith: np.ndarray
    tie_sun_zenith: np.ndarray
    tie_rel_azimuth: np.ndarray
    prt_counts: np.ndarray
    ict_counts: np.ndarray
    space_counts: np.ndarray

    @property
    def n_lines(self) -> int:
        return int(self.times.shape[0])

    def slice(self, start: int, stop: int) -> SwathBlock:
        """Lines ``[start, stop)`` of this block (relative), as views."""
        parts = {name: getattr(self, name)[start:stop] for name in _PER_LINE}
        return replace(
            self, first_line=self.first_line + start, counts=self.counts[:, start:stop], **parts
        )

    def nbytes(self) -> int:
        return sum(
            getattr(self, f.name).nbytes
            for f in fields(self)
            if isinstance(getattr(self, f.name), np.ndarray)
        )


CH3B, CH3A, CH3_TRANSITION = 0, 1, 2  # what a line's channel-3 slot holds (pygac's codes)
REFLECTANCE, BRIGHTNESS_TEMPERATURE = "reflectance", "brightness_temperature"


@dataclass(frozen=True)
class ChannelPacking:
    """How a Level 1C product stores one channel's calibrated values as integers (CF
    packing): ``value = stored * scale + offset``, no value where ``stored == fill``.
    ``quantity``: :data:`REFLECTANCE` (percent) or :data:`BRIGHTNESS_TEMPERATURE` (K)."""

    quantity: str
    scale: float
    offset: float
    fill: int | None


@dataclass(frozen=True)
class StoredScaling:
    """A granule whose ``counts`` hold values its producer calibrated (the AVHRR GAC FDR,
    Level 1C), as the stored integers' bit patterns (int16 read as uint16 when ``signed``),
    not raw counts: the compositor decodes them instead of calibrating.

    ``channels``: the packing of slots 1, 2, 3 (3b), 4 and 5, None for a channel the
    instrument lacks (AVHRR/1 on TIROS-N and NOAA-6, 8, 10 has no channel 5): its values
    are NaN. ``ch3a``: the packing of slot 3 on the lines whose
    :attr:`Telemetry.ch3_select` says 3a. ``distance_corrected``: the reflectances are
    already normalised to the mean Earth-Sun distance (pygac multiplies them by its
    ``sun_earth_distance_correction_factor``), so only the solar zenith remains to divide by.
    """

    channels: tuple[ChannelPacking | None, ...]
    ch3a: ChannelPacking | None = None
    signed: bool = True
    distance_corrected: bool = True


@dataclass(frozen=True)
class Telemetry:
    """What the calibration needs from a whole granule, line by line.

    ``ch3_select`` (n,) uint8: what each line's channel-3 slot carries, as the AVHRR/3 scan
    line header says (bits 0-1 of its status word; pygac's ``get_ch3_switch``):
    :data:`CH3B` (3.7 um), :data:`CH3A` (1.6 um) or :data:`CH3_TRANSITION` (neither).
    None: 3b on every line (AVHRR/1 and /2 have no 3a). ``scaling``: for a granule of
    calibrated values (Level 1C), how they are stored (the counts telemetry is then unused,
    zeros); None for raw counts.
    """

    times: np.ndarray  # datetime64[ms] (n,)
    prt_counts: np.ndarray  # (n,)
    ict_counts: np.ndarray  # (n, 3)
    space_counts: np.ndarray  # (n, 3)
    ch3_select: np.ndarray | None = None
    scaling: StoredScaling | None = None
