"""The avhrr-l1c reader on an AVHRR/3 FDR written here as pygac-fdr writes one (NOAA-19 by day:
channels 3a and 3b by line, channel 5, a global quality flag), beyond the one real file
(AVHRR/1, night): the slot-3 switch, the packing of every channel, and the chain's decoding."""

from __future__ import annotations

import math
from pathlib import Path

import netCDF4
import numpy as np
import pytest

from nearline.composite._ancillary import Ancillary
from nearline.composite._calibration import calibrate, channel3a, line_calibration
from nearline.composite._observe import BAD_CALIBRATION, observe
from nearline.swath import CH3A, CH3B, N_PIXELS, describe_granule, open_granule

LINES = 12
ON_3A = 6  # lines 0-5 carry 3a (by day), 6-11 carry 3b
PACKED = {  # variable: (dtype, scale, offset, value on every pixel; None: the slot's lines)
    "reflectance_channel_1": ("i2", 0.01, 0.0, 20.0),
    "reflectance_channel_2": ("i2", 0.01, 0.0, 30.0),
    "reflectance_channel_3a": ("i2", 0.01, 0.0, 15.0),
    "brightness_temperature_channel_3b": ("i2", 0.01, 273.15, 290.0),
    "brightness_temperature_channel_4": ("i2", 0.01, 273.15, 280.0),
    "brightness_temperature_channel_5": ("i2", 0.01, 273.15, 279.0),
    "solar_zenith_angle": ("i2", 0.01, 0.0, 50.0),
    "sensor_zenith_angle": ("i2", 0.01, 0.0, None),
    "sun_sensor_azimuth_difference_angle": ("i2", 0.01, 0.0, 100.0),
    "latitude": ("i4", 0.001, 0.0, None),
    "longitude": ("i4", 0.001, 0.0, None),
}


def write_fdr(path: Path) -> Path:
    """A day-time NOAA-19 FDR over the eastern Pacific, laid out as pygac-fdr's writer lays
    one out (int16 channels and angles, int32 geolocation, fill -32767 and -2147483648)."""
    line, pixel = np.mgrid[0:LINES, 0:N_PIXELS].astype(np.float64)
    computed = {
        "latitude": 10 + 0.03 * line,
        "longitude": -150 + 0.06 * pixel,
        "sensor_zenith_angle": np.abs(pixel - 204) / 204 * 68,
    }
    with netCDF4.Dataset(path, "w") as dataset:
        dataset.setncatts({
            "Conventions": "CF-1.8 ACDD-1.3", "title": "AVHRR GAC L1C FDR",
            "id": "DOI:10.5676/EUM/AVHRR_GAC_L1C_FDR/V0100", "processing_level": "1C",
            "platform": "Earth Observation Satellites > NOAA POES > NOAA-19",
            "instrument": "Earth Remote Sensing Instruments > Passive Remote Sensing > "
            "Spectrometers/Radiometers > Imaging Spectrometers/Radiometers > AVHRR",
            "time_coverage_start": "20090602T000000Z", "time_coverage_end": "20221231T235959Z",
            "sun_earth_distance_correction_factor": 1.03,
        })  # fmt: skip
        dataset.createDimension("y", LINES)
        dataset.createDimension("x", N_PIXELS)
        time = dataset.createVariable("acq_time", "f8", ("y",))
        time.setncatts({"standard_name": "time", "units": "seconds since 1970-01-01"})
        time[:] = 1_371_000_000 + 0.5 * np.arange(LINES)
        for name, (dtype, scale, offset, value) in PACKED.items():
            fill = -32767 if dtype == "i2" else -2147483648
            variable = dataset.createVariable(name, dtype, ("y", "x"), fill_value=fill)
            units = {"latitude": "degrees_north", "longitude": "degrees_east"}.get(name, "degrees")
            units = "%" if "reflectance" in name else "K" if "temperature" in name else units
            variable.setncatts({"scale_factor": scale, "add_offset": offset, "units": units})
            values = np.ma.masked_array(computed[name] if value is None else
                                        np.full(line.shape, value))  # fmt: skip
            if name.endswith("3a"):
                values[ON_3A:] = np.ma.masked
            if name.endswith("3b"):
                values[:ON_3A] = np.ma.masked
            variable[:] = values
        quality = dataset.createVariable("global_quality_flag", "u1")
        quality.setncatts({"flag_values": np.arange(6, dtype=np.uint8),
                           "flag_meanings": "ok invalid_timestamp too_short too_long duplicate "
                           "redundant"})  # fmt: skip
        quality.assignValue(2)
    return path


@pytest.fixture
def fdr(tmp_path) -> Path:
    return write_fdr(tmp_path / "AVHRR-GAC_FDR_1C_N19_test.nc")


def test_it_is_named_and_timed_as_the_fdr_says_and_its_quality_flag_recorded(fdr):
    summary = describe_granule(fdr)
    assert (summary.reader, summary.product, summary.platform, summary.instrument) == (
        "avhrr-l1c", "AVHRR_GAC_L1C_FDR", "noaa19", "avhrr"
    )  # fmt: skip
    assert (summary.end - summary.start).total_seconds() == 5.5  # the lines, not the record
    assert summary.warnings == (
        "global_quality_flag is too_short: the FDR advises not to use it",
    )  # fmt: skip


def test_slot_3_carries_3a_or_3b_line_by_line_with_each_packing(fdr):
    with open_granule(fdr) as granule:
        telemetry = granule.read_telemetry()
        block = granule.read(0, LINES)
    want = [CH3A] * ON_3A + [CH3B] * (LINES - ON_3A)
    assert telemetry.ch3_select.tolist() == want
    scaling = telemetry.scaling
    assert scaling.ch3a.quantity == "reflectance"
    assert scaling.channels[4].offset == 273.15
    stored = block.counts.view(np.int16)
    assert (stored[2, :ON_3A] == 1500).all()  # 15 % as 3a
    assert (stored[2, ON_3A:] == 1685).all()  # 290 K as 3b: (290 - 273.15) / 0.01


def test_the_chain_decodes_every_channel_and_normalises_reflectances_once(fdr):
    with open_granule(fdr) as granule:
        calibration = line_calibration(granule.read_telemetry(), granule.platform)
        block = granule.read(0, LINES)
    values = calibrate(block.counts, calibration)
    reflectance3a = channel3a(block.counts, calibration, values)
    np.testing.assert_allclose(reflectance3a[:ON_3A], 15.0, rtol=1e-6)
    assert np.isnan(reflectance3a[ON_3A:]).all()
    assert np.isnan(values[2, :ON_3A]).all()
    for slot, kelvin in ((2, 290.0), (3, 280.0), (4, 279.0)):
        np.testing.assert_allclose(values[slot, ON_3A:], kelvin, rtol=1e-6)
    observed = observe(block, calibration, Ancillary.load())
    cosine = math.cos(math.radians(50.0))  # the file's reflectances are at the mean distance
    np.testing.assert_allclose(observed.refl2, 30.0 / cosine, rtol=1e-5)
    np.testing.assert_allclose(observed.refl3a[:ON_3A], 15.0 / cosine, rtol=1e-5)
    assert not (observed.qc & BAD_CALIBRATION).any()
    assert (observed.ndvi > 0).all()
