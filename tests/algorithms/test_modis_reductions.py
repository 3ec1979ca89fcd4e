"""The three MODIS reductions (examples/algorithms/modis-*): uploaded through the web API like
any user's packages (the deploy builds the C one and runs each package's own test case),
ordered on ingested synthetic granules, and their outputs checked against a plain numpy
reference (modis_reference.py) on the same granules, planted outliers and all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from nearline.algorithms import read_manifest
from nearline.algorithms._compare import difference
from nearline.archive import open_catalogue
from nearline.archive._ingest import ingest
from nearline.grid import get_grid
from nearline.swath._modis import ModisL2Reader

from ..live_service import LiveService
from ..service.conftest import deploy
from .example_data import EXAMPLES, ROOT
from .modis_reference import (
    PACKAGES,
    PREFIXES,
    TEST_GRID,
    lonlat_1km,
    reference,
    small_granules,
    write_statistics,
)

C_LIBRARIES = ("libhdf4-alt-dev", "libnetcdf-dev")  # Debian's, for the C package's build
COLLECTIONS = {"MOD11_L2": "mod11-l2", "MOD06_L2": "mod06-l2", "MOD05_L2": "mod05-l2",
               "MOD04_L2": "mod04-l2"}  # fmt: skip
# the grid each order asks for
ORDERS = {"MOD11_L2": "geos5-0.5x0.625", "MOD06_L2": "geos5-1x1.25", "MOD05_L2": "geos5-0.5x0.625",
          "MOD04_L2": "geos5-1x1.25"}  # fmt: skip
SYNTHETIC_DAYS = "2012-12-01T00:00:00Z/2012-12-31T00:00:00Z"  # not the real granule's
REAL_MOD04 = ROOT / "tests" / "data" / "real" / "MOD04_L2.A2001066.0000.004.2003078090622.he2"
# no kept value can be this far out: the planted outliers are beyond these
PLAUSIBLE = {
    "lst": (200.0, 350.0),
    "cloud_fraction": (0.0, 1.0),
    "cloud_top_pressure": (50.0, 1050.0),
    "cloud_top_temperature": (200.0, 320.0),
    "water_vapour_nir": (0.0, 10.0),
    "water_vapour_ir": (0.0, 10.0),
    "aod_550": (-0.1, 5.0),
}


def test_the_python_packages_carry_one_shared_module():
    """An uploaded package stands alone, so each Python one carries the module; one text."""
    copies = {(EXAMPLES / p / "modis_l2grid.py").read_text() for p in PACKAGES.values()
              if "cloud" not in p}  # fmt: skip
    assert len(copies) == 1


@pytest.mark.parametrize("product", sorted(PACKAGES))
def test_the_committed_expected_output_is_the_references(product, tmp_path):
    package = EXAMPLES / PACKAGES[product]
    (case,) = read_manifest(package).tests
    inputs = [package / path for path in case.inputs["granules"]]
    ((day, statistics),) = reference(product, inputs, TEST_GRID).items()
    ((output, expected),) = case.expect.items()
    assert output == f"{PREFIXES[product]}-{TEST_GRID}-{day}.nc"
    write_statistics(tmp_path / output, statistics, TEST_GRID, day)
    assert difference(tmp_path / output, package / expected) is None
    unfiltered = reference(product, inputs, TEST_GRID, filtered=False)[day]
    for name, (_, count, _) in statistics.items():  # the planted outliers are flagged
        if name != "cloud_fraction":  # (kept by its fill and range alone)
            assert unfiltered[name][1].sum() > count.sum() > 0, name
    assert sum(p.stat().st_size for p in package.rglob("*") if p.is_file()) < 400_000


def test_the_references_1km_places_are_nearline_readers(tmp_path):
    (path, _) = sorted((EXAMPLES / "modis-lst-geos5" / "tests").glob("*.hdf"))
    with ModisL2Reader().open(path) as granule:
        lon, lat = granule.read_lonlat("1km")  # across scans, where the reference goes within
    mine = lonlat_1km(path, lon.shape[0])
    assert np.abs(mine[1] - lat).max() < 1e-4
    assert np.abs((mine[0] - lon + 180) % 360 - 180).max() < 1e-4


def test_a_granule_of_another_product_is_refused_by_name(tmp_path):
    (cloudy, _) = sorted((EXAMPLES / "modis-cloud-geos5" / "tests").glob("*.hdf"))
    job = {"job": "1", "inputs": {"granules": [{"path": str(cloudy), "item": {}}]},
           "parameters": {"grid": "geos5-1x1.25"}, "outputs": str(tmp_path)}  # fmt: skip
    (tmp_path / "job.json").write_text(json.dumps(job))
    program = EXAMPLES / "modis-lst-geos5" / "lst.py"
    env = {**os.environ, "NEARLINE_JOB": str(tmp_path / "job.json")}
    done = subprocess.run([sys.executable, str(program)], env=env, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"modis-lst-geos5: {cloudy.name} is MOD06_L2; modis-lst-geos5 reduces MOD11_L2 or MYD11_L2"
    )
    assert list(tmp_path.glob("*.nc")) == []


@pytest.fixture(scope="module")
def granules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Per product, the package's own two test granules of 2012-12-12 (planted outliers and
    all), and for MOD06_L2 a third, of the next day, so that its order spans two days."""
    found = {}
    for product, package in PACKAGES.items():
        found[product] = sorted((EXAMPLES / package / "tests").glob("*.hdf"))
    next_day = tmp_path_factory.mktemp("modis")
    found["MOD06_L2"] += small_granules("MOD06_L2", next_day, granules=1, first=30,
                                        day="2012-12-13")  # fmt: skip
    return found


@pytest.fixture(scope="module")
def live(tmp_path_factory, granules) -> Iterator[LiveService]:
    """A live service with alice, the three packages deployed by her through the API (each
    deploy runs the package's own test case), and the granules ingested."""
    libraries = [str(ROOT / "scripts" / "system-packages"), "--check", *C_LIBRARIES]
    check = subprocess.run(libraries, capture_output=True, text=True)
    if check.returncode != 0:
        pytest.fail(
            f"modis-cloud-geos5 is built against HDF4 and netCDF: {check.stderr.strip()}\n"
            "(make test runs scripts/system-packages, which installs them as root)",
            pytrace=False,
        )
    data = tmp_path_factory.mktemp("service") / "data"
    service = LiveService(data)
    service.add_user("alice")
    service.start("--cpus", "2")
    try:
        for package in PACKAGES.values():
            summary = deploy(service, "alice", EXAMPLES / package)
            assert summary["id"] == package
        with open_catalogue(None, data / "catalogue.db") as catalogue:
            for product, paths in granules.items():
                report = ingest(catalogue, paths, collection=COLLECTIONS[product], workers=1)
                assert len(report.items) == len(paths)
            report = ingest(catalogue, [REAL_MOD04], collection="mod04-l2", workers=1)
            assert len(report.items) == 1  # a real granule of 2001 beside the synthetic ones
        yield service
    finally:
        service.stop()


@pytest.mark.parametrize("product", sorted(PACKAGES))
def test_an_order_of_each_reduction_gives_the_references_statistics(
    product, live, granules, tmp_path
):
    grid = ORDERS[product]
    with live.client("alice") as client:
        response = client.post(
            f"/processes/{PACKAGES[product]}/execution",
            json={
                "inputs": {
                    "granules": {"collections": [COLLECTIONS[product]], "datetime": SYNTHETIC_DAYS},
                    "grid": grid,
                }
            },
            headers={"Prefer": "respond-async"},
        )
        assert response.status_code == 201, response.text
        status = live.wait_for_job("alice", response.json()["jobID"], timeout=120)
        assert status["status"] == "successful", client.get(f"/jobs/{status['jobID']}/logs").text
        files = {}
        for link in client.get(f"/jobs/{status['jobID']}/results").json()["daily"]:
            files[link["title"]] = tmp_path / link["title"]
            files[link["title"]].write_bytes(client.get(link["href"]).content)
    expected = reference(product, granules[product], grid)
    unfiltered = reference(product, granules[product], grid, filtered=False)
    assert sorted(files) == [f"{PREFIXES[product]}-{grid}-{day}.nc" for day in sorted(expected)]
    for day, statistics in expected.items():
        with xr.open_dataset(files[f"{PREFIXES[product]}-{grid}-{day}.nc"]) as dataset:
            check_cf(dataset, grid, day, granules[product])
            for name, (mean, count, std) in statistics.items():
                got = {s: dataset[f"{name}_{s}"].values.ravel() for s in ("mean", "count", "std")}
                np.testing.assert_array_equal(got["count"], count)
                np.testing.assert_allclose(got["mean"], mean, rtol=1e-6, equal_nan=True)
                np.testing.assert_allclose(got["std"], std, rtol=1e-6, atol=1e-9, equal_nan=True)
                low, high = PLAUSIBLE[name]
                kept = got["mean"][count > 0]
                assert kept.size > 0
                assert kept.min() >= low, name
                assert kept.max() <= high, name
                if name != "cloud_fraction":  # the flagged outliers would have shown
                    wrong = unfiltered[day][name][0]
                    assert np.nanmax(wrong) > high or np.nanmin(wrong) < low, name


def check_cf(dataset: xr.Dataset, grid_name: str, day: date, paths: list[Path]) -> None:
    """The CF-1.8 description a day's file carries."""
    grid = get_grid(grid_name)
    dlon, dlat = grid.cell_size
    assert dataset.attrs["Conventions"] == "CF-1.8"
    names = [p.name for p in paths if p.name.split(".")[1] == f"A{day:%Y%j}"]
    assert dataset.attrs["input_granules"].split() == names
    assert all(name in dataset.attrs["source"] for name in names)
    assert grid_name in dataset.attrs["history"]
    assert dataset.sizes == {"time": 1, "lat": grid.height, "lon": grid.width, "bnds": 2}
    np.testing.assert_allclose(dataset["lat"], np.linspace(-90, 90, grid.height))
    np.testing.assert_allclose(dataset["lon"], -180 + dlon * np.arange(grid.width))
    assert dataset["lat_bnds"].values[0].tolist() == [-90, -90 + dlat / 2]  # a half cell
    assert dataset["lon_bnds"].values[0].tolist() == [-180 - dlon / 2, -180 + dlon / 2]
    assert dataset["lat"].attrs["standard_name"] == "latitude"
    assert dataset["lon"].attrs["units"] == "degrees_east"
    assert str(dataset["time"].values[0])[:10] == str(day)
    for name, variable in dataset.data_vars.items():
        if name.endswith(("_mean", "_std")):
            assert variable.encoding["_FillValue"] == np.float32(9.96921e36)
            assert variable.attrs["units"]
            assert variable.attrs["standard_name"]
            assert variable.attrs["cell_methods"].startswith("area: time:")


def plain_means(path: Path, dlat: float, dlon: float) -> tuple[np.ndarray, np.ndarray]:
    """Per cell (rows from the north pole, as docs/reductions.md numbers them), the count and
    plain mean of a MOD04_L2 file's valid 550 nm optical depths: pyhdf and numpy only."""
    from pyhdf.SD import SD, SDC

    sd = SD(str(path), SDC.READ)
    try:
        name = next(n for n in ("AOD_550_Dark_Target_Deep_Blue_Combined",
                                "Optical_Depth_Land_And_Ocean") if n in sd.datasets())  # fmt: skip
        sds = sd.select(name)
        stored, attrs = sds.get(), sds.attributes()
        lon, lat = sd.select("Longitude").get(), sd.select("Latitude").get()
    finally:
        sd.end()
    low, high = attrs["valid_range"]
    good = (stored != attrs["_FillValue"]) & (stored >= low) & (stored <= high)
    values = attrs["scale_factor"] * (stored[good].astype(np.float64) - attrs["add_offset"])
    rows, columns = round(180 / dlat) + 1, round(360 / dlon)
    row = np.floor((90 + dlat / 2 - lat[good]) / dlat).astype(int)
    column = np.floor((lon[good] + 180 + dlon / 2) / dlon).astype(int) % columns
    count = np.zeros((rows, columns), int)
    total = np.zeros((rows, columns))
    np.add.at(count, (row, column), 1)
    np.add.at(total, (row, column), values.astype(np.float32).astype(np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return count, total / count


def test_an_order_on_the_real_mod04_gives_each_cells_plain_mean(live, tmp_path):
    """The real Collection 4 granule (Optical_Depth_Land_And_Ocean, 37 valid values) ordered
    through the service on the default grid, against a plain mean computed here."""
    with live.client("alice") as client:
        order = {"granules": {"collections": ["mod04-l2"], "datetime": "2001-03-07"}}
        response = client.post(
            "/processes/modis-aerosol-geos5/execution",
            json={"inputs": order},
            headers={"Prefer": "respond-async"},
        )
        assert response.status_code == 201, response.text
        status = live.wait_for_job("alice", response.json()["jobID"], timeout=120)
        assert status["status"] == "successful", client.get(f"/jobs/{status['jobID']}/logs").text
        (link,) = client.get(f"/jobs/{status['jobID']}/results").json()["daily"]
        assert link["title"] == "aerosol-geos5-0.5x0.625-2001-03-07.nc"
        (tmp_path / link["title"]).write_bytes(client.get(link["href"]).content)
    count, mean = plain_means(REAL_MOD04, 0.5, 0.625)
    assert count.sum() == 37
    with xr.open_dataset(tmp_path / link["title"]) as day:
        assert day.attrs["input_granules"] == REAL_MOD04.name
        got_count = day["aod_550_count"].values[0, ::-1]  # the file's lat ascends
        got_mean = day["aod_550_mean"].values[0, ::-1]
        assert "no quality flag" in day["aod_550_mean"].attrs["comment"]
    np.testing.assert_array_equal(got_count, count)
    filled = count > 0
    np.testing.assert_allclose(got_mean[filled], mean[filled], rtol=1e-6)
    assert np.isnan(got_mean[~filled]).all()
    assert 10 < filled.sum() < 37  # several values share a cell
