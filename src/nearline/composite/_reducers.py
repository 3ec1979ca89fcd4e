"""The reducers: maximum-NDVI compositing (the Pathfinder rule), maximum channel-4
temperature, and mean, min, max, count.

Maximum NDVI keeps, per cell, the clear daytime observation with the highest NDVI (if the
cell saw no clear one, the highest-NDVI cloudy one, its cloud bits telling so); all 12 output
bands come from that one observation. The order of preference is a 64-bit key: clear first,
then NDVI in steps of 0.02, then nearness to nadir (between near-equal NDVIs the smaller scan
angle wins, a rule of the kind of MODIS' constrained-view compositing; see
docs/composite.md), then the observation's time and column, so no two observations tie and
the result never depends on the order they arrive in. A pixel may reach several cells (its
footprint's): ``update`` takes (cell, pixel) pairs.

Maximum channel-4 temperature (``max-bt4``) is the same rule ranked by the 10.8 um
brightness temperature, in steps of 1.5 K, over every observation by day or night: clouds
are colder than the surface under them, so the warmest clear observation is the least
cloud-contaminated (the maximum-T4 criterion Cihlar et al. 1994 compared with maximum NDVI
for AVHRR composites). It composites night passes, which hold no NDVI.

Mean, min and max reduce NDVI, both reflectances and the three temperatures over the clear
daytime observations of a cell (sums in integers of the packed units, so exact), with the
number of those observations; count gives that number alone.

Merging (partial results, daily files into 10-day and monthly composites) keeps the
higher key per cell for max-ndvi, adds sums and counts for mean and count, and keeps the
smaller / larger value for min / max. A state restored from a finished file rebuilds the
max-ndvi key from the stored bands (clear, NDVI, day, scan angle, solar zenith), so a
temporal composite keeps each cell's clear maximum-NDVI day, all 12 bands from that day.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numba
import numpy as np

from nearline.composite._base import (
    BT3,
    BT4,
    BT5,
    CLOUD,
    COUNT,
    DAY,
    INT16_FILL,
    NDVI,
    QC,
    REFL1,
    REFL2,
    REL_AZIMUTH,
    SCAN_ANGLE,
    SUN_ZENITH,
    OutputVariable,
    Reducer,
)  # fmt: skip
from nearline.composite._observe import BAD_CALIBRATION
from nearline.errors import ConfigError

STAT_BANDS = (NDVI, REFL1, REFL2, BT3, BT4, BT5)
# max-NDVI keys (63 bits): clear (bit 61), NDVI in steps of NDVI_STEP (54-60), nearness to
# nadir in 0.01 degree of scan angle (41-53), then the observation's time (9-40) and column
# (0-8), unique within a period of up to 49 days
NDVI_STEP = 200  # packed units of 1e-4: 0.02 NDVI
KEY_NADIR_MAX = 8191  # 0.01 degree: 81.91 degrees, beyond any scan angle
KEY_TIME_BITS = 32  # milliseconds


@numba.njit(cache=True, nogil=True, inline="always")
def _pack(value: float, scale: float, offset: float) -> int:
    if math.isnan(value):
        return INT16_FILL
    stored = round((value - offset) / scale)
    return max(-32767, min(32767, stored))


@dataclass(frozen=True)
class Ranking:
    """What a maximum-value composite ranks by: a band, and the steps of its packed value
    (``(packed + shift) // step`` in 0..127) within which nearness to nadir decides."""

    band: OutputVariable
    shift: int
    step: int


RANK_NDVI = Ranking(NDVI, 10000, NDVI_STEP)  # 0.02 of NDVI
RANK_BT4 = Ranking(BT4, 3000, 150)  # 1.5 K from 170 K (the calibration's lowest)


@numba.njit(cache=True, nogil=True, inline="always")
def _preference(clear: int, packed_rank: int, packed_scan: int, shift: int, size: int) -> int:
    """The top bits of a max-value key: clear, then the ranked value's step, then nearness
    to nadir."""
    step = (packed_rank + shift) // size if packed_rank != INT16_FILL else 0
    nadir = KEY_NADIR_MAX - min(abs(packed_scan), KEY_NADIR_MAX)
    return (clear << 61) | (max(0, min(step, 127)) << 54) | (nadir << 41)


@numba.njit(cache=True, nogil=True)
def _max_value(
    cells, pixels, rank, rank_scale, rank_offset, shift, size, ndvi, cloud, qc, scan, sun,
    azimuth, refl1, refl2, bt3, bt4, bt5, day, time_ms, key, o_ndvi, o_cloud, o_qc, o_scan,
    o_sun, o_azimuth, o_refl1, o_refl2, o_bt3, o_bt4, o_bt5, o_day,
):  # fmt: skip
    width = ndvi.size // time_ms.size
    used = 0
    for k in range(cells.size):
        cell = cells[k]
        p = pixels[k]
        if cell < 0 or math.isnan(rank[p]):
            continue
        used += 1
        packed_ndvi = _pack(ndvi[p], 1e-4, 0.0)
        packed_scan = _pack(scan[p], 0.01, 0.0)
        line, column = p // width, p % width
        clear = 1 if cloud[p] == 0 and (qc[p] & BAD_CALIBRATION) == 0 else 0
        candidate = (
            _preference(clear, _pack(rank[p], rank_scale, rank_offset), packed_scan, shift, size)
            | ((time_ms[line] & ((1 << KEY_TIME_BITS) - 1)) << 9)
            | column
        )
        if candidate <= key[cell]:
            continue
        key[cell] = candidate
        o_ndvi[cell] = packed_ndvi
        o_cloud[cell] = cloud[p]
        o_qc[cell] = qc[p]
        o_scan[cell] = packed_scan
        o_sun[cell] = _pack(sun[p], 0.01, 0.0)
        o_azimuth[cell] = _pack(azimuth[p], 0.01, 0.0)
        o_refl1[cell] = _pack(refl1[p], 0.01, 0.0)
        o_refl2[cell] = _pack(refl2[p], 0.01, 0.0)
        o_bt3[cell] = _pack(bt3[p], 0.01, 200.0)
        o_bt4[cell] = _pack(bt4[p], 0.01, 200.0)
        o_bt5[cell] = _pack(bt5[p], 0.01, 200.0)
        o_day[cell] = day[p]
    return used


def _flat(obs: Any, *names: str) -> list[np.ndarray]:
    return [np.ascontiguousarray(getattr(obs, name)).reshape(-1) for name in names]


class MaxValue(Reducer):
    """A maximum-value composite: 12 bands from the winning observation, ranked by
    ``ranking`` (subclasses set it)."""

    ranking: ClassVar[Ranking]
    _BANDS: ClassVar[tuple[OutputVariable, ...]] = (
        NDVI, CLOUD, QC, SCAN_ANGLE, SUN_ZENITH, REL_AZIMUTH, REFL1, REFL2, BT3, BT4, BT5, DAY,
    )  # fmt: skip

    def variables(self) -> list[OutputVariable]:
        return list(self._BANDS)

    def state_dtypes(self) -> dict[str, str]:
        return {"key": "int64", **{band.name: band.dtype for band in self._BANDS}}

    def reset(self, state: dict[str, np.ndarray]) -> None:
        state["key"].fill(-1)
        for band in self._BANDS:
            state[band.name].fill(band.fill)

    def fold(
        self, state: dict[str, np.ndarray], cells: np.ndarray, pixels: np.ndarray, obs: Any
    ) -> int:
        inputs = _flat(
            obs, "ndvi", "cloud", "qc", "scan_angle", "sun_zenith", "rel_azimuth", "refl1",
            "refl2", "bt3", "bt4", "bt5", "day",
        )  # fmt: skip
        outputs = [state["key"], *(state[band.name] for band in self._BANDS)]
        rank = self.ranking
        (values,) = _flat(obs, rank.band.name)
        attrs = rank.band.attrs
        return _max_value(
            cells, pixels, values, attrs["scale_factor"], attrs.get("add_offset", 0.0),
            rank.shift, rank.step, *inputs, obs.time_ms, *outputs,
        )  # fmt: skip

    def finish(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {band.name: state[band.name] for band in self._BANDS}

    def merge(self, state: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> None:
        take = other["key"] > state["key"]
        for name in ("key", *(band.name for band in self._BANDS)):
            state[name][take] = other[name][take]

    def restore(self, outputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        state = {band.name: np.array(outputs[band.name], band.dtype) for band in self._BANDS}
        rank = self.ranking
        ranked = state[rank.band.name].astype(np.int64)
        clear = (state["cloud"] == 0) & ((state["qc"] & BAD_CALIBRATION) == 0)
        scan = np.abs(state["scan_angle"].astype(np.int64))
        step = np.clip((ranked + rank.shift) // rank.step, 0, 127)
        key = (
            (clear.astype(np.int64) << 61)
            | (step << 54)
            | ((KEY_NADIR_MAX - np.minimum(scan, KEY_NADIR_MAX)) << 41)
            | ((ranked + 32768) << 25)
            | ((state["day"].astype(np.int64) & 0x1FF) << 16)
            | (state["sun_zenith"].astype(np.int64) + 32768)
        )
        state["key"] = np.where(ranked == INT16_FILL, -1, key)
        return state


class MaxNDVI(MaxValue):
    """The Pathfinder maximum-NDVI composite, of daylit observations."""

    name = "max-ndvi"
    ranking = RANK_NDVI


class MaxBT4(MaxValue):
    """The warmest channel-4 observation, by day or night."""

    name = "max-bt4"
    ranking = RANK_BT4
    uses_night = True


@numba.njit(cache=True, nogil=True)
def _statistic(cells, pixels, values, scale, offset, usable, mode, total):
    """mode 0: integer sum; 1: minimum; 2: maximum (of packed values)."""
    for k in range(cells.size):
        cell = cells[k]
        p = pixels[k]
        if cell < 0 or not usable[p]:
            continue
        stored = _pack(values[p], scale, offset)
        if stored == INT16_FILL:
            continue
        if mode == 0:
            total[cell] += stored
        elif mode == 1:
            total[cell] = min(total[cell], stored)
        else:
            total[cell] = max(total[cell], stored)


@numba.njit(cache=True, nogil=True)
def _count(cells, pixels, usable, count):
    used = 0
    for k in range(cells.size):
        if cells[k] >= 0 and usable[pixels[k]]:
            count[cells[k]] += 1
            used += 1
    return used


class Statistic(Reducer):
    """Mean, minimum or maximum of the six physical bands over clear daytime observations."""

    _MODES: ClassVar[dict[str, int]] = {"mean": 0, "min": 1, "max": 2, "count": 0}

    def __init__(self, name: str) -> None:
        self.name = name  # type: ignore[misc]
        self._mode = self._MODES[name]
        self._bands = () if name == "count" else STAT_BANDS

    def variables(self) -> list[OutputVariable]:
        return [*self._bands, COUNT]

    def state_dtypes(self) -> dict[str, str]:
        total = "int64" if self._mode == 0 else "int16"
        names = {f"total_{band.name}": total for band in self._bands}
        return {**names, "count": "uint16"}

    def reset(self, state: dict[str, np.ndarray]) -> None:
        start = {0: 0, 1: 32767, 2: -32767}[self._mode]
        for band in self._bands:
            state[f"total_{band.name}"].fill(start)
        state["count"].fill(0)

    def fold(
        self, state: dict[str, np.ndarray], cells: np.ndarray, pixels: np.ndarray, obs: Any
    ) -> int:
        ndvi, cloud, qc = _flat(obs, "ndvi", "cloud", "qc")
        usable = (cloud == 0) & ~np.isnan(ndvi) & ((qc & BAD_CALIBRATION) == 0)
        for band in self._bands:
            (values,) = _flat(obs, band.name)
            _statistic(
                cells,
                pixels,
                values,
                band.attrs["scale_factor"],
                band.attrs.get("add_offset", 0.0),
                usable,
                self._mode,
                state[f"total_{band.name}"],
            )
        return _count(cells, pixels, usable, state["count"])

    def finish(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        count = state["count"]
        seen = count > 0
        outputs = {}
        for band in self._bands:
            total = state[f"total_{band.name}"]
            if self._mode == 0:
                value = np.full(count.size, INT16_FILL, np.int16)
                value[seen] = np.round(total[seen] / count[seen]).astype(np.int16)
            else:
                value = np.where(seen, total, INT16_FILL).astype(np.int16)
            outputs[band.name] = value
        outputs["count"] = count
        return outputs

    def merge(self, state: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> None:
        for band in self._bands:
            name = f"total_{band.name}"
            combine = {0: np.add, 1: np.minimum, 2: np.maximum}[self._mode]
            combine(state[name], other[name], out=state[name])
        total = state["count"].astype(np.int64) + other["count"]
        state["count"][...] = np.minimum(total, np.iinfo(np.uint16).max)

    def restore(self, outputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        count = np.array(outputs["count"], np.uint16)
        seen = count > 0
        state: dict[str, np.ndarray] = {"count": count}
        start = {0: 0, 1: 32767, 2: -32767}[self._mode]
        for band in self._bands:
            stored = np.asarray(outputs[band.name]).astype(np.int64)
            if self._mode == 0:  # the sum the rounded mean stands for
                total = np.where(seen, stored * count, 0)
            else:
                total = np.where(seen, stored, start).astype(np.int16)
            state[f"total_{band.name}"] = total
        return state


def get_reducer(name: str) -> Reducer:
    """The reducer called ``name``: max-ndvi, max-bt4, mean, min, max or count."""
    for reducer in (MaxNDVI, MaxBT4):
        if name == reducer.name:
            return reducer()
    if name in Statistic._MODES:
        return Statistic(name)
    raise ConfigError(f"reducer: expected one of {', '.join(REDUCERS)}; got {name!r}")


REDUCERS = ("max-ndvi", "max-bt4", "mean", "min", "max", "count")
