"""Veros's ACC setup (a channel and a basin, 30 x 42 x 15 cells of 2 degrees), written
through nearline burst: under mpiexec the compute ranks hand their output to burst's I/O
ranks and go on stepping; the files are those a serial Veros run writes.

    mpiexec -n 5 python -m nearline.burst.veros --io-ranks 1 acc.py -n 2 2 -s runlen 864000
    veros run acc.py -s runlen 864000       # serial: the plug-in stands aside, Veros writes

Raise the resolution with Veros's own settings (``-s nx 120 -s ny 168 -s nz 30``): the grid
spacing, layer thicknesses, viscosity and isoneutral mixing follow, so the same basin is
resolved more finely and stays within Veros's stability checks.
"""

import numpy as np
import veros.setups.acc.acc as acc
from veros.core.operators import at, update

import nearline.burst.veros
from veros import veros_routine

STOCK = (30, 42, 15)  # acc's cells, each 2 degrees wide
LAYERS = np.array(
    [50.0, 70.0, 100.0, 140.0, 190.0, 240.0, 290.0, 340.0, 390.0, 440.0, 490.0, 540.0, 590.0,
     640.0, 690.0]
)  # fmt: skip


class ACCThroughBurst(acc.ACCSetup):
    __veros_plugins__ = (nearline.burst.veros,)

    @veros_routine
    def set_grid(self, state):
        vs, settings = state.variables, state.settings
        nx, ny, nz = settings.nx, settings.ny, settings.nz
        layers = LAYERS
        if nz != STOCK[2]:  # the same depth, in nz layers
            layers = np.interp(np.linspace(0, 14, nz), np.arange(15), LAYERS) * 15 / nz
        vs.dxt = update(vs.dxt, at[...], 2.0 * STOCK[0] / nx)
        vs.dyt = update(vs.dyt, at[...], 2.0 * STOCK[1] / ny)
        vs.dzt = update(vs.dzt, at[...], layers[::-1] / 2.5)
        finer = min(STOCK[0] / nx, STOCK[1] / ny) * STOCK[2] / nz  # 1 at acc's own grid
        with settings.unlock():  # acc's mixing is for 2-degree cells: keep it stable
            settings.A_h = (2.0 * STOCK[0] / nx * settings.degtom) ** 3 * 2e-11
            settings.K_iso_0 *= finer  # Veros's isoneutral stability check scales so
            settings.K_iso_steep *= finer
            settings.K_gm_0 *= finer

    @veros_routine
    def set_diagnostics(self, state):
        super().set_diagnostics(state)
        diagnostics = state.diagnostics
        diagnostics["snapshot"].output_frequency = 86400
        for name in ("averages", "overturning", "energy"):
            diagnostics[name].output_frequency = 86400
            diagnostics[name].sampling_frequency = state.settings.dt_tracer
