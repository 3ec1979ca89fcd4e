"""`nearline ingest` of CF products: a real GOES-16 GLM Level 2 file (tests/data/real) becomes
a valid STAC item with its declared window and field of view; broken copies of it are
refused, naming the file, and catalogue nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from nearline.testing.realdata import FILES

from ..catalogued import (
    assert_broken_copy_refused,
    assert_valid_stac,
    ingested,
)

GLM = Path(__file__).resolve().parents[1] / "data" / "real" / FILES["glm-l2"]  # BSD-3-Clause
WINDOW = datetime(2018, 7, 2, 4, 33, tzinfo=UTC), datetime(2018, 7, 2, 4, 33, 20, tzinfo=UTC)


def test_glm_is_ingested_as_a_valid_stac_item(tmp_path):
    item = ingested(GLM, tmp_path / "data")
    assert (item.id, item.start, item.end) == (GLM.name, *WINDOW)
    stac = assert_valid_stac(item)
    assert stac["properties"]["platform"] == "goes16"
    assert stac["properties"]["instruments"] == ["glm"]
    assert stac["properties"]["nearline:product"] == "GLM-L2-LCFA"
    assert "nearline:lines" not in stac["properties"]
    assert stac["assets"]["data"]["type"] == "application/x-netcdf"


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_broken_glm_copy_is_refused_naming_it(damage, tmp_path):
    assert_broken_copy_refused(GLM, damage, tmp_path)
