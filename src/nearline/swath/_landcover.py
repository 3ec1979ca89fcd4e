"""The synthetic Earth's vegetation: a land cover from climate-like rules, its NDVI by season.

No data beyond the land/sea mask is at hand, so the land cover is made from what the mask
says about a place and from its latitude, on a global grid of :data:`ROWS` rows (0.25
degrees):

- **moisture**: a zonal climate (wet tropics, dry subtropical highs near 25 degrees, wet
  storm tracks near 55), raised where the wind arrives from the sea (trades from the east
  below 30 degrees and poleward of 65, westerlies between) and where the sea is near all
  round, most of all in the subtropics, so the west coasts and interiors of the subtropical
  continents are deserts; a monsoon on subtropical coasts with an ocean (not a gulf) to the
  east; less evaporation where it is cold; plus a random field of 200-1,500 km;
- **use**: a random field of 50-800 km that makes a mosaic of cropland (bare in the off
  season) and forest where the climate is temperate and moist enough for both.

Peak-season NDVI rises with moisture (0.06 in the driest deserts, 0.86 in rain forest),
less in the high Arctic, and falls toward a dormant floor outside the growing season, which
is local summer poleward of the tropics and the wet season (late summer) within them; rain
forest stays green all year, and evergreen forest keeps part of its green in winter. The
ice sheets of Antarctica and Greenland have 0.03 (bare ice; ``--snow`` draws them white).
Left out: terrain, the South Asian monsoon (India comes out semi-arid), the Gulf of
Mexico's moisture over the Great Plains.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from nearline.swath._fields import EARTH_RADIUS_KM, SphereNoise, raster_lonlat, sample
from nearline.swath._maps import is_land

ROWS = 720  # 0.25 degrees
DRIEST, WETTEST = 0.06, 0.86  # NDVI at peak season
ICE_NDVI = 0.03
ICE_SHEETS_GREENLAND = (60.0, 84.0, -75.0, -10.0)  # lat, lat, lon, lon
UPWIND_KM = 1500.0  # how far the wind carries moisture from the sea
NEAR_KM = 800.0  # how far the sea is felt all around
MONSOON_KM = 3000.0  # how far east an ocean brings the subtropical east coasts rain


def _smoothstep(x, low, high):
    t = np.clip((x - low) / (high - low), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def ice_sheets(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Where the Antarctic and Greenland ice sheets are (on land)."""
    south, north, west, east = ICE_SHEETS_GREENLAND
    return (lat < -60.0) | ((lat > south) & (lat < north) & (lon > west) & (lon < east))


@dataclass(frozen=True, eq=False)
class LandCover:
    """The land cover's fields on the global grid (each (ROWS, 2 ROWS) float32)."""

    peak: np.ndarray  # NDVI at the height of the growing season
    evergreen: np.ndarray  # 0-1: the part of the green kept all year
    floor: np.ndarray  # 0-1: the dormant season's NDVI as a share of the peak
    tropical: np.ndarray  # 0-1: how far the season is the wet season (1) or summer (0)

    @classmethod
    def make(cls, land: np.ndarray, seed: int) -> LandCover:
        """The land cover over ``land`` (the packed GLOBE bits), drawn by ``seed``."""
        lon, lat = raster_lonlat(ROWS)
        polar = np.abs(lat)
        wet = _moisture(_land_fraction(land, lon, lat), lat)
        wet += 0.1 * SphereNoise.make((seed, 11), largest_km=1500.0, octaves=4)(lon, lat)
        wet /= 1.0 - 0.6 * _smoothstep(polar, 35.0, 65.0)  # less evaporates where cold
        use = SphereNoise.make((seed, 12), largest_km=800.0, octaves=5, gain=0.6)(lon, lat)
        potential = _smoothstep(wet, 0.22, 0.9) * (1 - 0.9 * _smoothstep(polar, 60.0, 82.0))
        peak = DRIEST + (WETTEST - DRIEST) * potential * (0.92 + 0.08 * np.tanh(use))
        # cropland where temperate and moist enough, by the use field; forest elsewhere
        temperate = _smoothstep(polar, 28.0, 36.0) * (1 - _smoothstep(polar, 52.0, 58.0))
        crops = temperate * _smoothstep(wet, 0.45, 0.65) * _smoothstep(use, 0.1, 0.5)
        peak = np.maximum(peak, DRIEST + (0.78 - DRIEST) * crops)
        rain_forest = _smoothstep(wet, 0.7, 0.95) * (1 - _smoothstep(polar, 15.0, 25.0))
        forest = _smoothstep(wet, 0.55, 0.8) * (1 - crops)
        conifers = 0.4 * forest * _smoothstep(polar, 45.0, 55.0)
        evergreen = np.maximum(np.maximum(rain_forest, conifers), 0.3 * forest)
        floor = np.clip(0.25 - 0.15 * crops + 0.65 * (1 - potential), 0.0, 1.0)
        ice = ice_sheets(lon, lat)
        peak = np.where(ice, ICE_NDVI, peak)
        evergreen = np.where(ice, 1.0, evergreen)
        tropical = 1 - _smoothstep(polar, 18.0, 30.0)
        fields = (peak, evergreen, floor, tropical)
        return cls(*(np.asarray(a, np.float32) for a in fields))

    def ndvi_map(self, day_of_year: int) -> np.ndarray:
        """NDVI of clear land on the global grid on ``day_of_year``."""
        _, lat = raster_lonlat(ROWS)
        season = growing_season(lat, day_of_year, self.tropical)
        dormant = self.floor + (1 - self.floor) * season
        return (self.peak * (self.evergreen + (1 - self.evergreen) * dormant)).astype(np.float32)

    def ndvi(self, lon: np.ndarray, lat: np.ndarray, day_of_year: int) -> np.ndarray:
        """NDVI of clear land at each point on ``day_of_year``."""
        return sample(self.ndvi_map(day_of_year), lon, lat)


def growing_season(lat: np.ndarray, day_of_year: int, tropical: np.ndarray) -> np.ndarray:
    """0-1: how far into its growing season each place is (a green season of about five
    months). Poleward of the tropics it peaks in mid-July in the north and mid-January in
    the south; in the tropics with the wet season, in late August and late February, and
    the season fades out toward the equator, where it is always green."""
    north = np.cos(2 * np.pi * (day_of_year - 196) / 365.25)
    wet = np.cos(2 * np.pi * (day_of_year - 236) / 365.25)
    phase = tropical * wet + (1 - tropical) * north
    phase = np.where(lat >= 0, phase, -phase)
    strength = 1 - tropical * (1 - np.tanh(np.abs(lat) / 10.0))
    return 1 - strength * (1 - ((1 + phase) / 2) ** 2)


def _land_fraction(land: np.ndarray, lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Share of land in each cell, from four GLOBE samples."""
    step = 90.0 / ROWS
    total = np.zeros(lon.shape, np.float32)
    for dx in (-step, step):
        for dy in (-step, step):
            total += is_land(land, lon + dx, lat + dy)
    return total / 4.0


def _moisture(land: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Annual moisture (about 0-1.3): the zonal climate, drier away from the sea (most so in
    the subtropics), and wet subtropical east coasts, where the trades come off the sea."""
    polar = np.abs(lat)
    zonal = (
        0.4
        + 0.9 * np.exp(-((lat / 18.0) ** 2))
        + 0.45 * np.exp(-(((polar - 50.0) / 17.0) ** 2))
        - 0.15 * np.exp(-(((polar - 25.0) / 7.0) ** 2))
    )
    westerly = _smoothstep(polar, 25.0, 35.0) * (1 - _smoothstep(polar, 60.0, 70.0))
    sea = 1.0 - land
    upwind = westerly * _upwind(sea, lat, +1, UPWIND_KM)
    upwind += (1 - westerly) * _upwind(sea, lat, -1, UPWIND_KM)
    maritime = 0.5 * upwind + 0.5 * _around(sea, lat, NEAR_KM)
    subtropics, tropics = np.exp(-(((polar - 26.0) / 7.0) ** 2)), np.exp(-((lat / 12.0) ** 2))
    reliance = 0.6 + 0.3 * subtropics - 0.35 * tropics  # how much the sea's nearness matters
    ocean_east = _upwind(sea, lat, -1, MONSOON_KM)  # an ocean, not a gulf, to the east
    monsoon = 0.6 * _smoothstep(ocean_east, 0.5, 0.9) * np.exp(-(((polar - 25.0) / 9.0) ** 2))
    return zonal * (1.0 - reliance * (1.0 - maritime)) + monsoon


def _cell_km(lat: np.ndarray) -> np.ndarray:
    """East-west size of a grid cell at each row's latitude (km)."""
    degrees = 180.0 / ROWS
    return np.maximum(np.cos(np.radians(lat[:, 0])), 0.01) * EARTH_RADIUS_KM * np.radians(degrees)


def _upwind(sea: np.ndarray, lat: np.ndarray, direction: int, km: float) -> np.ndarray:
    """The share of sea upwind of each cell, weighted by exp(-distance / ``km``), with the
    wind blowing east (``direction`` 1) or west (-1)."""
    keep = np.exp(-_cell_km(lat) / km)
    return _exponential_rows(np.ascontiguousarray(sea[:, ::direction], np.float64), keep)[
        :, ::direction
    ]


@numba.njit(cache=True, nogil=True)
def _exponential_rows(values, keep):
    """Per row, the exponentially weighted mean of the values before each (around the globe:
    two laps, so the first cells see the row's end)."""
    rows, columns = values.shape
    out = np.empty_like(values)
    for i in range(rows):
        mean = values[i].mean()
        for lap in range(2):
            for j in range(columns):
                mean = keep[i] * mean + (1.0 - keep[i]) * values[i, j]
                if lap == 1:
                    out[i, j] = mean
    return out


def _around(values: np.ndarray, lat: np.ndarray, km: float) -> np.ndarray:
    """The mean of the values within about ``km`` of each cell (two box passes each way:
    along the parallels around the globe, along the meridians held at the poles)."""
    out = np.asarray(values, np.float64)
    reach = np.minimum(km / _cell_km(lat), out.shape[1] // 2 - 1).astype(int)
    north_south = int(km / _cell_km(np.zeros((1, 1)))[0])
    for _ in range(2):
        out = np.stack([_box(row, w, wrap=True) for row, w in zip(out, reach, strict=True)])
        out = np.stack([_box(column, north_south, wrap=False) for column in out.T]).T
    return out


def _box(values: np.ndarray, reach: int, *, wrap: bool) -> np.ndarray:
    """The running mean over ``2 reach + 1`` values, around (``wrap``) or held at the ends."""
    if wrap:
        padded = np.concatenate([values[values.size - reach :], values, values[:reach]])
    else:
        padded = np.concatenate([np.full(reach, values[0]), values, np.full(reach, values[-1])])
    sums = np.concatenate([[0.0], np.cumsum(padded)])
    return (sums[2 * reach + 1 :] - sums[: sums.size - 2 * reach - 1]) / (2 * reach + 1)
