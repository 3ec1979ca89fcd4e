"""A target grid: a projection, a cell size and an extent; row 0 is the northern edge.

Cell (row, col) covers x in [xmin + col dx, xmin + (col + 1) dx) and y in
(ymax - (row + 1) dy, ymax - row dy]. ``cell_index`` is the hot path of registration: it
maps tens of millions of swath pixels a second to the flat index of the cell holding each
(relative to the first row of a latitude band), so a band owner updates its band directly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from nearline.errors import GridError
from nearline.grid import _igh as igh
from nearline.grid import _latlon as latlon


class Kind(StrEnum):
    """How lon/lat become x/y: a projection nearline computes itself."""

    IGH = "igh"  # Interrupted Goode Homolosine on the sphere R = 6370997 m, x/y in metres
    LATLON = "latlon"  # plate carree, x/y are longitude/latitude in degrees


_LATLON_PROJ4 = "+proj=longlat +datum=WGS84 +no_defs"  # EPSG:4326 without its axis order


def _degrees(values: Any) -> np.ndarray:
    """A flat contiguous float32/float64 view (or copy) of lon or lat, for the kernels."""
    array = np.asarray(values)
    if array.dtype not in (np.float32, np.float64):
        array = array.astype(np.float64)
    return np.ascontiguousarray(array).ravel()


@dataclass(frozen=True)
class Grid:
    """A regular grid of ``width`` x ``height`` cells covering ``extent`` in ``crs`` units.

    Row 0 is the northern edge. Get the built-in ones by name with ``nearline.grid.get_grid``
    (``"igh-8km"``, ``"igh-1km"``, lat-lon and GEOS-5 grids).

    Parameters
    ----------
    name
        The grid's name, recorded in outputs.
    kind
        Which of nearline's own kernels projects onto it.
    crs
        A PROJ string pyproj understands, for the outputs' CF grid mapping.
    width, height
        Columns and rows, at least 1.
    extent
        (xmin, ymin, xmax, ymax) in ``crs`` units.

    Raises
    ------
    GridError
        No cells, or an empty extent.
    """

    name: str
    kind: Kind
    crs: str
    width: int
    height: int
    extent: tuple[float, float, float, float]  # xmin, ymin, xmax, ymax

    def __post_init__(self) -> None:
        xmin, ymin, xmax, ymax = self.extent
        if self.width < 1 or self.height < 1 or not (xmin < xmax and ymin < ymax):
            raise GridError(
                f"grid {self.name!r}: needs width, height >= 1 and xmin < xmax, ymin < ymax; "
                f"got {self.width}x{self.height} over {self.extent}"
            )

    @property
    def cell_size(self) -> tuple[float, float]:
        """(dx, dy) in CRS units, both positive."""
        xmin, ymin, xmax, ymax = self.extent
        return (xmax - xmin) / self.width, (ymax - ymin) / self.height

    @property
    def cells(self) -> int:
        """``width * height``."""
        return self.width * self.height

    def holds(self, shape: tuple[int, ...]) -> bool:
        """Whether an array of ``shape`` is a band of this grid: its rows and columns last,
        and nothing but dimensions of length one before them (a composite's (y, x) band, a
        GEOS-5 reduction's (time, lat, lon) one with one time), never a coordinate.

        Parameters
        ----------
        shape
            A variable's shape.
        """
        return (
            len(shape) >= 2
            and tuple(shape[-2:]) == (self.height, self.width)
            and all(size == 1 for size in shape[:-2])
        )

    @property
    def crs_is_projected(self) -> bool:
        """Whether x and y are metres (else degrees)."""
        return self.kind is not Kind.LATLON

    @property
    def wraps(self) -> bool:
        """True for a lat-lon grid spanning 360 degrees: longitudes wrap onto it."""
        xmin, _, xmax, _ = self.extent
        return self.kind is Kind.LATLON and abs(xmax - xmin - 360.0) < 1e-9

    def _rows(self, rows: tuple[int, int] | None) -> tuple[int, int]:
        first, stop = (0, self.height) if rows is None else (int(rows[0]), int(rows[1]))
        if not 0 <= first <= stop <= self.height:
            raise GridError(f"rows {rows} are not within the {self.height} rows of {self.name}")
        return first, stop

    def forward(self, lon: Any, lat: Any) -> tuple[np.ndarray, np.ndarray]:
        """Project points onto the grid's plane.

        Parameters
        ----------
        lon, lat
            Degrees, any shape (the same); longitudes beyond ±180 wrap, as PROJ does.

        Returns
        -------
        x, y : numpy.ndarray
            float64, the shape of ``lon``; NaN outside the projection's domain (latitude
            beyond ±90, NaN or infinite input). On a lat-lon grid x is wrapped into
            [xmin, xmin + 360).

        Raises
        ------
        GridError
            ``lon`` and ``lat`` differ in size.
        """
        flat_lon, flat_lat = _degrees(lon), _degrees(lat)
        if flat_lon.size != flat_lat.size:
            raise GridError(f"lon and lat differ in size: {np.shape(lon)} and {np.shape(lat)}")
        x, y = np.empty(flat_lon.size), np.empty(flat_lon.size)
        if self.kind is Kind.IGH:
            igh.forward(flat_lon, flat_lat, x, y)
        else:
            latlon.forward(flat_lon, flat_lat, x, y, self.extent[0], 360.0)
        return x.reshape(np.shape(lon)), y.reshape(np.shape(lon))

    def cell_index(
        self,
        lon: Any,
        lat: Any,
        *,
        rows: tuple[int, int] | None = None,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Flat index ``(row - rows[0]) * width + col`` of each point's cell: registration's
        hot path.

        Parameters
        ----------
        lon, lat
            Degrees, float32 or float64, any shape (contiguous arrays are not copied).
        rows
            Only rows ``[first, stop)`` (a latitude band; default all).
        out
            A flat, contiguous int64 buffer of at least as many elements to reuse; the
            result is then a view of its start.

        Returns
        -------
        numpy.ndarray
            int64, the shape of ``lon``; -1 where a point is outside the grid, outside
            ``rows`` or not on the sphere (NaN, |lat| > 90).

        Raises
        ------
        GridError
            ``lon`` and ``lat`` differ in size, ``rows`` is not within the grid, or ``out``
            does not fit.
        """
        first, stop = self._rows(rows)
        flat_lon, flat_lat = _degrees(lon), _degrees(lat)
        n = flat_lon.size
        if flat_lat.size != n:
            raise GridError(f"lon and lat differ in size: {np.shape(lon)} and {np.shape(lat)}")
        if out is None:
            result = np.empty(n, dtype=np.int64)
        elif out.dtype != np.int64 or out.ndim != 1 or not out.flags.c_contiguous or out.size < n:
            raise GridError(
                f"out must be a flat contiguous int64 array of >= {n} elements; "
                f"got {out.dtype} of shape {out.shape}"
            )
        else:
            result = out[:n]
        xmin, _, _, ymax = self.extent
        dx, dy = self.cell_size
        if self.kind is Kind.IGH:
            igh.cell_indices(
                flat_lon, flat_lat, result, xmin, ymax, dx, dy, self.width, first, stop
            )
        else:
            latlon.cell_indices(
                flat_lon,
                flat_lat,
                result,
                *(xmin, ymax, dx, dy),
                *(self.width, self.height, first, stop, self.wraps),
            )
        return result.reshape(np.shape(lon))

    def northing(self, lat: Any) -> np.ndarray:
        """y of each latitude: in every grid here y depends on latitude alone.

        IGH: sinusoidal y = R phi, Mollweide y -+ 0.0528 R beyond 40°44'11.8".

        Parameters
        ----------
        lat
            Degrees, any shape.

        Returns
        -------
        numpy.ndarray
            y in CRS units (float64), the shape of ``lat``; NaN beyond ±90.
        """
        flat = _degrees(lat)
        if self.kind is Kind.LATLON:
            y = np.where(np.abs(flat) <= 90.0, flat, np.nan).astype(np.float64)
        else:
            y = np.empty(flat.size)
            igh.northing(flat, y)
        return y.reshape(np.shape(lat))

    def row_latitudes(self, *, edges: bool = False) -> np.ndarray:
        """Latitude of each row's centre, or of the row edges, north to south.

        Parameters
        ----------
        edges
            Give the ``height + 1`` edges rather than the ``height`` centres.

        Returns
        -------
        numpy.ndarray
            Degrees, clipped to the poles.
        """
        dy = self.cell_size[1]
        steps = np.arange(self.height + 1) if edges else np.arange(self.height) + 0.5
        y = self.extent[3] - dy * steps
        if self.kind is Kind.LATLON:
            return np.clip(y, -90.0, 90.0)
        return igh.latitude_of_northing(y)

    def latitude_range(self, rows: tuple[int, int]) -> tuple[float, float]:
        """The latitudes a band of rows spans.

        Parameters
        ----------
        rows
            Rows ``[first, stop)``.

        Returns
        -------
        south, north : float
            Degrees.

        Raises
        ------
        GridError
            ``rows`` is not within the grid.
        """
        first, stop = self._rows(rows)
        edges = self.row_latitudes(edges=True)
        return float(edges[stop]), float(edges[first])

    def domain_mask(self, rows: tuple[int, int] | None = None) -> np.ndarray:
        """Which cells lie on the Earth: False in IGH's interruptions and beyond its poles.

        Parameters
        ----------
        rows
            Only rows ``[first, stop)`` (default all).

        Returns
        -------
        numpy.ndarray
            (stop - first, width) booleans, True where a cell's centre is on the Earth (all
            True on a lat-lon grid).
        """
        first, stop = self._rows(rows)
        x, y, _ = self.coordinates()
        if self.kind is Kind.LATLON:
            return np.ones((stop - first, self.width), dtype=bool)
        return igh.domain_mask(x, y[first:stop])

    def centre_lonlat(self, *, step: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Longitude and latitude of the centre of every ``step``-th cell.

        Parameters
        ----------
        step
            Cells between samples, along rows and columns.

        Returns
        -------
        lon, lat : numpy.ndarray
            Degrees, each (ceil(height / step), ceil(width / step)); NaN where the centre is
            off the Earth (IGH's interruptions, beyond its poles).
        """
        xmin, _, _, ymax = self.extent
        dx, dy = self.cell_size
        x = xmin + dx * (np.arange(0, self.width, step) + 0.5)
        y = ymax - dy * (np.arange(0, self.height, step) + 0.5)
        if self.kind is Kind.IGH:
            return igh.inverse(x, y)
        lon = (x + 180.0) % 360.0 - 180.0
        lat = np.clip(y, -90.0, 90.0)
        return np.broadcast_to(lon, (y.size, x.size)).copy(), np.repeat(lat[:, None], x.size, 1)

    def coordinates(self) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """Cell-centre coordinates and the CF grid mapping, for writing the grid to a file.

        CF has no grid_mapping_name for Goode Homolosine, so for IGH the attributes name it
        through ``crs_wkt`` (CF 1.7), ``spatial_ref`` and ``GeoTransform`` (GDAL) and
        ``proj4``; GDAL, pyproj and rioxarray read them.

        Returns
        -------
        x : numpy.ndarray
            (width,) cell-centre x.
        y : numpy.ndarray
            (height,) cell-centre y, north first.
        attrs : dict
            The attributes of a CF grid-mapping (``crs``) variable; ``axis_attributes``
            gives those of x and y.
        """
        import pyproj

        xmin, _, _, ymax = self.extent
        dx, dy = self.cell_size
        x = xmin + dx * (np.arange(self.width) + 0.5)
        y = ymax - dy * (np.arange(self.height) + 0.5)
        crs = pyproj.CRS.from_user_input(self.crs)
        wkt = crs.to_wkt()
        attrs: dict[str, Any] = {
            "crs_wkt": wkt,
            "spatial_ref": wkt,
            "proj4": _LATLON_PROJ4 if self.kind is Kind.LATLON else self.crs,
            "GeoTransform": f"{xmin!r} {dx!r} 0.0 {ymax!r} 0.0 {-dy!r}",
        }
        if self.kind is Kind.LATLON:
            ellipsoid = crs.ellipsoid
            attrs["grid_mapping_name"] = "latitude_longitude"
            attrs["semi_major_axis"] = ellipsoid.semi_major_metre
            attrs["inverse_flattening"] = ellipsoid.inverse_flattening
        else:
            attrs["earth_radius"] = igh.EARTH_RADIUS
        return x, y, attrs

    def axis_attributes(self) -> tuple[dict[str, str], dict[str, str]]:
        """CF attributes of the x and y coordinate variables."""
        if self.kind is Kind.LATLON:
            return (
                {"standard_name": "longitude", "units": "degrees_east", "axis": "X"},
                {"standard_name": "latitude", "units": "degrees_north", "axis": "Y"},
            )
        return (
            {"standard_name": "projection_x_coordinate", "units": "m", "axis": "X"},
            {"standard_name": "projection_y_coordinate", "units": "m", "axis": "Y"},
        )

    def to_dict(self) -> dict[str, Any]:
        """The grid as JSON values; ``from_dict`` reads it back."""
        data = asdict(self)
        data["kind"] = self.kind.value
        data["extent"] = list(self.extent)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grid:
        """A grid from its ``to_dict``.

        Parameters
        ----------
        data
            ``name``, ``kind``, ``crs``, ``width``, ``height`` and ``extent``.

        Raises
        ------
        GridError
            A field is missing or of the wrong kind; the message lists what is expected.
        """
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
            raise GridError(
                f"not a grid description: {data!r} ({error}); expected name, kind "
                f"({', '.join(Kind)}), crs, width, height and extent [xmin, ymin, xmax, ymax]"
            ) from None
