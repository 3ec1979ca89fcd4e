"""The process specifications nearline ships (nearline/openeo/specs) are the openEO project's
own, unchanged: each equals the copy openeo-test-suite checks processes against
(../shared/openeo-test-suite/assets/processes), so the two cannot drift apart."""

from __future__ import annotations

import json

import pytest

from nearline.openeo import PROCESS_IDS, process_spec
from nearline.testing.openeo_suite import SUITE


@pytest.mark.parametrize("process_id", PROCESS_IDS)
def test_spec_is_the_official_one(process_id: str) -> None:
    official = SUITE / "assets" / "processes" / f"{process_id}.json"
    if not official.is_file():
        pytest.skip(f"openeo-test-suite's specs are not at {SUITE} (NEARLINE_OPENEO_SUITE)")
    assert process_spec(process_id) == json.loads(official.read_text())
    assert process_spec(process_id)["id"] == process_id
