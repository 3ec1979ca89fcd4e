"""Output paths: per-rank and assembled files, and their inverse."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nearline.errors import LayoutError
from nearline.layout import OutputPath, hds_path, parse

names = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,15}", fullmatch=True)


@given(
    file=names,
    step=st.integers(0, 10**6 - 1),
    rank=st.none() | st.integers(0, 10**5 - 1),
    ext=st.sampled_from(["nc", "h5", "zarr", "dat"]),
)
def test_paths_round_trip_through_parse(tmp_path_factory, file, step, rank, ext):
    root = tmp_path_factory.getbasetemp()
    path = hds_path(root, step=step, file=file, rank=rank, ext=ext)
    assert parse(path) == OutputPath(file=file, step=step, rank=rank, ext=ext)
    assert path.parent.parent == (root if rank is None else root / f"{step:06d}")


def test_layout_of_per_rank_and_assembled_files(tmp_path):
    assert hds_path(tmp_path, step=12, file="dyn", rank=3, ext="nc") == (
        tmp_path / "000012" / "dyn" / "dyn.000012.00003.nc"
    )
    assert (
        hds_path(tmp_path, step=12, file="dyn", ext="nc") == tmp_path / "000012" / "dyn.000012.nc"
    )


@pytest.mark.parametrize("bad", ["", "a/b", "../x", "a b", ".hidden"])
def test_unusable_file_names_are_refused(tmp_path, bad):
    with pytest.raises(LayoutError, match="not usable in a path"):
        hds_path(tmp_path, step=0, file=bad, ext="nc")


def test_parse_refuses_foreign_names():
    with pytest.raises(LayoutError, match="not a nearline output path"):
        parse("notes.txt")
