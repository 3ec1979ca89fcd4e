"""Everything a run's processes share, made once before they start: the opened inputs, the
plan, each granule's calibration tables, the ancillary maps and the reducer.

``prepare`` opens every granule once to sample it (tie-point latitudes for the plan, the
calibration telemetry for the per-line calibration, which pygac smooths over 51 lines and so
must see the whole granule); a granule that cannot be read is skipped or fails the run, as
``on_error`` says, before any worker starts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

import numpy as np

from nearline.composite._ancillary import Ancillary
from nearline.composite._base import Reducer
from nearline.composite._calibration import LineCalibration, line_calibration
from nearline.composite._coefficients import Coefficients, load_coefficients
from nearline.composite._observe import observe
from nearline.composite._periods import period_label, period_window
from nearline.composite._plan import GranuleInfo, Plan, make_plan, observed_lines
from nearline.composite._reducers import get_reducer
from nearline.composite._settings import CompositeSettings, OnError
from nearline.errors import CompositeError, ConfigError, GranuleError
from nearline.grid import FootprintRegistrar, get_grid
from nearline.swath import Granule, open_granule

log = logging.getLogger(__name__)

# Memory a worker needs besides its band: received blocks, observations of a 1024-line
# block, cell indices, numba and netCDF libraries.
WORKER_OVERHEAD = 192 * 1024**2


@dataclass
class RunContext:
    """The shared, read-only state of one run."""

    settings: CompositeSettings
    plan: Plan
    reducer: Reducer
    calibrations: list[LineCalibration]
    ancillary: Ancillary
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    progress: Callable[[str, int, int], None] | None = None
    lines_done: int = 0
    lines_total: int = 0
    sample_seconds: float = 0.0  # reading tie latitudes and telemetry
    stage_seconds: dict[str, float] = field(default_factory=dict)  # observe(), processor time

    def products(self) -> list[str]:
        """The products of the inputs, as their files name them, each once."""
        return sorted({info.product for info in self.plan.granules})

    def granule_names(self) -> list[tuple[str, str]]:
        return [(info.path.name, info.platform) for info in self.plan.granules]

    def open_granule(self, index: int) -> Granule:
        return open_granule(self.plan.granules[index].path)

    def observe(self, granule: int, block: Any) -> Any:
        """Calibrated, masked, terrain-corrected observations of one delivered block; the
        processor seconds of each stage are added to :attr:`stage_seconds`."""
        first = block.first_line
        calibration = self.calibrations[granule].slice(first, first + block.n_lines)
        return observe(
            block, calibration, self.ancillary, night=self.reducer.uses_night,
            timings=self.stage_seconds,
        )  # fmt: skip

    def warm_up(self) -> None:
        """Compile (or load from numba's cache) every kernel once, here, before the workers
        fork: each would otherwise pay for it again."""
        with self.open_granule(0) as granule:
            block = granule.read(0, min(2, granule.n_lines))
        observations = self.observe(0, block)
        registrar = FootprintRegistrar(self.plan.grid)
        cells, pixels = registrar.register(observations.lon, observations.lat, rows=(0, 1))
        state = self.reducer.new_state(self.plan.grid.width)
        self.reducer.update(state, cells, observations, pixels=pixels)
        self.reducer.finish(state)
        self.stage_seconds.clear()

    def serve(
        self,
        server: int,
        outbox: Any,
        *,
        barrier: Callable[[], None],
        on_block: Callable[[int], None] | None = None,
        after_pass: Callable[[], None] | None = None,
    ) -> Any:
        """Run input data server ``server`` through every pass; return its stats."""
        from nearline.swath.input_servers import ServerStats, serve_pass

        stats = ServerStats()
        for pass_index in range(self.plan.passes):
            barrier()
            serve_pass(
                self.plan.tasks(pass_index, server, self.settings.readers),
                self.open_granule,
                outbox,
                max_lines=self.settings.max_lines,
                stats=stats,
                on_block=on_block,
            )
            if after_pass is not None:
                after_pass()
        return stats

    def advance(self, lines: int) -> None:
        self.lines_done += lines
        if self.progress is not None:
            self.progress("composite", self.lines_done, self.lines_total)

    def attributes(self) -> dict[str, Any]:
        """Global attributes of the output file: what, when, from what."""
        starts = [info.start_time for info in self.plan.granules]
        window = period_window(min(starts).date(), self.settings.period)
        return {
            "title": f"AVHRR {self.settings.reducer} composite, {period_label(window)}",
            "source": f"{', '.join(self.products())}, composited by nearline",
            "period": self.settings.period.value,
            "reducer": self.settings.reducer,
            "time_coverage_start": window[0].isoformat(),
            "time_coverage_end": window[1].isoformat(),
            "input_granules": " ".join(info.path.name for info in self.plan.granules),
            "skipped_granules": " ".join(path.name for path, _ in self.skipped),
        }


def prepare(
    paths: list[Path],
    settings: CompositeSettings,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> RunContext:
    """Open and sample every input, plan the bands, load the ancillary maps."""
    grid = get_grid(settings.grid)
    reducer = get_reducer(settings.reducer)
    infos: list[GranuleInfo] = []
    latitudes: list[np.ndarray] = []
    line_weights: list[np.ndarray] = []  # when the owners observe sunlit lines only
    calibrations: list[LineCalibration] = []
    coefficients: dict[str, Coefficients] = {}  # per platform, read once
    skipped: list[tuple[Path, str]] = []
    sample_seconds = 0.0
    for done, path in enumerate(paths, start=1):
        try:
            began = time.perf_counter()
            with open_granule(path) as granule:
                tie_latitudes = granule.read_tie_latitudes()
                weights = (
                    None if reducer.uses_night else observed_lines(granule.read_tie_sun_zenith())
                )
                telemetry = granule.read_telemetry()
                sample_seconds += time.perf_counter() - began
                platform = granule.platform
                if telemetry.scaling is None and platform not in coefficients:  # raw counts
                    coefficients[platform] = load_coefficients(platform)
                calibration = line_calibration(
                    telemetry, platform, coefficients=coefficients.get(platform)
                )
                info = GranuleInfo(
                    len(infos), path, granule.platform, granule.n_lines, granule.start_time,
                    product=granule.product,
                )  # fmt: skip
        except GranuleError as error:
            if settings.on_error is OnError.FAIL:
                raise
            log.warning("skipping %s: %s", path, error)
            skipped.append((path, str(error)))
            continue
        finally:
            if progress is not None:
                progress("plan", done, len(paths))
        infos.append(info)
        latitudes.append(tie_latitudes)
        if weights is not None:
            line_weights.append(weights)
        calibrations.append(calibration)
    if not infos:
        raise CompositeError(
            f"none of the {len(paths)} inputs could be read; the first said: {skipped[0][1]}"
        )
    _check_period(infos, settings)
    state_bytes = sum(a.itemsize for a in reducer.new_state(1).values())
    budget = settings.memory // settings.workers - WORKER_OVERHEAD
    plan = make_plan(
        grid,
        infos,
        latitudes,
        workers=settings.workers,
        state_bytes_per_cell=state_bytes,
        memory_per_worker=max(budget, 0),
        line_weights=None if reducer.uses_night else line_weights,
    )
    context = RunContext(settings, plan, reducer, calibrations, Ancillary.load(), skipped, progress)
    context.sample_seconds = sample_seconds
    context.lines_total = plan.lines_to_ship()  # what the servers' on_block reports add up to
    return context


def _check_period(infos: list[GranuleInfo], settings: CompositeSettings) -> None:
    """Every granule must start inside the period of the first one."""
    first = min(infos, key=lambda info: info.start_time)
    window = period_window(first.start_time.date(), settings.period)
    for info in infos:
        day = (
            info.start_time.astimezone(UTC).date()
            if info.start_time.tzinfo
            else info.start_time.date()
        )
        if not window[0] <= day <= window[1]:
            raise ConfigError(
                f"{info.path.name} starts on {day}, outside the {settings.period.value} "
                f"{window[0]}..{window[1]} of {first.path.name}; composite each period "
                "separately or choose a longer --period"
            )
