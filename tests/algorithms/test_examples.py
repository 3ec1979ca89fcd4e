"""The example packages' committed test data are what nearline's own readers say: the inputs
decode, and the expected outputs equal an independent computation from those counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from nearline.algorithms import read_manifest
from nearline.algorithms._compare import difference

from .example_data import EXAMPLES, histogram_outputs, quicklook_outputs


@pytest.mark.parametrize("name", ["counts-histogram", "gac-quicklook"])
def test_expected_outputs_follow_from_the_inputs(name, tmp_path):
    package = EXAMPLES / name
    (case,) = read_manifest(package).tests
    (granule,) = case.inputs["granules"]
    if name == "counts-histogram":
        histogram_outputs(package / granule, channel="2", bins=16, into=tmp_path)
        made = {"histogram.nc": "histogram.nc", "summary.csv": "summary.csv"}
    else:
        quicklook_outputs(package / granule, channel=2, into=tmp_path)
        made = {f"{Path(granule).name}.pgm": "quicklook.pgm", "summary.csv": "summary.csv"}
    for output, expected in case.expect.items():
        assert difference(tmp_path / made[output], package / expected) is None, output


def test_the_quicklook_is_an_image_of_the_granule(tmp_path):
    from PIL import Image

    with Image.open(EXAMPLES / "gac-quicklook" / "tests" / "expected" / "quicklook.pgm") as image:
        assert image.size == (409, 6)
        low, high = image.getextrema()
        assert high - low > 50  # daylight: the counts vary
