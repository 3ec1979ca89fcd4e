"""`nearline monitor` as a user runs it: record for a few seconds, mark a run, plot; and bad
input told in one line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nearline.cli import main
from nearline.monitor._records import FILE

from ..test_cli import nearline
from .test_usage import wait_for


def test_record_mark_and_plot_from_the_command_line(tmp_path: Path) -> None:
    recorded = nearline("monitor", "record", "run", "--seconds", "1", "--interval", "0.25",
                        cwd=tmp_path)  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    assert "4 samples in" in recorded.stdout
    assert "kept in run" in recorded.stdout
    marked = nearline("monitor", "mark", "run", "end", "MOD05_L2 #2", cwd=tmp_path)
    assert marked.returncode == 0, marked.stderr
    lines = [json.loads(line) for line in (tmp_path / "run" / FILE).read_text().splitlines()]
    assert [line["kind"] for line in lines] == ["sample"] * 4 + ["mark"]
    assert lines[-1]["name"] == "MOD05_L2 #2"
    assert all(0.15 < line["seconds"] < 0.4 for line in lines[:4])
    plotted = nearline("monitor", "plot", "run", "--out", "figures", cwd=tmp_path)
    assert plotted.returncode == 0, plotted.stderr
    assert plotted.stdout.split() == [
        f"figures/{name}.png" for name in ("cpu", "disk", "memory", "scatter")
    ]
    assert all((tmp_path / "figures" / f"{name}.png").stat().st_size > 10_000
               for name in ("cpu", "disk", "memory", "scatter"))  # fmt: skip


def test_ctrl_c_ends_an_open_ended_recording_cleanly(tmp_path: Path) -> None:
    command = [str(Path(sys.executable).parent / "nearline"), "monitor", "record", "run",
               "--interval", "0.2"]  # fmt: skip
    recorder = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    path = tmp_path / "run" / FILE
    assert wait_for(lambda: path.exists() and path.read_text().count("\n") >= 3, seconds=30)
    recorder.send_signal(signal.SIGINT)
    stdout, _ = recorder.communicate(timeout=30)
    assert recorder.returncode == 0
    samples = path.read_text().count("\n")
    assert f"{samples} samples in" in stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["plot", "nowhere", "--out", "f"],
         "no run folder nowhere; record one with `nearline monitor record nowhere`"),
        (["plot", "empty", "--out", "f"],
         "empty holds no samples yet; record some with `nearline monitor record empty`"),
        (["record", "run", "--interval", "0"], "--interval: must be more than 0 seconds, got 0"),
        (["record", "run", "--seconds", "-1"], "--seconds: must be more than 0 seconds, got -1"),
        (["record", "taken", "--seconds", "1"], "cannot record into taken: File exists"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / FILE).touch()
    (tmp_path / "taken").touch()
    assert main(["monitor", *args]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"nearline: error: {message}"]
    assert captured.out == ""
