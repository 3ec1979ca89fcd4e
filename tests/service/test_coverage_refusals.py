"""Bad coverage and EDR requests: each a problem document naming what was wrong (4xx), never
a 500, never a file, and nothing left behind in the service's scratch."""

from __future__ import annotations

import pytest

from . import gridded as fixtures
from .gridded import COLLECTION, LIMIT

series, gridded = fixtures.series, fixtures.gridded  # fixtures
COVERAGE = f"/collections/{COLLECTION}/coverage"
POSITION = f"/collections/{COLLECTION}/position"
CUBE = f"/collections/{COLLECTION}/cube"


@pytest.mark.parametrize(
    ("path", "params", "status", "words"),
    [
        (COVERAGE, {"bbox": "10,89.9,20,90"}, 400, "outside the grid igh-8km"),
        (COVERAGE, {"bbox": "20,10,10,30"}, 400, "reversed"),
        (COVERAGE, {"subset": "Lat(50:40)"}, 400, "reversed"),
        (COVERAGE, {"subset": "x(3e7:4e7)"}, 400, "outside the grid"),
        (COVERAGE, {"bbox": "10,20,30"}, 400, "west,south,east,north"),
        (COVERAGE, {"properties": "ndvi,greenness"}, 400, "unknown band 'greenness'"),
        (COVERAGE, {"datetime": "2001-01-01"}, 400, "no item of composite-8km lies in it"),
        (COVERAGE, {"datetime": "yesterday"}, 400, "datetime"),
        (COVERAGE, {"scale-factor": "0"}, 400, "scale-factor 0"),
        (COVERAGE, {"scale-size": "x(0),y(10)"}, 400, "scale-size"),
        (COVERAGE, {"scale-size": "x(9)", "scale-factor": "2"}, 400, "give one way of scaling"),
        (COVERAGE, {"scale-axes": "x(0.5)"}, 400, "scale-axes: x(0.5) must be a number >= 1"),
        (COVERAGE, {"subset": "Height(1:2)"}, 400, "unknown axis 'Height'"),
        (COVERAGE, {"f": "xml"}, 400, "geotiff or netcdf"),
        (COVERAGE, {"colour": "red"}, 400, "unknown parameter 'colour'"),
        (COVERAGE, {"datetime": "2012-12-12/2012-12-14", "f": "geotiff"}, 400, "one time"),
        (COVERAGE, {}, 413, f"limit of {LIMIT:,} (NEARLINE_COVERAGE_MAX_VALUES)"),
        (POSITION, {"coords": "POINT(0 89.95)"}, 400, "no point asked for lies on the grid"),
        (POSITION, {"coords": "POINT(10"}, 400, "not WKT"),
        (POSITION, {"coords": "POLYGON((0 0, 1 0, 1 1, 0 0))"}, 400, "POINT or MULTIPOINT"),
        (POSITION, {"coords": "POINT(200 10)"}, 400, "-180..180"),
        (POSITION, {"coords": "POINT(10 10)", "parameter-name": "rain"}, 400, "unknown band"),
        (CUBE, {}, 400, "bbox: a cube query needs"),
        (CUBE, {"bbox": "-180,-80,180,80"}, 413, "NEARLINE_COVERAGE_MAX_VALUES"),
        (CUBE, {"bbox": "0,0,1,1", "f": "GeoJSON"}, 400, "CoverageJSON or netCDF"),
    ],
)
def test_bad_requests_are_problem_documents_naming_the_fault(gridded, path, params, status, words):
    with gridded.client("bob") as client:
        response = client.get(path, params=params)
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/")
    assert "json" in response.headers["content-type"]
    problem = response.json()
    assert problem["status"] == status
    assert words in problem["detail"]
    assert not [p for p in gridded.data.rglob("*") if p.name.startswith(("coverage-", "edr-"))]
