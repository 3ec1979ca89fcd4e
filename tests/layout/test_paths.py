"""Output paths: per-rank and assembled files, and their inverse."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nearline.errors import LayoutError
from nearline.layout import Layout, OutputPath, hds_path, parse

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


@pytest.mark.parametrize("rank", [None, 3])
def test_extension_with_or_without_its_dot_names_the_same_path(tmp_path, rank):
    dotted = hds_path(tmp_path, step=1, file="file", rank=rank, ext=".nc")
    assert dotted == hds_path(tmp_path, step=1, file="file", rank=rank, ext="nc")
    assert dotted.name == ("file.000001.nc" if rank is None else "file.000001.00003.nc")
    assert parse(dotted) == OutputPath(file="file", step=1, rank=rank, ext="nc")
    assert Layout(fanout=8, ranks=20).path(tmp_path, step=1, file="f", rank=9, ext=".h5") == (
        tmp_path / "000001" / "f" / "1" / "f.000001.00009.h5"
    )


@pytest.mark.parametrize("bad", ["", ".", "..nc", "tar.gz", "n c", "nc/", 7])
def test_extensions_parse_could_not_read_back_are_refused(tmp_path, bad):
    with pytest.raises(LayoutError, match=r"file extension .* is not usable.*'nc' or '\.nc'"):
        hds_path(tmp_path, step=0, file="f", ext=bad)


@pytest.mark.parametrize("bad", ["", "a/b", "../x", "a b", ".hidden"])
def test_unusable_file_names_are_refused(tmp_path, bad):
    with pytest.raises(LayoutError, match="not usable in a path"):
        hds_path(tmp_path, step=0, file=bad, ext="nc")


def test_parse_refuses_foreign_names():
    with pytest.raises(LayoutError, match="not a nearline output path"):
        parse("notes.txt")


def tree_of(paths: set[Path]) -> dict[Path, set[str]]:
    """Every folder of ``paths`` with the names of its entries."""
    tree: dict[Path, set[str]] = {}
    for path in paths:
        for child, parent in zip([path, *path.parents], path.parents, strict=False):
            tree.setdefault(parent, set()).add(child.name)
    return tree


@settings(max_examples=40, deadline=None)
@given(
    fanout=st.integers(4, 12),
    ranks=st.integers(1, 150),
    steps=st.integers(1, 40),
    files=st.integers(1, 6),
)
def test_no_folder_holds_more_than_fanout_entries(fanout, ranks, steps, files):
    layout = Layout(fanout=fanout, ranks=ranks, steps=steps)
    groups = [f"g{i}" for i in range(min(files, layout.max_files))]
    root = Path("/run")
    paths = set()
    for step in range(steps):
        for group in groups:
            paths.add(layout.path(root, step=step, file=group, ext="nc"))
            paths.add(layout.step_dir(root, step) / group / ".complete")
            for rank in range(ranks):
                path = layout.path(root, step=step, file=group, rank=rank, ext="nc")
                assert parse(path) == OutputPath(group, step, rank, "nc")
                paths.add(path)
    tree = tree_of(paths)
    worst = max(
        (len(entries), folder)
        for folder, entries in tree.items()
        if root in folder.parents or folder == root
    )
    assert worst[0] <= fanout, f"{worst[1]} holds {worst[0]} entries"


def test_big_runs_add_block_folders():
    layout = Layout(fanout=1000, ranks=20_000)
    assert layout.path("/r", step=3, file="dyn", rank=12_345, ext="nc") == Path(
        "/r/000003/dyn/12/dyn.000003.12345.nc"
    )
    assert Layout(fanout=1000, steps=5000).step_dir("/r", 4321) == Path("/r/4/004321")


def test_step_folders_are_listed_once_for_one_mkdir_pass(tmp_path):
    layout = Layout(fanout=4, ranks=10)
    folders = layout.folders(tmp_path, step=2, files=["a", "b"])
    assert folders[0] == tmp_path / "000002"
    for folder in folders:
        folder.mkdir()  # parents first: no parents=True needed
    for rank in range(10):
        assert layout.path(tmp_path, step=2, file="b", rank=rank, ext="nc").parent.is_dir()


def test_too_many_file_groups_for_one_step_folder_is_refused(tmp_path):
    with pytest.raises(LayoutError, match="3 file groups exceed the 2"):
        Layout(fanout=4).folders(tmp_path, step=0, files=["a", "b", "c"])
