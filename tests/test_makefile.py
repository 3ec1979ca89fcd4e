"""The Makefile's promises to a newcomer: an older Python is refused in one line; `make test`
hands out its slowest test files first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from .slowest_first import SLOWEST, order

ROOT = Path(__file__).resolve().parents[1]


def test_an_older_python_is_refused_in_one_line(tmp_path: Path) -> None:
    # a real interpreter that reports 3.9.18, so the Makefile's own check is what is tested
    old = tmp_path / "python3.9"
    old.write_text(
        f"#!{sys.executable}\nimport sys\n"
        "sys.version_info = (3, 9, 18, 'final', 0)\nexec(sys.argv[2])\n"
    )
    old.chmod(0o755)
    venv = tmp_path / "venv"
    result = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "test", f"PYTHON={old}", f"VENV={venv}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "nearline needs Python 3.11 or newer" in lines[0]
    assert f"{old} is 3.9.18" in lines[0]
    assert not venv.exists()  # nothing half-made


def test_a_missing_python_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-python"
    result = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "demo", f"PYTHON={missing}", f"VENV={tmp_path / 'v'}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"Makefile:{_line_of('does not run')}: *** nearline needs Python 3.11 or newer, and "
        f"{missing} does not run; run make again with PYTHON=python3.11 (or newer).  Stop."
    ]


def _line_of(text: str) -> int:
    lines = (ROOT / "Makefile").read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


def test_the_slowest_files_are_handed_out_first_each_keeping_its_order() -> None:
    for name in SLOWEST:
        assert (ROOT / name).is_file(), f"{name} is named in tests/slowest_first.py"
    slowest, second = sorted(SLOWEST, key=SLOWEST.__getitem__, reverse=True)[:2]
    names = ["tests/a.py::one", f"{second}::x", "tests/b.py::two", f"{slowest}::y"]
    names += [f"{second}::z", "tests/a.py::three"]
    items = [SimpleNamespace(nodeid=name) for name in names]
    order(items)  # type: ignore[arg-type]
    assert [item.nodeid for item in items] == [
        f"{slowest}::y", f"{second}::x", f"{second}::z",
        "tests/a.py::one", "tests/b.py::two", "tests/a.py::three",
    ]  # fmt: skip
