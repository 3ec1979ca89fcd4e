"""The synthetic day's clouds: one weather for the whole day, so overlapping orbits see the
same clouds, moved on by the wind and slowly changed.

A cloud is where a smooth random field on the sphere (:class:`~._fields.SphereNoise`: seven
octaves, from 2,500 km down to 40 km, so cloud systems with ragged edges and small clouds
beside them) rises above a threshold that follows the climate by latitude: cloudy in the
intertropical convergence zone and the storm tracks, clear in the subtropical highs. The
field is carried by a zonal wind that varies with latitude (:func:`zonal_wind`: easterly
trades, westerlies of 20 m/s at 45 degrees), so a cloud seen by one orbit is seen by the next,
102 minutes later, about 100 km further east at mid-latitudes; meanwhile the field itself
changes shape, its small features over hours and its large ones over days.

A cloud's edge is soft: across it the part of the pixel under cloud (:attr:`CloudCover.
fraction`) goes from 0 to 1, and the cloud thickens from nothing, so the edges of every
cloud are broken and thin (semi-transparent cirrus, optical depth below 1), their cores
thick (up to :data:`CORE_OPTICAL_DEPTH`). Tops are 215-255 K, highest in the thickest cloud.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date

import numpy as np

from nearline.swath._fields import EARTH_RADIUS_KM, SphereNoise

REFERENCE_HOUR = 12.0  # the wind has carried the clouds from where they are at noon UTC
EDGE = 0.25  # field units (standard deviations) over which cover goes from 0 to 1
DEPTH = 0.9  # field units above the threshold at which the cloud is fully thick
CORE_OPTICAL_DEPTH = 40.0  # visible optical depth of the thickest cloud
WARMEST_TOP, COLDEST_TOP = 255.0, 215.0  # K


def zonal_wind(lat: np.ndarray) -> np.ndarray:
    """Eastward wind (m/s) carrying the clouds: trade winds of 6 m/s from the east at the
    equator, westerlies of 20 m/s at 45 degrees, calm at the poles."""
    lat = np.asarray(lat, np.float64)
    trades = -6.0 * np.exp(-((lat / 15.0) ** 2))
    westerlies = 20.0 * np.exp(-(((np.abs(lat) - 45.0) / 14.0) ** 2))
    return trades + westerlies


def drift_rate(lat: np.ndarray) -> np.ndarray:
    """Degrees of longitude a cloud drifts east per hour at ``lat``."""
    metres = 2 * math.pi * EARTH_RADIUS_KM * 1000.0 / 360.0
    coslat = np.maximum(np.cos(np.radians(lat)), 0.01)
    return zonal_wind(lat) * 3600.0 / (metres * coslat)


def threshold(lat: np.ndarray) -> np.ndarray:
    """The field's value above which there is cloud: lower (cloudier) in the convergence zone
    south of the equator in December and in the storm tracks near 55 degrees, higher
    (clearer) under the subtropical highs near 25 degrees."""
    lat = np.asarray(lat, np.float64)
    return (
        0.35
        + 0.45 * np.exp(-(((np.abs(lat) - 24.0) / 9.0) ** 2))
        - 0.35 * np.exp(-(((lat + 3.0) / 9.0) ** 2))
        - 0.35 * np.exp(-(((np.abs(lat) - 56.0) / 12.0) ** 2))
    )


@dataclass(frozen=True)
class CloudCover:
    """Clouds at some points (arrays of one shape)."""

    fraction: np.ndarray  # 0-1: the part of the pixel under cloud
    optical_depth: np.ndarray  # visible optical depth of that cloud; 0 where there is none
    top: np.ndarray  # K: cloud-top temperature
    margin: np.ndarray  # field units inside (> 0) or outside (< 0) the cloud's mid-edge


@dataclass(frozen=True, eq=False)
class Weather:
    """The clouds of one day, drawn by a seed."""

    body: SphereNoise  # where the clouds are
    height: SphereNoise  # how high their tops reach

    @classmethod
    def make(cls, seed: int, day: date) -> Weather:
        """Each (seed, day) has weather of its own."""
        key = (seed, day.toordinal())
        body = SphereNoise.make((*key, 1), largest_km=2500.0, octaves=7, gain=0.55,
                                lifetime_hours=72.0)  # fmt: skip
        height = SphereNoise.make((*key, 2), largest_km=2000.0, octaves=3, lifetime_hours=48.0)
        return cls(body, height)

    def fields(self, lon, lat, hours) -> tuple[np.ndarray, np.ndarray]:
        """The two smooth fields under the clouds at each point: the margin (see
        :class:`CloudCover`) and the tops' height (about -1 to 1). Smooth, so they may be
        interpolated between nearby points."""
        lon, lat = np.asarray(lon, np.float64), np.asarray(lat, np.float64)
        since = np.broadcast_to(np.asarray(hours, np.float64) - REFERENCE_HOUR, lon.shape)
        moved = lon - drift_rate(lat) * since  # where the wind brought it from
        margin = self.body(moved, lat, since) - threshold(lat)
        return margin.astype(np.float32), self.height(moved, lat, since)

    def clouds(self, lon, lat, hours, *, step: int = 1) -> CloudCover:
        """The clouds at each point at ``hours`` after the day's 00:00 UTC (broadcast).

        ``step`` > 1, for (lines, pixels) arrays: evaluate the fields on every ``step``-th
        line and pixel (and the last) and interpolate between them, ``step**2`` times
        cheaper; the fields' smallest cells are 40 km, a GAC pixel 4-15 km.
        """
        if step > 1 and np.ndim(lon) == 2:
            rows, columns = (_knots(size, step) for size in np.shape(lon))
            when = np.broadcast_to(hours, np.shape(lon))
            pick = np.ix_(rows, columns)
            knots = self.fields(np.asarray(lon)[pick], np.asarray(lat)[pick], when[pick])
            margin, height = (_upsample(k, rows, columns) for k in knots)
        else:
            margin, height = self.fields(lon, lat, hours)
        return cover(margin, height)


def cover(margin: np.ndarray, height: np.ndarray) -> CloudCover:
    """Cloud fraction, optical depth and top temperature from the two fields."""
    fraction = np.clip(0.5 + margin / EDGE, 0.0, 1.0)
    inside = np.clip(margin / DEPTH, 0.0, 1.0)
    optical_depth = np.where(fraction > 0, CORE_OPTICAL_DEPTH * inside**2, 0.0)
    lift = np.clip(0.5 + 0.3 * height + 0.3 * inside, 0.0, 1.0)
    top = WARMEST_TOP - (WARMEST_TOP - COLDEST_TOP) * lift
    return CloudCover(
        fraction.astype(np.float32),
        optical_depth.astype(np.float32),
        top.astype(np.float32),
        margin.astype(np.float32),
    )


def _knots(size: int, step: int) -> np.ndarray:
    knots = np.arange(0, size, step)
    return knots if knots[-1] == size - 1 else np.append(knots, size - 1)


def _upsample(values: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Values on the knots (rows x columns) interpolated linearly to every line and pixel."""
    out = values
    for axis, knots in ((0, rows), (1, columns)):
        every = np.arange(knots[-1] + 1)
        after = np.clip(np.searchsorted(knots, every, side="right"), 1, knots.size - 1)
        weight = (every - knots[after - 1]) / (knots[after] - knots[after - 1])
        shape = [1, 1]
        shape[axis] = every.size
        weight = weight.reshape(shape).astype(np.float32)
        low, high = np.take(out, after - 1, axis=axis), np.take(out, after, axis=axis)
        out = low + weight * (high - low)
    return out.astype(np.float32)
