"""Collections as openEO sees them: a gridded collection (its items name a grid) as a data
cube, with ``cube:dimensions`` (x and y on the grid's CRS, t, bands) and its bands' names,
descriptions and units in ``summaries``, all from the catalogue; any other collection (swath
granules) as what it is, not a cube, saying so rather than inventing a grid for it.

The documents start from the catalogue's own STAC Collection (``collection_to_stac``, with
links into the STAC API for its items and queryables) and put the openEO face's links
(``self``, ``parent``, ``root``) in place of the STAC API's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from typing import Any
from urllib.parse import quote

from nearline.archive import rfc3339
from nearline.grid import Grid

DATACUBE = "https://stac-extensions.github.io/datacube/v2.2.0/schema.json"
EO = "https://stac-extensions.github.io/eo/v1.1.0/schema.json"
NOT_A_CUBE = "nearline:not_a_cube"
JSON = "application/json"
OWN_RELATIONS = {"self", "parent", "root"}


@cache
def reference_system(crs: str) -> int | dict[str, Any]:
    """A grid's CRS as the datacube extension takes it: its EPSG code where it has one (the
    lat-lon grids: 4326), else PROJJSON (the Goode Homolosine grids, which have none).

    Parameters
    ----------
    crs
        The grid's PROJ string or EPSG name (``Grid.crs``).
    """
    import pyproj

    found = pyproj.CRS.from_user_input(crs)
    return found.to_epsg() or found.to_json_dict()


def cube_dimensions(grid: Grid, start: datetime | None, end: datetime | None,
                    bands: Sequence[str]) -> dict[str, Any]:  # fmt: skip
    """A gridded collection's ``cube:dimensions``: x and y span the grid's cells' edges in its
    CRS, one cell a step; t spans the items' time (irregular: daily composites need not be
    contiguous); bands are the items' bands, in file order.

    Parameters
    ----------
    grid
        The grid its items name.
    start, end
        The first and last instants of its items.
    bands
        The band variables of its items.
    """
    xmin, ymin, xmax, ymax = grid.extent
    dx, dy = grid.cell_size
    system = reference_system(grid.crs)
    return {
        "x": {"type": "spatial", "axis": "x", "extent": [xmin, xmax], "step": dx,
              "reference_system": system},
        "y": {"type": "spatial", "axis": "y", "extent": [ymin, ymax], "step": dy,
              "reference_system": system},
        "t": {"type": "temporal", "extent": [rfc3339(start), rfc3339(end)], "step": None},
        "bands": {"type": "bands", "values": list(bands)},
    }  # fmt: skip


# the common names (STAC eo; openEO's ndvi looks for red and nir) of the composites' AVHRR
# bands: channel 1 (0.58-0.68 um) is red, channel 2 (0.725-1.0 um) near infrared
COMMON_NAMES = {"refl1": "red", "refl2": "nir"}


def band_summaries(bands: Sequence[str], units: Mapping[str, str],
                   long_names: Mapping[str, str]) -> list[dict[str, str]]:  # fmt: skip
    """Each band's name, and its description and unit where the catalogue has them (CF
    ``long_name`` and ``units``), and its common name where it has one."""
    described = []
    for name in bands:
        band = {"name": name}
        if name in COMMON_NAMES:
            band["common_name"] = COMMON_NAMES[name]
        if name in long_names:
            band["description"] = long_names[name]
        if name in units:
            band["unit"] = units[name]
        described.append(band)
    return described


def _own_links(stac: dict[str, Any], base: str) -> list[dict[str, Any]]:
    """The STAC document's links with the openEO face's self, parent and root in place of
    the STAC API's, and the STAC API's collection as an alternate."""
    href = f"{base}/collections/{quote(stac['id'], safe='')}"
    title = stac.get("title") or stac["id"]
    kept = [link for link in stac.get("links", []) if link.get("rel") not in OWN_RELATIONS]
    stac_api = next(
        (link["href"] for link in stac.get("links", []) if link.get("rel") == "self"), None
    )
    alternate = (
        [{"rel": "alternate", "type": JSON, "title": f"{title} in the STAC API", "href": stac_api}]
        if stac_api else []
    )  # fmt: skip
    return [
        {"rel": "self", "type": JSON, "title": title, "href": href},
        {"rel": "parent", "type": JSON, "title": "The openEO back-end", "href": f"{base}/"},
        {"rel": "root", "type": JSON, "title": "The openEO back-end", "href": f"{base}/"},
        *alternate,
        *kept,
    ]


def cube_collection(stac: dict[str, Any], base: str, *, grid: Grid, bands: Sequence[str],
                    units: Mapping[str, str], long_names: Mapping[str, str],
                    start: datetime | None, end: datetime | None) -> dict[str, Any]:  # fmt: skip
    """A gridded collection's openEO document: its STAC Collection with ``cube:dimensions``
    and the bands in ``summaries`` (``bands``, STAC 1.1's, and ``eo:bands``, which openEO
    clients read), the datacube and EO extensions declared.

    Parameters
    ----------
    stac
        The catalogue's STAC Collection of it.
    base
        The openEO face's root URL.
    grid, bands, units, long_names
        What its items say: the grid, the band variables, their CF units and long names.
    start, end
        The first and last instants of its items.
    """
    described = band_summaries(bands, units, long_names)
    extensions = [*stac.get("stac_extensions", []), DATACUBE, EO]
    return {
        **stac,
        "stac_extensions": list(dict.fromkeys(extensions)),
        "cube:dimensions": cube_dimensions(grid, start, end, bands),
        "summaries": {**stac.get("summaries", {}), "bands": described, "eo:bands": described},
        "links": _own_links(stac, base),
    }


def not_a_cube(stac: dict[str, Any], base: str, *, why: str) -> dict[str, Any]:
    """A collection openEO cannot load as a data cube, as its listing shows it: no
    ``cube:dimensions``, and ``nearline:not_a_cube`` saying ``why`` (what
    ``load_collection`` will answer too).

    Parameters
    ----------
    stac, base
        As :func:`cube_collection` takes them.
    why
        Why it is not a cube, and what to do instead.
    """
    return {**stac, "summaries": stac.get("summaries", {}), NOT_A_CUBE: why,
            "links": _own_links(stac, base)}  # fmt: skip


def swath_collection(stac: dict[str, Any], base: str, *, root: str) -> dict[str, Any]:
    """A collection whose items name no grid (swath granules): not a cube, and where its
    granules are found instead (:func:`not_a_cube`).

    Parameters
    ----------
    stac, base
        As :func:`cube_collection` takes them.
    root
        The service's root URL (its STAC API).
    """
    items = f"{root}/collections/{quote(stac['id'], safe='')}/items"
    why = (
        f"not a data cube: {stac['id']}'s items are swath granules on no grid, which openEO's "
        f"load_collection cannot load; search them through the STAC API ({items}), or "
        "composite them onto a grid (nearline composite) and load the composites' collection"
    )
    return not_a_cube(stac, base, why=why)
