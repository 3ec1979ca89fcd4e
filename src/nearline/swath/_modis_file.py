"""What the MODIS readers share: an HDF4 file open through pyhdf's SD interface, its ECS
identity (short name, platform, time range from ``CoreMetadata.0``), its HDF-EOS structure
(``StructMetadata.0``), and its SDS read and decoded by their own attributes.

A MODIS product holds geophysical fields, not AVHRR counts: the AVHRR compositing calls
(``read``, ``read_telemetry``, ``read_tie_latitudes``) raise :class:`GranuleError` saying so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from nearline.errors import GranuleError
from nearline.swath._base import FieldGranule, Reader
from nearline.swath._modis_ecs import (
    as_unsigned,
    decode,
    ecs_time,
    ecs_value,
    is_flags,
    is_hdf4,
    metadata_text,
    open_sd,
    out_of_scope,
    parse_odl,
    platform_of,
)

REALDATA = "docs/realdata.md lists what it does"


class ModisFile(FieldGranule):
    """An open MODIS HDF4 file with ECS metadata; subclasses say where its pixels are."""

    media_type: ClassVar[str] = "application/x-hdf"
    instrument: ClassVar[str] = "modis"
    kind: ClassVar[str] = "MODIS"  # "Level-2 swath", "gridded": for messages

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sd = open_sd(path)
        try:
            attributes = self._sd.attributes()
            core = metadata_text(attributes, "CoreMetadata")
            struct = metadata_text(attributes, "StructMetadata")
            short_name = ecs_value(core, "SHORTNAME") if core else None
            if core is None or not short_name:
                raise GranuleError(f"granule {path}: no ECS CoreMetadata.0 naming its product")
            if struct is None:
                raise GranuleError(f"granule {path}: no HDF-EOS StructMetadata.0")
            self.attributes = attributes
            self.core = core
            self.struct = parse_odl(struct)
            self.short_name = self.product = short_name
            self.platform = platform_of(core, short_name)
            self.start_time = ecs_time(core, "BEGINNING", path)
            self.end_time = ecs_time(core, "ENDING", path)
            self._setup()
        except GranuleError:
            self.close()
            raise
        except (KeyError, ValueError, IndexError, TypeError) as error:
            self.close()
            raise GranuleError(
                f"granule {path}: its HDF-EOS metadata cannot be understood ({error})"
            ) from None

    def _setup(self) -> None:
        """Read what the subclass needs of the structure; GranuleError if it is not there."""

    fields: tuple[str, ...] = ()

    def _sds(self, name: str) -> Any:
        from pyhdf.error import HDF4Error

        try:
            return self._sd.select(name)
        except HDF4Error:
            raise GranuleError(f"granule {self.path}: has no SDS {name!r}") from None

    def _shape(self, name: str) -> tuple[int, ...]:
        sds = self._sds(name)
        try:
            _, rank, dims, _, _ = sds.info()
        finally:
            sds.endaccess()
        return (int(dims),) if rank == 1 else tuple(int(d) for d in dims)

    def _attributes(self, name: str) -> dict[str, Any]:
        sds = self._sds(name)
        try:
            return sds.attributes()
        finally:
            sds.endaccess()

    def _get(self, name: str) -> tuple[np.ndarray, dict[str, Any]]:
        """An SDS's stored values and attributes; GranuleError if the bytes are not there."""
        from pyhdf.error import HDF4Error

        sds = self._sds(name)
        try:
            return np.asarray(sds.get()), sds.attributes()
        except (HDF4Error, ValueError) as error:  # pyhdf: ValueError("SDreaddata failure")
            raise self._corrupt(name, error) from None
        finally:
            sds.endaccess()

    def _corrupt(self, name: str, error: Exception) -> GranuleError:
        return GranuleError(
            f"granule {self.path}: SDS {name!r} cannot be read ({error}); the file is "
            "truncated or corrupt"
        )

    def verify(self) -> None:
        """Check that every SDS's bytes are there and whole, before the file is catalogued:
        a compressed SDS is decompressed (a damaged stream fails), an uncompressed one has
        its last value read (a truncated one fails). GranuleError naming the file and the
        SDS otherwise. Damage to uncompressed values themselves cannot be seen."""
        from pyhdf.error import HDF4Error

        for name in self._sd.datasets():
            sds = self._sds(name)
            try:
                try:
                    sds.getcompress()
                except HDF4Error:  # not compressed: the last value's bytes must be there
                    _, rank, dims, _, _ = sds.info()
                    last = tuple(int(d) - 1 for d in np.ravel(dims)[:rank])
                    sds[tuple(slice(i, i + 1) for i in last)]
                else:
                    sds.get()
            except (HDF4Error, ValueError) as error:
                raise self._corrupt(name, error) from None
            finally:
                sds.endaccess()

    def read_field(self, name: str) -> np.ndarray:
        """Field ``name`` decoded: float32, NaN where the file holds its ``_FillValue`` or a
        value outside ``valid_range``. Bit flags (an integer SDS without ``scale_factor``, or
        with an inverted ``valid_range``) come back as stored, signed bytes as unsigned."""
        if name not in self.fields:
            raise GranuleError(
                f"granule {self.path}: no field {name!r}; it holds {', '.join(self.fields)}"
            )
        stored, attrs = self._get(name)
        if is_flags(stored.dtype, attrs, stored.shape):
            return as_unsigned(stored)
        return self._decode(stored, attrs)

    def _decode(self, stored: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
        return decode(stored, attrs)

    # -- the AVHRR compositing contract does not apply ----------------------------------------
    def why_no_counts(self) -> str:
        return (
            f"a {self.short_name} {self.kind} product holds geophysical fields, not AVHRR "
            "counts; read them with read_field()"
        )

    def close(self) -> None:
        sd = getattr(self, "_sd", None)
        if sd is not None:
            sd.end()
            self._sd = None


UNOPENABLE = "HDF4 that the HDF4 library cannot open: truncated or corrupt"


def sniff(path: Path) -> tuple[str | None, str | None, dict[str, Any] | None]:
    """(refusal, short name, parsed StructMetadata) of a file: the refusal is None for an
    HDF4 file with ECS metadata naming a product nearline may read. Never raises."""
    if not is_hdf4(path):
        return "not HDF4", None, None
    try:
        sd = open_sd(Path(path))
    except GranuleError:
        return UNOPENABLE, None, None
    try:
        attributes = sd.attributes()
    except Exception:  # an unreadable attribute table is a corrupt file
        return "HDF4 whose attributes cannot be read: truncated or corrupt", None, None
    finally:
        sd.end()
    core = metadata_text(attributes, "CoreMetadata")
    if core is None:
        return "HDF4 without ECS CoreMetadata.0", None, None
    short_name = ecs_value(core, "SHORTNAME")
    if not short_name:
        return "CoreMetadata.0 without a SHORTNAME", None, None
    why = out_of_scope(short_name)
    if why is not None:
        return (
            f"CoreMetadata.0 names {short_name!r}, {why} nearline does not read ({REALDATA})",
            short_name,
            None,
        )
    struct = metadata_text(attributes, "StructMetadata")
    if struct is None:
        return (
            f"CoreMetadata.0 names {short_name!r}, but there is no HDF-EOS StructMetadata.0",
            short_name,
            None,
        )
    try:
        return None, short_name, parse_odl(struct)
    except Exception:
        return f"{short_name!r} with a StructMetadata.0 that cannot be parsed", short_name, None


class ModisReader(Reader):
    """A MODIS HDF4 product family, found by the HDF4 signature, the ECS short name and what
    its StructMetadata.0 declares (``refusal`` says what a family needs there)."""

    @classmethod
    def refusal(cls, short_name: str, struct: dict[str, Any]) -> str | None:
        """Why a file of ``short_name`` with this StructMetadata is not of this family."""
        raise NotImplementedError

    @classmethod
    def _refusal(cls, path: Path) -> str | None:
        why, short_name, struct = sniff(Path(path))
        if why is not None or short_name is None or struct is None:
            return why
        return cls.refusal(short_name, struct)

    @classmethod
    def can_open(cls, path: Path) -> bool:
        """True for a file of this family, and for HDF4 the HDF4 library cannot open, which
        ``open`` then refuses as truncated or corrupt, naming it (no other reader reads
        HDF4, and that says more than that no reader recognises it)."""
        return cls._refusal(path) in (None, UNOPENABLE)

    @classmethod
    def why_not(cls, path: Path) -> str:
        return cls._refusal(path) or "it can"
