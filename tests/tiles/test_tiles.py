"""Map tiles of a composite (nearline.tiles), held to numpy and pyproj's sampling of the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from nearline.grid import get_grid
from nearline.tiles import MapTiles, TileCache, TileNotFound, UnknownStyle, level_grid
from nearline.tiles._matrices import tile_matrix_set

from .sampling import expected_level, expected_values, legend_colours, pixels

# pixels whose cell PROJ's igh and nearline's tabulated kernel (< 0.12 m apart) may place on
# either side of a cell edge, and values on either side of a colour step in float32
AGREE = 0.995


@pytest.fixture
def tiles(tmp_path: Path) -> MapTiles:
    return MapTiles(tmp_path / "tiles")


def seen_tile(path: Path, matrix_set: str, zoom: int) -> tuple[int, int]:
    """(row, col) of the tile holding the composite's middle observed cell."""
    with netCDF4.Dataset(path) as dataset:
        seen = np.argwhere(~np.ma.getmaskarray(dataset["ndvi"][:]))
    lon, lat = get_grid("igh-8km").centre_lonlat()
    row, col = seen[len(seen) // 2]
    tile = tile_matrix_set(matrix_set).tile(lon[row, col], lat[row, col], zoom)
    return tile.y, tile.x


def agreement(drawn: np.ndarray, expected: np.ndarray) -> float:
    both_nan = np.isnan(drawn) & np.isnan(expected)
    close = np.isclose(drawn, expected, rtol=1e-5, atol=1e-6)
    return float(np.mean(both_nan | close))


@pytest.mark.parametrize(
    ("matrix_set", "zoom", "band", "level"),
    [
        ("WebMercatorQuad", 0, "ndvi-index", 4),  # the whole world from a coarse overview
        ("WebMercatorQuad", 3, "bt4", 1),
        ("WebMercatorQuad", 6, "ndvi-index", 0),  # the composite's own cells
        ("WorldCRS84Quad", 2, "refl2", 1),
    ],
)
def test_tile_pixels_are_the_files_cells_in_the_legends_colours(
    tiles: MapTiles, composite: Path, matrix_set: str, zoom: int, band: str, level: int
) -> None:
    row, col = seen_tile(composite, matrix_set, zoom)
    drawn = tiles.draw(composite, matrix_set, zoom, row, col, band)
    assert drawn.level == level == expected_level(matrix_set, zoom, row, col)
    expected = expected_values(composite, band, matrix_set, zoom, row, col, level)
    assert np.isfinite(expected).sum() > 1000  # the tile shows data
    assert agreement(drawn.values, expected) >= AGREE
    painted = pixels(drawn.png)
    wanted = legend_colours(tiles.legend(composite, band), expected)
    assert np.mean(np.all(painted == wanted, axis=-1)) >= AGREE
    assert np.all(painted[np.isnan(drawn.values)] == 0)  # nodata is transparent
    # only the window of the level the tile needs is read: at most the tile's own extent
    # in cells of that level (a tile is 256 pixels, each no smaller than the level's cell)
    grid = level_grid(get_grid("igh-8km"), level)
    assert drawn.window[0] * drawn.window[1] < 0.6 * grid.cells or level == 4
    assert drawn.window[0] <= 2 * 256
    assert drawn.window[1] <= 3 * 256


def test_tiles_are_kept_and_a_rewritten_composite_is_drawn_afresh(
    tiles: MapTiles, composite: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.nc"
    shutil.copy(composite, copy)
    row, col = seen_tile(copy, "WebMercatorQuad", 4)
    first = tiles.tile(copy, "WebMercatorQuad", 4, row, col, "ndvi")
    kept = list(tiles.cache.folder.rglob("*.png"))
    assert len(kept) == 1
    assert kept[0].read_bytes() == first
    assert tiles.tile(copy, "WebMercatorQuad", 4, row, col, "ndvi") == first
    with netCDF4.Dataset(copy, "a") as dataset:  # the composite is written again: NDVI 0.8
        ndvi = dataset["ndvi"]
        ndvi[:] = np.ma.where(np.ma.getmaskarray(ndvi[:]), np.ma.masked, 0.8)
    again = pixels(tiles.tile(copy, "WebMercatorQuad", 4, row, col, "ndvi"))
    stores = list((tiles.folder / "overviews").glob("*.zarr"))
    assert [store.stem for store in stores] == [tiles.composite(copy).identity]  # old one gone
    assert not kept[0].exists()  # so are the tiles of the composite before
    green = legend_colours(tiles.legend(copy, "ndvi"), np.array([0.8]))[0]
    shown = again[..., 3] > 0
    assert shown.sum() > 1000
    assert np.all(again[shown] == green)


def test_the_tile_cache_keeps_to_its_budget(tmp_path: Path) -> None:
    cache = TileCache(tmp_path / "png", budget=10_000)
    for n in range(40):
        cache.put(("composite", "WebMercatorQuad", "ndvi", "5", "1", str(n)), bytes(1000))
    held = sum(path.stat().st_size for path in cache.folder.rglob("*.png"))
    assert 0 < held <= 10_000
    assert cache.get(("composite", "WebMercatorQuad", "ndvi", "5", "1", "39")) == bytes(1000)
    assert cache.get(("composite", "WebMercatorQuad", "ndvi", "5", "1", "0")) is None


@pytest.mark.parametrize(
    ("matrix_set", "zoom", "row", "col", "says"),
    [
        ("WebMercatorQuad", 2, 4, 0, "row 4, column 0 is outside matrix 2"),
        ("WebMercatorQuad", 2, 0, -1, "outside matrix 2"),
        ("WorldCRS84Quad", 0, 0, 2, "columns 0 to 1"),
        ("WebMercatorQuad", 12, 0, 0, "it has 0 to 7"),
        ("GoogleCRS84Quad", 0, 0, 0, "served in WebMercatorQuad, WorldCRS84Quad"),
    ],
)
def test_a_tile_outside_the_matrix_is_not_found(
    tiles: MapTiles, composite: Path, matrix_set: str, zoom: int, row: int, col: int, says: str
) -> None:
    with pytest.raises(TileNotFound, match=says) as raised:
        tiles.tile(composite, matrix_set, zoom, row, col)
    assert raised.value.status == 404


@pytest.mark.parametrize("band", ["cloud", "qc", "no-such-band"])
def test_a_band_without_colours_is_a_bad_request(
    tiles: MapTiles, composite: Path, band: str
) -> None:
    with pytest.raises(
        UnknownStyle, match=f"band '{band}' is not drawn.*ndvi-index, ndvi"
    ) as raised:
        tiles.tile(composite, "WebMercatorQuad", 0, 0, 0, band)
    assert raised.value.status == 400


def stores(folder: Path) -> list[str]:
    return sorted(path.name for path in (folder / "overviews").glob("*.zarr"))


def test_overviews_past_their_budget_go_least_recently_opened_first(
    tmp_path: Path, composite: Path
) -> None:
    days = []
    for number in range(3):
        copy = tmp_path / f"day-{number}.nc"
        shutil.copyfile(composite, copy)
        days.append(copy)
    roomy = MapTiles(tmp_path / "tiles")
    for day in days[:2]:
        roomy.overviews(day)
    (first, second) = (roomy.overviews(day).path for day in days[:2])
    one_store = sum(f.stat().st_blocks * 512 for f in first.rglob("*") if f.is_file())
    assert one_store > 1_000_000  # a store worth bounding
    # another server, room for little more than one store, opens the third day
    tight = MapTiles(tmp_path / "tiles", overview_bytes=int(one_store * 1.5))
    third = tight.overviews(days[2]).path
    assert stores(tmp_path / "tiles") == [third.name]
    # the first server draws from a store swept under it: made again, the same tile
    row, col = seen_tile(days[0], "WebMercatorQuad", 2)
    again = roomy.draw(days[0], "WebMercatorQuad", 2, row, col, "ndvi-index")
    fresh = MapTiles(tmp_path / "fresh").draw(days[0], "WebMercatorQuad", 2, row, col, "ndvi-index")
    assert again.level == fresh.level > 0
    assert np.array_equal(again.values, fresh.values, equal_nan=True)
    assert np.isfinite(again.values).sum() > 1000
    assert first.is_dir()
    assert not second.exists()
