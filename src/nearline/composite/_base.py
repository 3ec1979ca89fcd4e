"""Reducers: how the observations falling in one grid cell become that cell's value.

A :class:`Reducer` keeps a *state* (a dict of flat arrays, one entry per cell of a band),
folds blocks of observations into it with a compiled kernel, and turns it into the packed
output variables. Implementations keep these true:

- ``fold`` (which ``update`` calls with (cell, pixel) pairs) is order-independent: the
  same observations in any order, split into any blocks, give the same state bit for bit
  (ties are broken by a unique observation key, sums are kept in integers), so partitioned,
  out-of-core and MPI runs equal the in-memory one;
- ``reset`` returns a state to "nothing seen" without reallocating it;
- ``finish`` returns arrays in the order and dtypes of ``variables()``;
- ``merge`` folds another state of the same cells in, with the same order independence;
- ``restore`` turns finished outputs back into a state, so daily files combine into 10-day
  and monthly composites (exact for max-ndvi, max-bt4, min, max and count; a mean is rebuilt
  from its rounded value times its count).

Packing (CF ``scale_factor``/``add_offset``, fill -32768 for int16, 255 for uint8 flags):
NDVI 1e-4; reflectances 0.01 %; angles 0.01 degree; temperatures 0.01 K with add_offset
200 K (170-350 K fits int16); day of year int16 with fill -1; counts uint16, no fill.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

INT16_FILL = -32768
UINT8_FILL = 255


@dataclass(frozen=True)
class OutputVariable:
    """One output band: its packed dtype, fill value and CF attributes."""

    name: str
    dtype: str
    fill: int | float | None
    attrs: dict[str, Any] = field(default_factory=dict)

    def unpack(self, stored: np.ndarray) -> np.ndarray:
        """Physical values (float32), NaN where ``stored`` is the fill value."""
        values = stored.astype(np.float32)
        if "scale_factor" in self.attrs:
            values *= np.float32(self.attrs["scale_factor"])
            values += np.float32(self.attrs.get("add_offset", 0.0))
        if self.fill is not None:
            values[stored == self.fill] = np.nan
        return values


def packed(name: str, long_name: str, units: str, scale: float, offset: float = 0.0,
           **extra: Any) -> OutputVariable:  # fmt: skip
    """An int16 band whose value is ``stored * scale + offset`` (CF packing)."""
    attrs = {"long_name": long_name, "units": units, "scale_factor": scale, **extra}
    if offset:
        attrs["add_offset"] = offset
    return OutputVariable(name, "int16", INT16_FILL, attrs)


# The physical bands every reducer draws on, packed the same way everywhere.
NDVI = packed("ndvi", "normalized difference vegetation index", "1", 1e-4,
              valid_range=np.array([-10000, 10000], np.int16))  # fmt: skip
REFL1 = packed("refl1", "channel 1 (0.63 um) reflectance", "percent", 0.01)
REFL2 = packed("refl2", "channel 2 (0.86 um) reflectance", "percent", 0.01)
BT3 = packed("bt3", "channel 3b (3.7 um) brightness temperature", "K", 0.01, 200.0)
BT4 = packed("bt4", "channel 4 (10.8 um) brightness temperature", "K", 0.01, 200.0)
BT5 = packed("bt5", "channel 5 (12.0 um) brightness temperature", "K", 0.01, 200.0)
SCAN_ANGLE = packed("scan_angle", "sensor scan angle", "degree", 0.01)
SUN_ZENITH = packed("sun_zenith", "solar zenith angle", "degree", 0.01)
REL_AZIMUTH = packed("rel_azimuth", "relative azimuth angle", "degree", 0.01)
CLOUD = OutputVariable("cloud", "uint8", UINT8_FILL, {
    "long_name": "CLAVR cloud test bits (0 = clear)",
    "flag_masks": np.array([1, 2, 4, 8, 16, 32, 64, 128], np.uint8),
    "flag_meanings": "reflectance ratio uniformity ch3_ch4 ch4_ch5 thermal_gross contrast "
    "near_ir",
})  # fmt: skip
QC = OutputVariable("qc", "uint8", UINT8_FILL, {
    "long_name": "quality bits",
    "flag_masks": np.array([1, 2, 4, 8], np.uint8),
    "flag_meanings": "bad_calibration night scan_edge low_sun",
})  # fmt: skip
DAY = OutputVariable("day", "int16", -1, {"long_name": "day of year of the observation"})
COUNT = OutputVariable("count", "uint16", None, {"long_name": "clear observations in the cell"})


class Reducer(ABC):
    """Per-cell reduction of observations: max-NDVI, mean, min, max, count.

    ``fold`` and ``merge`` are order-independent, bit for bit, so partitioned, out-of-core
    and MPI runs equal the in-memory one; ``reset``, ``finish`` and ``restore`` keep the
    rest of the contract. Implementations set ``name``.
    """

    name: ClassVar[str]
    # Whether the reduction uses pixels without daylight (NaN NDVI). When it does not, as
    # none here but max-bt4 does, the chain leaves out their channels and cloud tests.
    uses_night: ClassVar[bool] = False

    @abstractmethod
    def variables(self) -> list[OutputVariable]:
        """The output bands, in order."""

    @abstractmethod
    def state_dtypes(self) -> dict[str, str]:
        """Name and dtype of each per-cell state array."""

    @abstractmethod
    def reset(self, state: dict[str, np.ndarray]) -> None:
        """Back to "nothing seen", in place, without reallocating.

        Parameters
        ----------
        state
            A state of this reducer.
        """

    def update(
        self,
        state: dict[str, np.ndarray],
        cells: np.ndarray,
        obs: Any,
        *,
        pixels: np.ndarray | None = None,
    ) -> int:
        """Fold observations into ``state``; one pixel may reach several cells.

        Parameters
        ----------
        state
            The band's state, updated in place.
        cells
            Flat cell index per pair, int64; -1 skips the pair.
        obs
            The block's observations, as the reducer reads them.
        pixels
            Flat pixel index per pair (default: pair k is pixel k).

        Returns
        -------
        int
            The (cell, pixel) pairs used.

        Raises
        ------
        ValueError
            ``pixels`` and ``cells`` do not pair up.
        """
        flat = np.asarray(cells).reshape(-1)
        if pixels is None:
            pixels = np.arange(flat.size, dtype=np.int64)
        elif np.shape(pixels) != flat.shape:
            raise ValueError(f"pixels {np.shape(pixels)} and cells {flat.shape} must pair up")
        return self.fold(state, flat, np.asarray(pixels).reshape(-1), obs)

    @abstractmethod
    def fold(
        self, state: dict[str, np.ndarray], cells: np.ndarray, pixels: np.ndarray, obs: Any
    ) -> int:
        """``update``'s work, order-independent: what an implementation writes.

        Parameters
        ----------
        state
            The band's state, updated in place.
        cells, pixels
            Flat int64 arrays of equal length; a cell of -1 skips the pair.
        obs
            The block's observations.

        Returns
        -------
        int
            The (cell, pixel) pairs used.
        """

    @abstractmethod
    def finish(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Packed output arrays, in the order and dtypes of ``variables()``.

        Parameters
        ----------
        state
            The band's state.

        Returns
        -------
        dict[str, numpy.ndarray]
            Keyed by variable name.
        """

    @abstractmethod
    def merge(self, state: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> None:
        """Fold another state of the same cells in, order-independently.

        Parameters
        ----------
        state
            Updated in place.
        other
            A state of the same cells (another rank's, or another day's).
        """

    @abstractmethod
    def restore(self, outputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The state whose ``finish`` gave ``outputs``: how daily files combine into 10-day
        and monthly composites.

        Parameters
        ----------
        outputs
            Packed arrays read from a file, keyed by variable name.

        Returns
        -------
        dict[str, numpy.ndarray]
            The state (exact for max-ndvi, max-bt4, min, max and count; a mean is rebuilt
            from its rounded value times its count).
        """

    def new_state(self, n_cells: int) -> dict[str, np.ndarray]:
        """A fresh state, every page touched once (by ``reset``).

        Parameters
        ----------
        n_cells
            Cells of the band.
        """
        state = {name: np.empty(n_cells, dtype) for name, dtype in self.state_dtypes().items()}
        self.reset(state)
        return state
