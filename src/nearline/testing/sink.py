"""Conformance tests every :class:`~nearline.burst.Sink` should pass.

Subclass :class:`SinkTests` in a pytest module as ``class TestMySink(SinkTests)`` and supply
:meth:`~SinkTests.make_sink` and :meth:`~SinkTests.read_back` (with the format's own reader);
override the ``read_*`` hooks for what the format keeps. Needs pytest and hypothesis (the
``dev`` extra); nothing in nearline imports this module.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Sequence
from itertools import product
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nearline.burst import Sink, VariableSpec

DTYPES = tuple(
    np.dtype(code) for code in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8")
)
SHAPES = ((), (5,), (3, 4), (2, 3, 4), (2, 1, 3, 2))

Block = tuple[VariableSpec, tuple[int, ...], np.ndarray | None]  # None: define only


def spec(name: str, dtype: Any, shape: tuple[int, ...], **attrs: Any) -> VariableSpec:
    """A variable with dims ``<name>_0, <name>_1...`` unless ``dims=`` is given."""
    dims = attrs.pop("dims", tuple(f"{name}_{axis}" for axis in range(len(shape))))
    return VariableSpec(name, np.dtype(dtype), tuple(shape), tuple(dims), attrs)


def random_bits(dtype: np.dtype, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Arbitrary bit patterns of ``dtype``: NaNs with payloads, -0.0, infinities included."""
    count = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.random.default_rng(seed).integers(0, 256, size=count, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def assert_same_bits(actual: Any, expected: np.ndarray, name: str) -> None:
    """Equal dtype, shape and bytes, so NaN payloads and signed zeros count."""
    actual = np.asarray(actual)
    assert actual.dtype == expected.dtype, f"{name}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != {expected.shape}"
    assert actual.tobytes() == expected.tobytes(), f"{name}: values differ"


def split(array: np.ndarray, cuts: Sequence[Sequence[int]]) -> list[tuple[tuple[int, ...], Any]]:
    """Cut ``array`` at ``cuts`` (sorted offsets per axis) into (start, block) hyperslabs."""
    edges = [
        list(zip([0, *axis_cuts], [*axis_cuts, n], strict=True))
        for axis_cuts, n in zip(cuts, array.shape, strict=True)
    ]
    return [
        (tuple(a for a, _ in box), array[(*(slice(a, b) for a, b in box), ...)])
        for box in product(*edges)
    ]


class SinkTests:
    """Generic tests of the :class:`~nearline.burst.SinkFile` contract."""

    keeps_order: ClassVar[bool] = True
    """Whether :meth:`read_back` lists variables in the order they were defined."""

    def make_sink(self) -> Sink:
        raise NotImplementedError

    def read_back(self, path: Path, specs: Sequence[VariableSpec]) -> dict[str, np.ndarray]:
        """Every variable of the file at ``path``; ``specs`` for formats without metadata."""
        raise NotImplementedError

    def read_attrs(self, path: Path) -> dict[str, dict[str, Any]] | None:
        """Attributes of each variable, or None if the format keeps none."""
        return None

    def read_dims(self, path: Path) -> dict[str, tuple[str, ...]] | None:
        """Dimension names of each variable, or None if the format keeps none."""
        return None

    def read_step(self, path: Path) -> int | None:
        """The step the file was created for, or None if the format keeps none."""
        return None

    def write_file(self, folder: Path, blocks: Sequence[Block], *, step: int = 0) -> Path:
        """Write ``blocks`` in the given order, defining each variable at its first block."""
        sink = self.make_sink()
        path = folder / f"out.{sink.extension}"
        handle = sink.create(path, step=step)
        defined: set[str] = set()
        for variable, start, data in blocks:
            if variable.name not in defined:
                handle.define(variable)
                defined.add(variable.name)
            if data is not None:
                handle.write(variable.name, data, start=start)
        handle.close()
        return path

    def check(self, path: Path, expected: dict[str, tuple[VariableSpec, np.ndarray]]) -> None:
        specs = [variable for variable, _ in expected.values()]
        got = self.read_back(path, specs)
        assert sorted(got) == sorted(expected)
        if self.keeps_order:
            assert list(got) == list(expected)
        for name, (_, array) in expected.items():
            assert_same_bits(got[name], array, name)

    @pytest.mark.parametrize("dtype", DTYPES, ids=str)
    def test_every_dtype_and_rank_round_trips(self, tmp_path: Path, dtype: np.dtype) -> None:
        expected = {
            f"v{len(shape)}": (spec(f"v{len(shape)}", dtype, shape), random_bits(dtype, shape, i))
            for i, shape in enumerate(SHAPES)
        }
        blocks = [(v, (0,) * a.ndim, a) for v, a in expected.values()]
        self.check(self.write_file(tmp_path, blocks), expected)

    def test_special_values_keep_their_bits(self, tmp_path: Path) -> None:
        f32 = np.array([0x7FC00001, 0xFFA00002, 0x7F800000, 0x80000000, 1, 0x7149F2CA], np.uint32)
        f64 = np.array([0x7FF8000000000123, 0xFFF0000000000001, 0x8000000000000000, 1], np.uint64)
        expected = {
            "f4": (spec("f4", "f4", (6,)), f32.view(np.float32)),
            "f8": (spec("f8", "f8", (4,)), f64.view(np.float64)),
            "zeros": (spec("zeros", "f8", (2, 3)), np.full((2, 3), -0.0)),
            "i8": (spec("i8", "i8", (2,)), np.array([-(2**63), 2**63 - 1])),
            "u8": (spec("u8", "u8", (2,)), np.array([0, 2**64 - 1], dtype=np.uint64)),
            "i4": (spec("i4", "i4", ()), np.array(-2147483647, dtype=np.int32)),
        }
        blocks = [(v, (0,) * a.ndim, a) for v, a in expected.values()]
        self.check(self.write_file(tmp_path, blocks), expected)

    # Each subclass runs this one property on its own sink; sharing the example database
    # between them is harmless, as any failing example is a fair input for every sink.
    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.differing_executors]
    )
    @given(data=st.data())
    def test_hyperslabs_in_any_order_assemble(self, data: st.DataObject) -> None:
        dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
        shape = data.draw(st.lists(st.integers(1, 5), max_size=4).map(tuple), label="shape")
        cuts = [
            data.draw(st.sets(st.integers(1, n - 1)).map(sorted)) if n > 1 else [] for n in shape
        ]
        array = random_bits(dtype, shape, data.draw(st.integers(0, 2**32 - 1)))
        pieces = data.draw(st.permutations(split(array, cuts)), label="order")
        layouts = st.sampled_from(["C", "F", "strided"])
        variable = spec("v", dtype, shape)
        blocks: list[Block] = []
        for start, block in pieces:
            layout = data.draw(layouts)
            if layout == "F" and block.ndim:
                block = np.asfortranarray(block)
            elif layout == "strided" and block.ndim:
                block = np.repeat(block, 2, axis=-1)[..., ::2]
            blocks.append((variable, start, block))
        with tempfile.TemporaryDirectory() as folder:
            path = self.write_file(Path(folder), blocks)
            self.check(path, {"v": (variable, array)})

    def test_variables_keep_order_attrs_and_dims(self, tmp_path: Path) -> None:
        zeta = spec("zeta", "f4", (4, 6), dims=("y", "x"), units="K", long_name="Temp")
        alpha = spec("alpha", "i2", (6,), dims=("x",), units="1", valid_max=7, scale=0.5)
        mid = spec("mid", "u8", (), note="scalar")
        values = {
            "zeta": random_bits(zeta.dtype, zeta.shape, 1),
            "alpha": random_bits(alpha.dtype, alpha.shape, 2),
            "mid": random_bits(mid.dtype, mid.shape, 3),
        }
        z, a = values["zeta"], values["alpha"]
        blocks = [
            (zeta, (2, 0), z[2:]),
            (alpha, (3,), a[3:]),
            (mid, (), values["mid"]),
            (zeta, (0, 3), z[:2, 3:]),
            (alpha, (0,), a[:3]),
            (zeta, (0, 0), z[:2, :3]),
        ]
        path = self.write_file(tmp_path, blocks, step=3)
        specs = {v.name: v for v in (zeta, alpha, mid)}
        self.check(path, {name: (specs[name], values[name]) for name in ("zeta", "alpha", "mid")})
        attrs = self.read_attrs(path)
        if attrs is not None:
            for variable in specs.values():
                assert {k: attrs[variable.name].get(k) for k in variable.attrs} == variable.attrs
        dims = self.read_dims(path)
        if dims is not None:
            assert dims == {"zeta": ("y", "x"), "alpha": ("x",), "mid": ()}

    def test_empty_variable_is_defined(self, tmp_path: Path) -> None:
        empty = spec("empty", "f8", (0, 3))
        scalar = spec("scalar", "i4", ())
        value = np.array(5, dtype=np.int32)
        blocks = [(empty, (0, 0), None), (scalar, (), value)]
        path = self.write_file(tmp_path, blocks)
        self.check(path, {"empty": (empty, np.empty((0, 3))), "scalar": (scalar, value)})

    def test_step_is_recorded(self, tmp_path: Path) -> None:
        variable = spec("v", "i8", (3,))
        path = self.write_file(tmp_path, [(variable, (0,), np.arange(3))], step=17)
        self.check(path, {"v": (variable, np.arange(3))})
        assert self.read_step(path) in (None, 17)

    def test_files_are_written_from_several_threads_at_once(self, tmp_path: Path) -> None:
        """An I/O server process may run several writer threads, one file each."""
        variable = spec("v", "f8", (32, 64), dims=("y", "x"))
        expected = {k: random_bits(variable.dtype, variable.shape, k) for k in range(12)}
        failures: list[BaseException] = []

        def write(keys: range) -> None:
            try:
                for k in keys:
                    rows = [(variable, (r, 0), expected[k][r : r + 4]) for r in range(0, 32, 4)]
                    (tmp_path / str(k)).mkdir()
                    self.write_file(tmp_path / str(k), rows, step=k)
            except BaseException as error:  # reported by the main thread below
                failures.append(error)

        threads = [threading.Thread(target=write, args=(range(t, 12, 3),)) for t in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []
        for k, array in expected.items():
            path = tmp_path / str(k) / f"out.{self.make_sink().extension}"
            self.check(path, {"v": (variable, array)})

    def test_abort_leaves_nothing_beside_the_path(self, tmp_path: Path) -> None:
        sink = self.make_sink()
        path = tmp_path / f"part.{sink.extension}"
        handle = sink.create(path, step=0)
        handle.define(spec("v", "f8", (4,)))
        handle.write("v", np.ones(2), start=(0,))
        handle.abort()
        assert [p.name for p in tmp_path.iterdir() if p != path] == []
