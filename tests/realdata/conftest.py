"""The real-data tests: NOAA, NASA and EUMETSAT product files nearline did not make.

They read ../shared/realdata (or $NEARLINE_REALDATA), which ``make test`` does not need:
pyproject.toml keeps this folder out of its collection, and ``make test-realdata`` (run by
.ci/run) runs it. Without the files every test here fails, saying where they come from.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nearline.testing.realdata import FILES, RealDataMissing, realdata_folder

try:
    FOLDER: Path | None = realdata_folder()  # read before any test clears NEARLINE_*
    MISSING = ""
except RealDataMissing as error:
    FOLDER, MISSING = None, str(error)


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The folder of real product files (every one of ``FILES``)."""
    if FOLDER is None:
        pytest.fail(MISSING, pytrace=False)
    return FOLDER


@pytest.fixture(scope="session")
def real_file(realdata: Path):
    """The path of a real file by its product's key in ``FILES`` ("avhrr-gac-pod", ...)."""
    return lambda key: realdata / FILES[key]
