"""What an I/O server knows about each output file it is building.

A file is identified by (file group, step, rank): rank is None for an assembled file, whose
variables are put together from blocks sent by every compute rank. Blocks must not overlap
(checked as they arrive) and must cover each variable (checked at flush): a hole or an
overlap is the model's bug, reported with the variable and the offending block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import NamedTuple

import numpy as np

from nearline.burst._base import VariableSpec
from nearline.burst._protocol import WriteRequest
from nearline.errors import BurstError, BurstInputError


class FileKey(NamedTuple):
    file: str
    step: int
    rank: int | None

    def describe(self) -> str:
        who = "assembled" if self.rank is None else f"rank {self.rank}"
        return f"file {self.file!r} step {self.step} ({who})"


def key_of(request: WriteRequest) -> FileKey:
    return FileKey(request.file, request.step, None if request.assembled else request.client)


def _overlaps(a_start, a_shape, b_start, b_shape) -> bool:
    return all(
        s1 < s2 + n2 and s2 < s1 + n1
        for s1, n1, s2, n2 in zip(a_start, a_shape, b_start, b_shape, strict=True)
    )


@dataclass
class VariableState:
    spec: VariableSpec
    blocks: list[tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    covered: int = 0

    @property
    def size(self) -> int:
        return prod(self.spec.shape)


@dataclass
class FileState:
    """Variables declared so far (in first-write order) and how much of each has arrived."""

    key: FileKey
    variables: dict[str, VariableState] = field(default_factory=dict)
    abandoned: list[str] = field(default_factory=list)  # blocks a model granted, never filled

    def accept(self, request: WriteRequest) -> None:
        """Record a block, or raise :class:`BurstInputError` if it contradicts earlier ones."""
        start = request.start or (0,) * len(request.shape)
        state = self.variables.get(request.name)
        if state is None:
            spec = VariableSpec(
                name=request.name,
                dtype=np.dtype(request.dtype),
                shape=request.global_shape,
                dims=request.dims,
                attrs=request.attrs,
            )
            state = self.variables[request.name] = VariableState(spec)
        else:
            self._check_same(state.spec, request)
        for other_start, other_shape in state.blocks:
            if _overlaps(start, request.shape, other_start, other_shape):
                raise BurstInputError(
                    f"{self.key.describe()}: block of {request.name!r} at {start} shape "
                    f"{request.shape} (from rank {request.client}) overlaps the block at "
                    f"{other_start} shape {other_shape}; give each rank a disjoint 'start'"
                )
        state.blocks.append((start, request.shape))
        state.covered += prod(request.shape)

    def _check_same(self, spec: VariableSpec, request: WriteRequest) -> None:
        if (np.dtype(request.dtype), request.global_shape, request.dims) != (
            spec.dtype,
            spec.shape,
            spec.dims,
        ):
            raise BurstInputError(
                f"{self.key.describe()}: variable {request.name!r} was first written as "
                f"{spec.dtype} {spec.shape} dims {spec.dims}, now as {request.dtype} "
                f"{request.global_shape} dims {request.dims} (rank {request.client}); "
                "every block of a variable must agree"
            )

    def abandon(self, name: str, client: int) -> None:
        """A block the model took with ``buffer`` and never filled (it raised)."""
        self.abandoned.append(
            f"{self.key.describe()}: a block of {name!r} from rank {client} was abandoned: the "
            "model raised inside io.buffer before handing it over, so the file is not written"
        )

    def check_complete(self) -> None:
        """Raise :class:`BurstError` naming an abandoned block, or the first variable whose
        blocks leave a hole."""
        if self.abandoned:
            raise BurstError(self.abandoned[0])
        for name, state in self.variables.items():
            if state.covered != state.size:
                raise BurstError(
                    f"{self.key.describe()}: variable {name!r} of shape {state.spec.shape} has "
                    f"{state.size - state.covered} of {state.size} elements not written by any "
                    "rank; the blocks' 'start'/'shape' leave a hole"
                )
