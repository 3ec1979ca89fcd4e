"""What the three MODIS Level-2 products hold, as their file specifications define it.

The readers need only the names (which SDS are a product's fields, where its geolocation is);
the attribute values (``scale_factor``, ``add_offset``, ``valid_range``, ``_FillValue``) are
what the synthesis writes, and are taken from the Collection 6.1 specifications:
MOD11_L2 from LAADS' file specification, MOD05_L2 and MOD06_L2 from the atmosphere team's CDL
(``MOD05_L2.C6.CDL.fs``, ``MOD06_L2_CDL_fs.txt``). A real file's decoding always uses the
file's own attributes. MODIS scales as ``value = scale_factor * (stored - add_offset)``.

Geolocation is on the 5 km grid, every fifth 1 km line and frame, starting at the third
(``Cell_Along_Swath_Sampling = 3, 2028, 5``): 406 x 270 in MOD05/MOD06, 406 x 271 in MOD11.
"""

from __future__ import annotations

from dataclasses import dataclass

PLATFORMS = {"MOD": "terra", "MYD": "aqua"}
FRAMES = 1354  # 1 km frames across a scan
SCAN_LINES = 10  # 1 km detectors along track in one scan
GEO_STEP = 5  # geolocation every 5th line and frame ...
GEO_FIRST = 2  # ... starting at the third (0-based 2)


@dataclass(frozen=True)
class Field:
    """One SDS: its HDF4 type, grid (``"1km"``/``"5km"``), trailing byte dimension if any,
    and its attributes as the product specification gives them."""

    name: str
    dtype: str  # numpy dtype name
    grid: str
    long_name: str
    units: str
    fill: int | float
    valid_range: tuple[int | float, int | float] | None = None
    scale_factor: float | None = None
    add_offset: float | None = None
    qa_bytes: int = 0  # > 0: a (lines, cells, qa_bytes) byte array of quality flags ...
    qa_dim: str = ""  # ... whose third dimension is called this

    @property
    def is_quality(self) -> bool:
        """Flags, handed out as stored (a real file may still give them a scale_factor 1)."""
        return self.qa_bytes > 0 or self.scale_factor is None


@dataclass(frozen=True)
class Product:
    """A product's fields, dimension names and geolocation columns."""

    short_name: str
    title: str
    dims: dict[str, str]  # grid ("1km", "5km") -> its two HDF dimension names, "along,across"
    geo_columns: int
    fields: tuple[Field, ...]
    swath: str  # the HDF-EOS swath name
    geo: str = "5km"  # the grid Latitude and Longitude are on ...
    geo_first: int = GEO_FIRST  # ... from this 0-based 1 km line and frame ...
    geo_step: int = GEO_STEP  # ... every this many (MOD04_L2: 10 km, from the fifth)

    def field(self, name: str) -> Field:
        for field in self.fields:
            if field.name == name:
                return field
        raise KeyError(name)


def _angles(grid: str = "5km") -> tuple[Field, ...]:
    """The view and sun zenith angles the atmosphere products carry on their geolocation."""
    angle = {"units": "degrees", "fill": -32768, "valid_range": (0, 18000),
             "scale_factor": 0.009999999776482582, "add_offset": 0.0}  # fmt: skip
    return (
        Field("Sensor_Zenith", "int16", grid, "Sensor Zenith Angle, Cell to Sensor", **angle),
        Field("Solar_Zenith", "int16", grid, "Solar Zenith Angle, Cell to Sun", **angle),
    )


def _mod11() -> Product:
    lst = Field("LST", "uint16", "1km", "Land-surface temperature", "K", 0, (7500, 65535),
                0.02, 0.0)  # fmt: skip
    qc = Field("QC", "uint8", "1km", "Quality control for LST and emissivity", "none", 0,
               (0, 255))  # fmt: skip
    return Product(
        short_name="MOD11_L2",
        title="MODIS/TERRA LAND SURFACE TEMPERATURE/EMISSIVITY 5-MIN L2 SWATH 1KM",
        dims={
            "1km": "Along_swath_lines_1km:MOD_Swath_LST,Cross_swath_pixels_1km:MOD_Swath_LST",
            "5km": "Coarse_swath_lines_5km:MOD_Swath_LST,Coarse_swath_pixels_5km:MOD_Swath_LST",
        },
        geo_columns=271,
        fields=(lst, qc),
        swath="MOD_Swath_LST",
    )


def _mod06() -> Product:
    return Product(
        short_name="MOD06_L2",
        title="MODIS Level 2 Cloud Properties",
        dims={
            "1km": "Cell_Along_Swath_1km:mod06,Cell_Across_Swath_1km:mod06",
            "5km": "Cell_Along_Swath_5km:mod06,Cell_Across_Swath_5km:mod06",
        },
        geo_columns=270,
        fields=(
            Field(
                "Cloud_Fraction",
                "int8",
                "5km",
                "Cloud Fraction in Retrieval Region (5x5 1-km Pixels) from 1-km Cloud Mask",
                "none",
                127,
                (0, 100),
                0.009999999776482582,
                0.0,
            ),
            Field(
                "Cloud_Top_Pressure",
                "int16",
                "5km",
                "Cloud Top Pressure Level (rounded to nearest 5 mb)",
                "hPa",
                -999,
                (10, 11000),
                0.10000000149011612,
                0.0,
            ),
            Field(
                "Cloud_Top_Temperature",
                "int16",
                "5km",
                "Temperature from Ancillary Data at Retrieved Cloud Top Pressure Level",
                "K",
                -32768,
                (0, 20000),
                0.009999999776482582,
                -15000.0,
            ),
            Field(
                "Quality_Assurance_5km",
                "int8",
                "5km",
                "Quality Assurance parameters at 5x5 1-km resolution",
                "none",
                0,
                qa_bytes=10,
                qa_dim="QA_Parameter_5km:mod06",
            ),
            *_angles(),
        ),
        swath="mod06",
    )


def _mod05() -> Product:
    water = {"units": "cm", "fill": -9999, "valid_range": (0, 20000),
             "scale_factor": 0.0010000000474974513, "add_offset": 0.0}  # fmt: skip
    return Product(
        short_name="MOD05_L2",
        title="MODIS Level 2 NIR and IR Total Precipitable Water",
        dims={
            "1km": "Cell_Along_Swath_1km:mod05,Cell_Across_Swath_1km:mod05",
            "5km": "Cell_Along_Swath_5km:mod05,Cell_Across_Swath_5km:mod05",
        },
        geo_columns=270,
        fields=(
            Field(
                "Water_Vapor_Near_Infrared",
                "int16",
                "1km",
                "Total Column Precipitable Water Vapor - Near Infrared Retrieval",
                **water,
            ),
            Field(
                "Water_Vapor_Infrared",
                "int16",
                "5km",
                "Total Column Precipitable Water Vapor - Infrared Retrieval",
                **water,
            ),
            Field(
                "Quality_Assurance_Near_Infrared",
                "int8",
                "1km",
                "Quality Assurance for Near Infrared Water Vapor",
                "none",
                0,
                qa_bytes=1,
                qa_dim="QA_Bytes_NIR:mod05",
            ),
            Field(
                "Quality_Assurance_Infrared",
                "int8",
                "5km",
                "Quality Assurance for Infrared Water Vapor",
                "none",
                0,
                qa_bytes=5,
                qa_dim="QA_Bytes_IR:mod05",
            ),
            *_angles(),
        ),
        swath="mod05",
    )


def _mod04() -> Product:
    """Collection 6.1 aerosol at 10 km: the combined Dark Target and Deep Blue 550 nm optical
    depth and the older Dark Target land-and-ocean one (both int16, 0.001, -100..5000, fill
    -9999) with its quality flag (0 no confidence .. 3 very good)."""
    aod = {"units": "None", "fill": -9999, "valid_range": (-100, 5000),
           "scale_factor": 0.0010000000474974513, "add_offset": 0.0}  # fmt: skip
    return Product(
        short_name="MOD04_L2",
        title="MODIS Level 2 Aerosol over Land and Ocean",
        dims={"10km": "Cell_Along_Swath:mod04,Cell_Across_Swath:mod04"},
        geo_columns=135,
        fields=(
            Field(
                "AOD_550_Dark_Target_Deep_Blue_Combined",
                "int16",
                "10km",
                "Combined Dark Target, Deep Blue AOT at 0.55 micron for land and ocean.",
                **aod,
            ),
            Field(
                "Optical_Depth_Land_And_Ocean",
                "int16",
                "10km",
                "AOT at 0.55 micron for both ocean (Average) and land (corrected)",
                **aod,
            ),
            Field(
                "Land_Ocean_Quality_Flag",
                "int16",
                "10km",
                "Quality flag for land and ocean aerosol retreivals",
                "None",
                -9999,
                (0, 3),
                1.0,
                0.0,
            ),
            *_angles("10km"),
        ),
        swath="mod04",
        geo="10km",
        geo_first=4,
        geo_step=10,
    )


PRODUCTS: dict[str, Product] = {p.short_name: p for p in (_mod11(), _mod06(), _mod05(), _mod04())}


def product_of(short_name: str) -> Product:
    """The product for a short name, Terra's (``MOD``) or Aqua's (``MYD``)."""
    return PRODUCTS["MOD" + short_name[3:]]
