"""A target grid: a projection, a cell size and an extent; row 0 is the northern edge.

``cell_index`` is the hot path of registration: it maps millions of swath pixels a second to
the flat index of the cell holding each (relative to the first row of a latitude band), so
a band owner can update its band directly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from nearline.errors import GridError


class Kind(StrEnum):
    """How lon/lat become x/y: a projection nearline computes itself."""

    IGH = "igh"  # Interrupted Goode Homolosine, x/y in metres
    LATLON = "latlon"  # plate carree, x/y are longitude/latitude in degrees


@dataclass(frozen=True)
class Grid:
    """A regular grid of ``width`` x ``height`` cells covering ``extent`` in ``crs`` units."""

    name: str
    kind: Kind
    crs: str
    width: int
    height: int
    extent: tuple[float, float, float, float]  # xmin, ymin, xmax, ymax

    def __post_init__(self) -> None:
        xmin, ymin, xmax, ymax = self.extent
        if self.width < 1 or self.height < 1 or xmax <= xmin or ymax <= ymin:
            raise GridError(
                f"grid {self.name!r}: needs width, height >= 1 and xmin < xmax, ymin < ymax; "
                f"got {self.width}x{self.height} over {self.extent}"
            )

    @property
    def cell_size(self) -> tuple[float, float]:
        xmin, ymin, xmax, ymax = self.extent
        return (xmax - xmin) / self.width, (ymax - ymin) / self.height

    @property
    def crs_is_projected(self) -> bool:
        return self.kind is not Kind.LATLON

    @property
    def cells(self) -> int:
        return self.width * self.height

    def cell_index(
        self,
        lon: np.ndarray,
        lat: np.ndarray,
        *,
        rows: tuple[int, int] | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Flat index ``(row - rows[0]) * width + col`` of each point's cell, -1 outside.

        ``lon``/``lat`` in degrees, any shape (contiguous); the result has their shape.
        """
        from nearline.grid import kernels

        first, stop = rows if rows is not None else (0, self.height)
        flat_lon, flat_lat = np.ravel(lon), np.ravel(lat)
        result = np.empty(flat_lon.size, dtype=np.int64) if out is None else out.ravel()
        kernels.cell_indices(self, flat_lon, flat_lat, result, first, stop)
        return result.reshape(np.shape(lon))

    def coordinates(self) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """Cell-centre x (width,) and y (height,) and the attributes of a CF ``crs`` variable.

        CF has no grid_mapping_name for Goode Homolosine; its ``crs_wkt`` and ``proj4``
        attributes say it for GDAL, pyproj and rioxarray.
        """
        import pyproj

        xmin, _, _, ymax = self.extent
        dx, dy = self.cell_size
        x = xmin + dx * (np.arange(self.width) + 0.5)
        y = ymax - dy * (np.arange(self.height) + 0.5)
        crs = pyproj.CRS.from_user_input(self.crs)
        attrs: dict[str, Any] = {"crs_wkt": crs.to_wkt(), "proj4": self.crs}
        if self.kind is Kind.LATLON:
            attrs["grid_mapping_name"] = "latitude_longitude"
        return x, y, attrs

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["kind"] = self.kind.value
        data["extent"] = list(self.extent)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grid:
        try:
            return cls(
                name=str(data["name"]),
                kind=Kind(data["kind"]),
                crs=str(data["crs"]),
                width=int(data["width"]),
                height=int(data["height"]),
                extent=tuple(float(v) for v in data["extent"]),  # type: ignore[arg-type]
            )
        except (KeyError, ValueError, TypeError) as error:
            raise GridError(f"not a grid description: {data!r} ({error})") from None
