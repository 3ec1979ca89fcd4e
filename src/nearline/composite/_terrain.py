"""Topographic (parallax) correction of the geolocation.

Geolocation puts each pixel where its line of sight meets the ellipsoid. Terrain at height
``h`` meets the line of sight earlier: seen at satellite zenith angle ``theta`` it lies
``h * tan(theta)`` closer to the sub-satellite track than the ellipsoid point (about 2.5 km
for 1,000 m at the 68 degrees of a GAC scan edge, a third of an 8 km cell). The correction
moves the pixel that distance toward the line's nadir pixel. Heights come from pvlib's
5-arc-minute altitude map; sea and unknown cells are at 0 m and do not move.
"""

from __future__ import annotations

import math

import numba

NADIR_COLUMN = 204
METRES_PER_DEGREE = 111_195.0  # on a sphere of radius 6,371 km


@numba.njit(cache=True, nogil=True)
def shift_toward_nadir(
    lon: float, lat: float, nadir_lon: float, nadir_lat: float, height: float,
    sat_zenith: float,
) -> tuple[float, float]:  # fmt: skip
    """(lon, lat) of an elevated pixel moved ``height * tan(sat_zenith)`` toward nadir."""
    if height <= 0.0 or sat_zenith <= 0.0:
        return lon, lat
    dlon = nadir_lon - lon
    if dlon > 180.0:
        dlon -= 360.0
    elif dlon < -180.0:
        dlon += 360.0
    dlat = nadir_lat - lat
    east = dlon * math.cos(math.radians(lat)) * METRES_PER_DEGREE
    north = dlat * METRES_PER_DEGREE
    distance = math.sqrt(east * east + north * north)
    if distance == 0.0:
        return lon, lat
    fraction = min(height * math.tan(math.radians(sat_zenith)) / distance, 1.0)
    moved = lon + fraction * dlon
    if moved > 180.0:
        moved -= 360.0
    elif moved < -180.0:
        moved += 360.0
    return moved, lat + fraction * dlat
