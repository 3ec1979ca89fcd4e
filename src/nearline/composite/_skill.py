"""How good the cloud mask and the composite are, against the truth of a synthetic day.

The mask is scored pixel by pixel in swath space: every pixel of every granule goes through
the chain (:func:`~nearline.composite._observe.observe`) and its cloud bits are compared with
the cloud the generator drew there (:mod:`nearline.swath._truth`): the part of the pixel
covered and the cloud's optical depth. As in the validation of CLAVR-x against CALIPSO,
only pixels that are clearly one or the other count: *cloudy* when the true cloud fraction
is above :data:`CLOUDY_ABOVE` and the cloud no thinner than :data:`THIN_BELOW`, *clear*
when the fraction is below :data:`CLEAR_BELOW`. Partly covered pixels between the two are
not scored; *thin* ones (mostly covered, by cloud thinner than :data:`THIN_BELOW`, which
a passive imager's channels barely see: validations against the lidar commonly leave such
cloud out) are counted apart, with the share the mask flags. Per surface:

- **hit rate**: the share of cloudy pixels the mask flags;
- **false-alarm rate**: the share of clear pixels it flags;
- **thin flagged**: the share of thin-cloud pixels it flags (no target).

Surfaces: land or sea (as drawn), day (solar zenith below 85 degrees) or night; by day the
sea within :data:`GLINT_ZONE` degrees of the sun's mirror direction is *sea glint*, and land
with any snow drawn on it (more than :data:`CLEAR_BELOW` of the pixel) is *snow day*, apart.

The composite is scored cell by cell: the true surface NDVI of the daytime, truly clear land
pixels the chain registered to a cell (their mean) against the composite's NDVI there; the
RMSE over the cells the composite calls clear, with the cells it had to leave cloudy (all
their clear pixels false alarms) counted apart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nearline.composite._ancillary import Ancillary
from nearline.composite._calibration import line_calibration
from nearline.composite._cloudmask import DAY_SUN_ZENITH
from nearline.composite._observe import BAD_CALIBRATION, observe
from nearline.grid import Grid, get_grid
from nearline.swath import Truth, glint_angle, interpolate_tiepoints, open_granule, read_truth

CLOUDY_ABOVE = 0.5
CLEAR_BELOW = 0.05
THIN_BELOW = 0.3  # visible optical depth: thinner cloud is scored apart
GLINT_ZONE = 40.0  # degrees of glint angle: CLAVR-x's glint zone
BLOCK_LINES = 2048  # even, so the 2x2 windows are those of the composite
SURFACES = ("land day", "snow day", "sea day", "sea glint", "land night", "sea night")
TARGETS = {"hit": 0.95, "false_alarm": 0.05, "ndvi_rmse": 0.02}  # issue 22, by day


@dataclass
class SurfaceSkill:
    """Pixel counts of one surface."""

    cloudy: int = 0
    hits: int = 0
    clear: int = 0
    false_alarms: int = 0
    thin: int = 0
    thin_hits: int = 0

    @property
    def hit_rate(self) -> float:
        return self.hits / self.cloudy if self.cloudy else math.nan

    @property
    def false_alarm_rate(self) -> float:
        return self.false_alarms / self.clear if self.clear else math.nan

    @property
    def thin_rate(self) -> float:
        return self.thin_hits / self.thin if self.thin else math.nan


@dataclass
class MaskSkill:
    """Per-surface skill of the mask over some granules."""

    surfaces: dict[str, SurfaceSkill] = field(
        default_factory=lambda: {name: SurfaceSkill() for name in SURFACES}
    )
    pixels: int = 0  # with a surface: scored, thin, or partly covered and not scored

    def add(self, flagged: np.ndarray, truth: Truth, surface: np.ndarray) -> None:
        """Count pixels: ``flagged`` (bool), ``surface`` an index into :data:`SURFACES`
        (-1: not scored). Truth without optical depths (written before clouds had thin
        edges) counts every mostly covered pixel as cloudy."""
        covered = truth.cloud_fraction > CLOUDY_ABOVE
        thin = np.zeros_like(covered)
        if truth.optical_depth is not None:
            thin = covered & (truth.optical_depth < THIN_BELOW)
        cloudy = covered & ~thin
        clear = truth.cloud_fraction < CLEAR_BELOW
        self.pixels += int(np.count_nonzero(surface >= 0))
        for index, name in enumerate(SURFACES):
            here = surface == index
            skill = self.surfaces[name]
            skill.cloudy += int(np.count_nonzero(here & cloudy))
            skill.hits += int(np.count_nonzero(here & cloudy & flagged))
            skill.clear += int(np.count_nonzero(here & clear))
            skill.false_alarms += int(np.count_nonzero(here & clear & flagged))
            skill.thin += int(np.count_nonzero(here & thin))
            skill.thin_hits += int(np.count_nonzero(here & thin & flagged))

    @property
    def partly_cloudy(self) -> int:
        """Pixels not scored: partly covered, between clear and cloudy."""
        counted = sum(s.cloudy + s.clear + s.thin for s in self.surfaces.values())
        return self.pixels - counted

    def meets_targets(self) -> bool:
        """Hit rate and false-alarm rate meet :data:`TARGETS` by day over land and sea."""
        return all(
            self.surfaces[name].hit_rate >= TARGETS["hit"]
            and self.surfaces[name].false_alarm_rate <= TARGETS["false_alarm"]
            for name in ("land day", "sea day")
        )


def surface_classes(
    land: np.ndarray,
    sun_zenith: np.ndarray,
    sat_zenith: np.ndarray,
    rel_azimuth: np.ndarray,
    snow_fraction: np.ndarray | None = None,
) -> np.ndarray:
    """Index into :data:`SURFACES` of every pixel (int8)."""
    day = sun_zenith < DAY_SUN_ZENITH
    glint = ~land & day & (glint_angle(sun_zenith, sat_zenith, rel_azimuth) < GLINT_ZONE)
    snowy = land & day
    if snow_fraction is None:
        snowy = np.zeros_like(snowy)
    else:
        snowy &= snow_fraction > CLEAR_BELOW
    kinds = [land & day & ~snowy, snowy, ~land & day & ~glint, glint, land & ~day, ~land & ~day]
    classes = np.select(kinds, list(range(len(SURFACES))), -1)
    return classes.astype(np.int8)


@dataclass(frozen=True)
class NdviSkill:
    """The composite's NDVI against the truth over clear land.

    ``rmse``/``bias`` over the cells the composite calls clear; ``cells`` of clear land in
    all, ``cloudy_cells`` of them the composite could only fill with an observation it
    flagged cloudy (every truly clear pixel there was a false alarm), and ``rmse_all`` the
    RMSE counting those too.
    """

    rmse: float
    bias: float
    cells: int
    cloudy_cells: int
    rmse_all: float


@dataclass
class DaySkill:
    """The mask's skill and, if a composite was given, the composite's."""

    mask: MaskSkill
    ndvi: NdviSkill | None = None


class _TrueNdvi:
    """Sums of the true NDVI of daytime, truly clear land pixels per grid cell."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        self.total = np.zeros(grid.cells)
        self.count = np.zeros(grid.cells)

    def add(self, lon: np.ndarray, lat: np.ndarray, ndvi: np.ndarray) -> None:
        cells = self.grid.cell_index(lon, lat)
        inside = cells >= 0
        self.total += np.bincount(cells[inside], ndvi[inside], minlength=self.grid.cells)
        self.count += np.bincount(cells[inside], minlength=self.grid.cells)

    def mean(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.count > 0, self.total / self.count, np.nan)


def score_day(
    granules: Sequence[str | Path],
    *,
    composite: str | Path | None = None,
    truth_folder: str | Path | None = None,
    ancillary: Ancillary | None = None,
    block_lines: int = BLOCK_LINES,
) -> DaySkill:
    """Run the chain over every pixel of ``granules``, score its cloud bits and, given the
    daily ``composite`` made of them, its NDVI.

    The true NDVI is registered where the chain puts each pixel (after the terrain
    correction), so a cell's truth is made of the pixels the composite chose from.
    """
    ancillary = Ancillary.load() if ancillary is None else ancillary
    mask = MaskSkill()
    grid = composite_grid(composite) if composite is not None else None
    true_ndvi = _TrueNdvi(grid) if grid is not None else None
    for path in granules:
        truth = read_truth(path, folder=truth_folder)
        with open_granule(path) as granule:
            cal = line_calibration(granule.read_telemetry(), granule.platform)
            for start in range(0, truth.land.shape[0], block_lines):
                stop = min(start + block_lines, truth.land.shape[0])
                block = granule.read(start, stop)
                obs = observe(block, cal.slice(start, stop), ancillary)
                part = truth.slice(start, stop)
                classes = surface_classes(
                    part.land,
                    obs.sun_zenith,
                    interpolate_tiepoints(block.tie_sat_zenith),
                    obs.rel_azimuth,
                    part.snow_fraction,
                )
                classes[(obs.qc & BAD_CALIBRATION) != 0] = -1
                mask.add(obs.cloud != 0, part, classes)
                if true_ndvi is not None:
                    clear_land = (classes == SURFACES.index("land day")) & (
                        part.cloud_fraction < CLEAR_BELOW
                    )
                    true_ndvi.add(obs.lon[clear_land], obs.lat[clear_land],
                                  part.surface_ndvi[clear_land])  # fmt: skip
    if true_ndvi is None:
        return DaySkill(mask)
    return DaySkill(mask, _ndvi_skill(composite, true_ndvi.mean()))


def composite_grid(composite: str | Path) -> Grid:
    """The grid a composite file was made on."""
    import xarray as xr

    with xr.open_dataset(composite) as dataset:
        return get_grid(dataset.attrs["grid"])


def _ndvi_skill(composite: str | Path, truth: np.ndarray) -> NdviSkill:
    import xarray as xr

    with xr.open_dataset(composite) as dataset:
        ndvi = dataset["ndvi"].values.astype(np.float64).ravel()
        flagged = dataset["cloud"].values.ravel() != 0
    cells = np.isfinite(truth) & np.isfinite(ndvi)
    error = ndvi - truth
    clear = cells & ~flagged
    if not clear.any():
        return NdviSkill(math.nan, math.nan, int(cells.sum()), int(cells.sum()), math.nan)
    return NdviSkill(
        rmse=float(np.sqrt(np.mean(error[clear] ** 2))),
        bias=float(np.mean(error[clear])),
        cells=int(cells.sum()),
        cloudy_cells=int((cells & flagged).sum()),
        rmse_all=float(np.sqrt(np.mean(error[cells] ** 2))),
    )


def skill_table(mask: MaskSkill) -> list[list[str]]:
    """Rows for a table: surface, cloudy px, hit rate, clear px, false-alarm rate, thin
    px, the share of them flagged."""
    rows = []
    for name, skill in mask.surfaces.items():
        rows.append([
            name,
            f"{skill.cloudy:,}",
            _percent(skill.hit_rate),
            f"{skill.clear:,}",
            _percent(skill.false_alarm_rate),
            f"{skill.thin:,}",
            _percent(skill.thin_rate),
        ])  # fmt: skip
    return rows


SKILL_HEADERS = (
    "surface", "cloudy px", "hit rate", "clear px", "false alarms", "thin px", "thin flagged",
)  # fmt: skip


def _percent(value: float) -> str:
    return "—" if math.isnan(value) else f"{100 * value:.1f} %"
