"""`nearline ls` and the browse functions behind it, on a tree written by burst."""

from __future__ import annotations

import numpy as np
import pytest

from nearline import burst
from nearline.cli import main
from nearline.errors import LayoutError
from nearline.layout import _browse as browse


@pytest.fixture
def tree(tmp_path):
    with burst.open(tmp_path, memory="1MiB") as io:
        for step in range(3):
            io.write("dyn", "u", np.zeros(100), step=step)  # per-rank file
            io.write("sfc", "t", np.zeros((4, 5)), step=step, start=(0, 0), shape=(4, 5))
            io.flush()
        io.write("dyn", "u", np.zeros(10), step=3)  # a step with one group only
        io.flush("dyn")
    return tmp_path


def test_steps_groups_and_files(tree):
    assert [step for step, _ in browse.steps(tree)] == [0, 1, 2, 3]
    groups = browse.groups(tree, step=1)
    assert [(g.file, g.files, g.complete) for g in groups] == [("dyn", 1, True), ("sfc", 1, True)]
    assert groups[0].bytes == (tree / "000001/dyn/dyn.000001.00000.nc").stat().st_size
    entries = browse.files(tree, step=2, file="sfc")
    assert [(e.path.name, e.rank) for e in entries] == [("sfc.000002.nc", None)]


def test_unknown_step_and_group_say_what_exists(tree):
    with pytest.raises(LayoutError, match="step 7 is not in"):
        browse.groups(tree, step=7)
    with pytest.raises(LayoutError, match="'wind' has no files at step 0"):
        browse.files(tree, step=0, file="wind")


def test_cli_lists_a_step(tree, capsys):
    assert main(["ls", str(tree), "--step", "0"]) == 0
    out = capsys.readouterr().out
    assert "dyn" in out
    assert "sfc" in out
    assert main(["ls", str(tree), "--step", "9"]) == 2
    assert capsys.readouterr().err.startswith("nearline: error: step 9 is not in")


def test_cli_names_a_root_that_does_not_exist_or_is_a_file(tmp_path, capsys):
    missing = tmp_path / "no" / "such" / "folder"
    for args in ([], ["--step", "0"], ["--step", "0", "--file", "dyn"], ["--file", "dyn"]):
        assert main(["ls", str(missing), *args]) == 2
        assert capsys.readouterr().err.splitlines() == [
            f"nearline: error: output folder {missing} does not exist; name the root a run "
            "writes to (burst's root=)"
        ]
    (tmp_path / "notes.txt").write_text("not a tree")
    assert main(["ls", str(tmp_path / "notes.txt")]) == 2
    assert capsys.readouterr().err.startswith(
        f"nearline: error: {tmp_path / 'notes.txt'} is a file, not an output folder"
    )


def test_cli_says_an_existing_folder_holds_no_steps(tmp_path, capsys):
    assert main(["ls", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"nearline: error: no nearline output steps in {tmp_path}"
    ]
