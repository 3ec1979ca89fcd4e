"""Level 1C granules: values their producer calibrated (the AVHRR GAC FDR: pygac with
PATMOS-x coefficients), stored as packed integers, decoded instead of calibrated.

A block's ``counts`` then hold the stored integers' bit patterns
(:class:`~nearline.swath.StoredScaling`); each channel becomes ``stored * scale_factor +
add_offset`` (CF), NaN at its fill value, in the units the counts path gives: percent for
the solar channels, kelvin for the thermal ones. A channel the instrument lacks (channel 5
of AVHRR/1) is NaN throughout. The reflectances are the producer's: the chain divides them
by the cosine of the solar zenith as it does calibrated counts, and corrects them to the
mean Earth-Sun distance only if the producer has not (``distance_corrected``).
"""

from __future__ import annotations

import numpy as np

from nearline.swath import CH3A, CH3B, ChannelPacking, StoredScaling


def decoded(stored: np.ndarray, packing: ChannelPacking | None, *, signed: bool) -> np.ndarray:
    """Physical values (float32) of one channel's stored integers (uint16 bit patterns)."""
    if packing is None:
        return np.full(stored.shape, np.nan, np.float32)
    integers = stored.view(np.int16) if signed else stored
    values = (integers * packing.scale + packing.offset).astype(np.float32)
    if packing.fill is not None:
        values[integers == packing.fill] = np.nan
    return values


def decode(counts: np.ndarray, scaling: StoredScaling, out: np.ndarray | None = None) -> np.ndarray:
    """(5, n, 409) float32 of a block's stored values: channels 1 and 2 percent, 3b, 4 and 5
    kelvin (slot 3 as 3b on every line: :func:`decode_3a` clears the lines that carry 3a)."""
    result = np.empty(counts.shape, np.float32) if out is None else out
    for slot, packing in enumerate(scaling.channels):
        result[slot] = decoded(counts[slot], packing, signed=scaling.signed)
    return result


def decode_3a(
    counts: np.ndarray,
    scaling: StoredScaling,
    ch3_select: np.ndarray | None,
    thermal: np.ndarray,
) -> np.ndarray:
    """Channel 3a's reflectance (percent, (n, 409) float32) on the lines that carry it, NaN
    on the others; on every line that does not carry 3b, ``thermal`` (the slot decoded as
    3b) becomes NaN, as :func:`~nearline.composite._calibration.channel3a` does for counts."""
    out = np.full(counts.shape[1:], np.nan, np.float32)
    if ch3_select is None:  # 3b on every line
        return out
    on_3a = ch3_select == CH3A
    if on_3a.any():
        out[on_3a] = decoded(counts[2, on_3a], scaling.ch3a, signed=scaling.signed)
    thermal[ch3_select != CH3B] = np.nan
    return out
