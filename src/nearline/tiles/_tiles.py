"""Map tiles of composites: the one object a server keeps, holding the overviews it has made
and the cache of tiles it has drawn, both in a folder of its own and both bounded."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from nearline.tiles._cache import TileCache
from nearline.tiles._matrices import check_tile
from nearline.tiles._overviews import Overviews, OverviewsGone, sweep_overviews
from nearline.tiles._render import Drawn, draw
from nearline.tiles._sources import Composite, Source, earlier_states, local_source
from nearline.tiles._styles import Style, drawable, style_of

CACHE_BYTES = 512 * 2**20
OVERVIEW_BYTES = 4 * 2**30  # some 60 days of 8 km composites' overviews
KEPT_OPEN = 32  # composites whose description and overviews are kept at hand


class MapTiles:
    """Tiles of composite files, drawn from overviews made once per file, kept on disk.

    Parameters
    ----------
    folder
        Where overviews (``overviews/``) and drawn tiles (``png/``) are kept; beside the
        service's data, say.
    cache_bytes
        What the drawn tiles may take on disk.
    overview_bytes
        What the overviews may take on disk (the least recently opened go past it, but
        never those this object has open).
    """

    def __init__(
        self, folder: Path, *, cache_bytes: int = CACHE_BYTES, overview_bytes: int = OVERVIEW_BYTES
    ) -> None:
        self.folder = folder
        self.cache = TileCache(folder / "png", cache_bytes)
        self.overview_bytes = overview_bytes
        self._open: dict[str, tuple[Composite, Overviews | None]] = {}

    def composite(self, source: Source | Path) -> Composite:
        """The composite ``source`` (:class:`NotAComposite` if it is none)."""
        return self._entry(source)[0]

    def bands(self, source: Source | Path) -> list[str]:
        """What the tiles of the composite ``source`` can show: the NDVI index (when it has
        red and near-infrared bands) and its bands that have a colour ramp."""
        composite = self.composite(source)
        return drawable(list(composite.bands), has_index=composite.has_index)

    def style(self, source: Source | Path, band: str | None) -> Style:
        """The colouring of ``band`` (None: the NDVI index) in the composite ``source``."""
        return style_of(band, self.bands(source))

    def legend(self, source: Source | Path, band: str | None) -> dict[str, Any]:
        """The legend of ``band``'s tiles, as JSON."""
        return self.style(source, band).legend()

    def overviews(self, source: Source | Path) -> Overviews:
        """The composite's overviews, made on first use."""
        composite, overviews = self._entry(source)
        if overviews is None:
            overviews = Overviews(composite, self.folder / "overviews", self.bands(source))
            overviews.mark_used()
            self._open[composite.identity] = (composite, overviews)
            held = [kept.path for _, kept in self._open.values() if kept is not None]
            sweep_overviews(self.folder / "overviews", self.overview_bytes, keep=held)
        return overviews

    def tile(
        self,
        source: Source | Path,
        matrix_set: str,
        zoom: int,
        row: int,
        col: int,
        band: str | None = None,
    ) -> bytes:
        """A PNG tile of the composite ``source``, from the cache if it was drawn before.

        Parameters
        ----------
        source
            The composite: where its bytes are (:class:`Source`), or its file's path.
        matrix_set
            ``WebMercatorQuad`` or ``WorldCRS84Quad``.
        zoom, row, col
            The tile matrix (zoom level), row and column.
        band
            A band or ``ndvi-index`` (None: the NDVI index).

        Raises
        ------
        TileNotFound
            The tile is not in the set, or deeper than served (a 404).
        UnknownStyle
            The band is not drawn (a 400).
        NotAComposite
            The file is not a composite (a 404).
        """
        check_tile(matrix_set, zoom, row, col)
        style = self.style(source, band)
        identity = self.composite(source).identity
        key = (identity, matrix_set, style.band, str(zoom), str(row), str(col))
        png = self.cache.get(key)
        if png is None:
            png = self.draw(source, matrix_set, zoom, row, col, band).png
            self.cache.put(key, png)
        return png

    def draw(
        self,
        source: Source | Path,
        matrix_set: str,
        zoom: int,
        row: int,
        col: int,
        band: str | None = None,
    ) -> Drawn:
        """Draw a tile afresh (no cache): :meth:`tile`'s parameters, with what it read. If
        another server swept the overviews while they were read, they are made again."""
        style = self.style(source, band)
        try:
            return draw(self.overviews(source), style, matrix_set, zoom, row, col)
        except OverviewsGone:
            composite = self.composite(source)
            self._open[composite.identity] = (composite, None)
            return draw(self.overviews(source), style, matrix_set, zoom, row, col)

    def _entry(self, source: Source | Path) -> tuple[Composite, Overviews | None]:
        if not isinstance(source, Source):
            source = local_source(source)
        identity = source.identity
        if identity not in self._open:
            if len(self._open) >= KEPT_OPEN:
                self._open.pop(next(iter(self._open)))
            self._open[identity] = (Composite.open(source), None)
            if self.cache.folder.is_dir():  # tiles of the file before it was written again
                for stale in earlier_states(self.cache.folder, identity):
                    shutil.rmtree(stale, ignore_errors=True)
        return self._open[identity]
