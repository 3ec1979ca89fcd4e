"""pygac's own calibrated channels and geolocation of a GAC Level 1b file beside nearline's of
the same file, for the tests that hold them together: a KLM file nearline wrote
(tests/swath/test_gac_pygac.py) and the real TIROS-N POD file (tests/realdata/test_gac_pod.py).

pygac's ``get_calibrated_channels`` gives channels 1 and 2 (and 3a) as scaled radiance times
its Earth-Sun distance factor, ``1 - 0.0334 cos(2 pi (day - 2) / 365.25)`` of the first
line's day; nearline's ``calibrate`` gives the scaled radiance and applies that factor when it
makes reflectances (``composite._observe``). :func:`nearline_channels` applies it so that the
two compare like with like.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from nearline.composite._calibration import calibrate, channel3a, line_calibration
from nearline.swath import lonlat, open_granule, sun_distance_squared

NEARLINE_ORDER = ("1", "2", "3b", "4", "5")  # a SwathBlock's channels; POD's too
# What pygac 1.8 says while calibrating, none of it about the values compared:
PYGAC_NOTICES = (
    # it applies the Earth-Sun factor to channels 1 and 2 through an argument it deprecates
    ("Using the 'corr' argument is depricated", DeprecationWarning),
    # its calibration.json is PATMOS-x v2023, which it calls provisional (once a process)
    ("Using CoeffStatus.PROVISIONAL calibration coefficients", RuntimeWarning),
    # the real POD file holds 16 of the 12,660 lines its header promises
    ("Unexpected number of scanlines", RuntimeWarning),
    # channel 3b's Planck inversion of counts that lie beyond the space view (NaN there)
    ("invalid value encountered in log", RuntimeWarning),
    # geotiepoints' latitude from x and y, past 1 by rounding near the equator, where it
    # takes the latitude from z instead
    ("invalid value encountered in arcsin", RuntimeWarning),
)


Channels = dict[str, np.ndarray]  # by name: "1", "2", "3a", "3b", "4", "5"; (lines, 409)


def pygac_reference(path: Path, tle_folder: Path) -> tuple[Channels, np.ndarray, np.ndarray]:
    """pygac's calibrated channels by name (POD's channel 3 is 3b; KLM's 3a and 3b are NaN
    on the lines that do not carry them), and its longitudes and latitudes of every pixel
    (``interpolate_coords=True``). pygac wants the spacecraft's element set for the
    calibrated channels, though it only files it among the result's attributes:
    ``TLE_<satname>.txt`` in ``tle_folder``, of any date (nearline's synthetic MetOp-A flies
    an element set of 2011)."""
    from pygac.gac_klm import GACKLMReader
    from pygac.gac_pod import GACPODReader

    reader_class = GACKLMReader if GACKLMReader.can_read(str(path)) else GACPODReader
    reader = reader_class(
        interpolate_coords=True,
        tle_dir=str(tle_folder),
        tle_name="TLE_%(satname)s.txt",
        tle_thresh=100_000,  # days
    )
    with warnings.catch_warnings():
        for message, category in PYGAC_NOTICES:
            warnings.filterwarnings("ignore", message, category)
        reader.read(str(path))
        channels = np.asarray(reader.get_calibrated_channels())
        lon, lat = reader.get_lonlat()
    names = ("1", "2", "3a", "3b", "4", "5") if channels.shape[2] == 6 else NEARLINE_ORDER
    named = {name: channels[:, :, k] for k, name in enumerate(names)}
    return named, np.asarray(lon), np.asarray(lat)


def pygac_interpolated(
    tie_lon: np.ndarray, tie_lat: np.ndarray, columns: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """pygac's own interpolation (geotiepoints, cubic across the track) of tie points at
    ``columns`` to all 409 pixels of each line."""
    from pygac.gac_klm import GACKLMReader

    with warnings.catch_warnings():
        for message, category in PYGAC_NOTICES:
            warnings.filterwarnings("ignore", message, category)
        return GACKLMReader().lonlat_interpolator(
            np.asarray(tie_lon, float), np.asarray(tie_lat, float),
            cols_subset=columns, cols_full=np.arange(409),
        )  # fmt: skip


def nearline_channels(path: Path) -> tuple[Channels, np.ndarray, np.ndarray]:
    """nearline's calibration of the whole granule by name: channels 1, 2 and 3a (NaN on
    lines without it) in percent times pygac's Earth-Sun factor, 3b, 4 and 5 in K; and its
    longitudes and latitudes of every pixel (``lonlat`` of the file's tie points)."""
    with open_granule(path) as granule:
        block = granule.read(0, granule.n_lines)
        calibration = line_calibration(granule.read_telemetry(), granule.platform)
    channels = calibrate(block.counts, calibration)
    near_infrared = channel3a(block.counts, calibration, channels)
    first = block.times[0].astype("datetime64[D]")
    day = int((first - first.astype("datetime64[Y]")).astype(int)) + 1
    earth_sun = np.float32(sun_distance_squared(day))
    named = dict(zip(NEARLINE_ORDER, channels, strict=True))
    for name, values in (("1", channels[0]), ("2", channels[1]), ("3a", near_infrared)):
        named[name] = values * earth_sun
    lon, lat = lonlat(block)
    return named, lon, lat


def ground_km(lon1: np.ndarray, lat1: np.ndarray, lon2: np.ndarray, lat2: np.ndarray) -> np.ndarray:
    """Great-circle distance (km, on a 6371 km sphere) between points."""
    phi1, phi2 = np.radians(lat1), np.radians(lat2)
    half = (
        np.sin((phi2 - phi1) / 2) ** 2
        + np.cos(phi1) * np.cos(phi2) * np.sin(np.radians(np.asarray(lon2) - lon1) / 2) ** 2
    )
    return 2 * 6371.0 * np.arcsin(np.sqrt(half))


def differences(ours: np.ndarray, theirs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|ours - theirs| where both are valid, and where exactly one of them is."""
    both = np.isfinite(ours) & np.isfinite(theirs)
    return np.abs(ours - theirs)[both], np.isfinite(ours) != np.isfinite(theirs)
