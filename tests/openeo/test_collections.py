"""Collections through the openEO Python client: the gridded ones as data cubes whose
``cube:dimensions`` and bands equal what the composite's own file says; swath collections
listed as what they are, not cubes; another user's collection, or none, a CollectionNotFound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import openeo
import pyproj
import pytest
import xarray as xr
from openeo.rest import OpenEoApiError

from nearline.openeo import DATACUBE, NOT_A_CUBE

from ..live_service import LiveService
from ..service.granules import COLLECTION as SWATH
from ..tiles.gridded import PRIVATE, PUBLIC
from .conftest import connect


def file_bands(composite: Path) -> dict[str, dict[str, str]]:
    """Each band of the composite (its 2-D variables on the grid), with its CF attributes."""
    with xr.open_dataset(composite, mask_and_scale=False) as dataset:
        return {
            name: {k: str(v) for k, v in variable.attrs.items()}
            for name, variable in dataset.data_vars.items()
            if variable.ndim == 2 and "grid_mapping" in variable.attrs
        }


def test_listing_shows_cubes_and_says_which_are_not(alice: openeo.Connection) -> None:
    listed = {collection["id"]: collection for collection in alice.list_collections()}
    assert set(listed) == {PUBLIC, PRIVATE, SWATH}
    assert "cube:dimensions" in listed[PUBLIC]
    assert DATACUBE in listed[PUBLIC]["stac_extensions"]
    swath = listed[SWATH]
    assert "cube:dimensions" not in swath
    assert swath[NOT_A_CUBE].startswith(f"not a data cube: {SWATH}'s items are swath granules")
    assert f"/collections/{SWATH}/items" in swath[NOT_A_CUBE]


def test_cube_dimensions_are_the_composites_grid(
    alice: openeo.Connection, composite: Path, live: LiveService
) -> None:
    described = alice.describe_collection(PUBLIC)
    dimensions = described["cube:dimensions"]
    assert list(dimensions) == ["x", "y", "t", "bands"]
    with xr.open_dataset(composite) as dataset:
        x, y = dataset["x"].values, dataset["y"].values
        crs = pyproj.CRS.from_wkt(dataset["crs"].attrs["crs_wkt"])
    dx, dy = float(x[1] - x[0]), float(y[0] - y[1])  # y runs north to south
    assert dimensions["x"]["step"] == dx
    assert dimensions["y"]["step"] == dy == 8000.0
    assert dimensions["x"]["extent"] == [x[0] - dx / 2, x[-1] + dx / 2]
    assert dimensions["y"]["extent"] == [y[-1] - dy / 2, y[0] + dy / 2]
    for axis in ("x", "y"):
        system = pyproj.CRS.from_json_dict(dimensions[axis]["reference_system"])
        assert system.equals(crs)  # no EPSG code for Goode Homolosine: PROJJSON
    assert dimensions["t"] == {
        "type": "temporal",
        "extent": ["2012-12-12T00:00:00Z", "2012-12-13T23:59:59Z"],  # the two days catalogued
        "step": None,
    }
    bands = file_bands(composite)
    assert dimensions["bands"] == {"type": "bands", "values": list(bands)}
    assert len(bands) == 12
    summaries = described["summaries"]
    assert summaries["eo:bands"] == summaries["bands"]
    for band in summaries["bands"]:
        attrs = bands[band["name"]]
        assert band.get("unit") == attrs.get("units")
        assert band["description"] == attrs["long_name"]
    assert {band["name"]: band.get("unit") for band in summaries["bands"]}["bt4"] == "K"
    assert alice.collection_metadata(PUBLIC).band_names == list(bands)
    common = {band["name"]: band.get("common_name") for band in summaries["bands"]}
    assert (common["refl1"], common["refl2"], common["bt4"]) == ("red", "nir", None)
    metadata = alice.collection_metadata(PUBLIC)
    assert metadata.band_dimension.band_index("red") == list(bands).index("refl1")
    links = {link["rel"]: link["href"] for link in described["links"]}
    assert links["self"] == f"{live.url}/openeo/1.2/collections/{PUBLIC}"
    assert links["alternate"] == f"{live.url}/collections/{PUBLIC}"


def test_a_lat_lon_grid_names_its_epsg_code() -> None:
    from nearline.grid import get_grid
    from nearline.openeo import cube_dimensions

    dimensions = cube_dimensions(get_grid("geos5-0.5x0.625"), None, None, ["t2m"])
    assert dimensions["x"]["reference_system"] == 4326
    assert (dimensions["x"]["extent"], dimensions["x"]["step"]) == ([-180.3125, 179.6875], 0.625)
    assert (dimensions["y"]["extent"], dimensions["y"]["step"]) == ([-90.25, 90.25], 0.5)
    assert np.isclose(dimensions["y"]["step"] * 361, 180.5)


@pytest.mark.parametrize(
    ("user", "collection"), [("alice", "no-such-collection"), ("bob", PRIVATE)]
)
def test_an_unknown_or_anothers_collection_is_not_found(
    live: LiveService, user: str, collection: str
) -> None:
    with pytest.raises(OpenEoApiError) as refused:
        connect(live, user).describe_collection(collection)
    assert (refused.value.http_status_code, refused.value.code) == (404, "CollectionNotFound")
    assert collection in refused.value.message
    assert PRIVATE not in connect(live, "bob").list_collection_ids()
