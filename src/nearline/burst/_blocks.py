"""Checking what a model hands to ``write`` before anything leaves the compute rank."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nearline.errors import BurstInputError, LayoutError
from nearline.layout import check_name

SUPPORTED = tuple(
    np.dtype(t)
    for t in (
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
    )
)
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def as_block(array: Any, *, name: str) -> np.ndarray:
    """Return ``array`` as a native-endian numpy array of a supported dtype (no copy if can)."""
    if isinstance(array, bool | np.bool_):
        raise BurstInputError(f"variable {name!r}: booleans are not stored; write an int8 0/1")
    block = np.asarray(array)
    if block.dtype.newbyteorder("=") not in SUPPORTED:
        raise _unsupported(name, block.dtype)
    if not block.dtype.isnative:
        block = block.astype(block.dtype.newbyteorder("="))
    return block


def check_names(file: str, name: str) -> None:
    try:
        check_name(file)
    except LayoutError as error:
        raise BurstInputError(str(error)) from None
    if not isinstance(name, str) or not _VARIABLE.match(name) or name == "step":
        raise BurstInputError(
            f"variable name {name!r} is not usable: start with a letter or '_', then letters, "
            "digits or '_' ('step' is taken by the step coordinate)"
        )


@dataclass(frozen=True)
class Placement:
    """Where a block goes, checked: its start and global shape (None and its own shape for a
    per-rank variable) and its dimension names."""

    start: tuple[int, ...] | None
    global_shape: tuple[int, ...]
    dims: tuple[str, ...]


def placement(
    file: str,
    name: str,
    block_shape: tuple[int, ...],
    start: Sequence[int] | None,
    shape: Sequence[int] | None,
    dims: Sequence[str] | None,
) -> Placement:
    """Check a block's names and place, remembering the answer: a model hands over the same
    variables in the same layout every step, and the checks cost more than the rest of a lent
    block's hand-off. (Lists are taken as tuples; anything else unhashable is checked anew.)"""
    key = (file, name, block_shape, _frozen(start), _frozen(shape), _frozen(dims))
    try:
        return _remembered_placement(key)
    except TypeError:
        return _placement(key)


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _placement(key: tuple) -> Placement:
    """``placement`` of ``key``: (file, name, block shape, start, global shape, dims)."""
    file, name, block_shape, start, shape, dims = key
    check_names(file, name)
    block_start, global_shape = place(block_shape, name=name, start=start, shape=shape)
    return Placement(block_start, global_shape, check_dims(dims, name=name, ndim=len(block_shape)))


_remembered_placement = functools.lru_cache(maxsize=4096)(_placement)


def lendable(dtype: Any, *, name: str) -> np.dtype:
    """The native-endian dtype a ``buffer`` of ``dtype`` is lent as; refused if unsupported."""
    try:
        native = _native_supported(dtype)
    except TypeError as error:  # not a dtype at all
        raise BurstInputError(f"variable {name!r}: {dtype!r} is not a dtype ({error})") from None
    if native is None:
        raise _unsupported(name, np.dtype(dtype))
    return native


@functools.lru_cache(maxsize=64)
def _native_supported(dtype: Any) -> np.dtype | None:
    native = np.dtype(dtype).newbyteorder("=")
    return native if native in SUPPORTED else None


def _unsupported(name: str, dtype: np.dtype) -> BurstInputError:
    allowed = ", ".join(str(t) for t in SUPPORTED)
    return BurstInputError(
        f"variable {name!r} has dtype {dtype}, which burst does not store; "
        f"convert it to one of {allowed}"
    )


def place(
    block_shape: tuple[int, ...],
    *,
    name: str,
    start: Sequence[int] | None,
    shape: Sequence[int] | None,
) -> tuple[tuple[int, ...] | None, tuple[int, ...]]:
    """Return (start, global shape) after checking the block lies inside the global shape."""
    if start is None and shape is None:
        return None, block_shape
    if start is None or shape is None:
        raise BurstInputError(
            f"variable {name!r}: give both start= and shape= for a block of a global variable, "
            "or neither for a per-rank variable"
        )
    start, shape = tuple(int(s) for s in start), tuple(int(n) for n in shape)
    if not len(start) == len(shape) == len(block_shape):
        raise BurstInputError(
            f"variable {name!r}: block is {len(block_shape)}-D but start={start} and shape={shape}"
        )
    for axis, (s, n, total) in enumerate(zip(start, block_shape, shape, strict=True)):
        if s < 0 or s + n > total:
            raise BurstInputError(
                f"variable {name!r}: block {block_shape} at start {start} lies outside the "
                f"global shape {shape} on axis {axis} ({s}..{s + n} not within 0..{total})"
            )
    return start, shape


def check_dims(dims: Sequence[str] | None, *, name: str, ndim: int) -> tuple[str, ...]:
    if dims is None:
        return tuple(f"{name}_dim{axis}" for axis in range(ndim))
    dims = tuple(dims)
    if "step" in dims:
        raise BurstInputError(
            f"variable {name!r}: 'step' cannot name a dimension; it is the step coordinate"
        )
    if len(dims) != ndim or not all(isinstance(d, str) and _VARIABLE.match(d) for d in dims):
        raise BurstInputError(
            f"variable {name!r}: dims={dims!r} must be {ndim} names (letters, digits, '_')"
        )
    return dims


def check_attrs(attrs: Mapping[str, Any] | None, *, name: str) -> dict[str, Any]:
    if not attrs:
        return {}
    try:
        json.dumps(attrs)
    except TypeError as error:
        raise BurstInputError(
            f"variable {name!r}: attrs must hold strings, numbers or lists of them ({error})"
        ) from None
    return dict(attrs)
