"""Where the real product files are that the real-data tests read, and a check that they are
all there.

The files are NOAA, NASA and EUMETSAT products, unchanged, kept in public repositories for
their own tests (docs/realdata.md names each with its repository, commit and licence). Those
whose licence allows it are copied into the project (``tests/data/real``) and ``make test``
reads them; the rest (GPL-3.0) stay outside it, in ``../shared/realdata`` or
``$NEARLINE_REALDATA``, and ``make test-realdata`` (which ``.ci/run`` runs) reads them all::

    .venv/bin/python -m nearline.testing.realdata [--realdata DIR]

prints the folder and exits 0 when every file is there, or says in one line where they come
from and exits 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

REALDATA_ENV = "NEARLINE_REALDATA"
REALDATA = Path(
    os.environ.get(REALDATA_ENV)
    or Path(__file__).resolve().parents[3].parent / "shared" / "realdata"
)
# every file the real-data tests read, by the product it is
FILES = {
    "avhrr-gac-pod": "NSS.GHRR.TN.D80003.S1147.E1332.B0630506.GC",
    "tle-tirosn": "TLE_tirosn.txt",
    "avhrr-fdr-l1c": (
        "AVHRR-GAC_FDR_1C_N06_19810330T042358Z_19810330T060903Z_R_O_20200101T000000Z_0100.nc"
    ),
    "vgac": "VGAC_VJ102MOD_A2018305_1042_n004946_K005.nc",
    "mod04-l2": "MOD04_L2.A2001066.0000.004.2003078090622.he2",
    "mod09ga": "MOD09GA.A2008296.h14v17.006.2015181011753.hdf",
    "glm-l2": "OR_GLM-L2-LCFA_G16_s20181830433000_e20181830433200_c20181830433231.nc",
}
WHERE = (
    "the real-data tests read NOAA, NASA and EUMETSAT product files from ../shared/realdata "
    "(or ${env}): public test files of foua-pps/level1c4pps, NCAR/ncl, corteva/rioxarray and "
    "deeplycloudy/glmtools, listed with their commits in docs/realdata.md; {missing} not in "
    "{folder}"
)


class RealDataMissing(RuntimeError):
    """The real product files are not where the tests look; the message says where they come
    from."""


def realdata_folder(folder: Path | None = None) -> Path:
    """The folder holding every file of :data:`FILES`; raises :class:`RealDataMissing`
    saying where they come from if one is not there.

    Parameters
    ----------
    folder
        Where to look; None: ``$NEARLINE_REALDATA``, else ``../shared/realdata``.
    """
    folder = Path(folder or REALDATA)
    missing = [name for name in FILES.values() if not (folder / name).is_file()]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise RealDataMissing(
            WHERE.format(env=REALDATA_ENV, missing=f"{missing[0]}{more}", folder=folder)
        )
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m nearline.testing.realdata", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--realdata", type=Path, default=None, help=f"default: ${REALDATA_ENV}, else {REALDATA}"
    )
    args = parser.parse_args(argv)
    try:
        print(realdata_folder(args.realdata))
    except RealDataMissing as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
