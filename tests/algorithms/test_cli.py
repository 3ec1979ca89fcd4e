"""``nearline algorithms`` as a user runs it: a real process on a real data folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .conftest import adder, copy_example, zip_folder


def nearline(*args: str, cwd: Path, user: str = "alice") -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "nearline"), "algorithms", *args]
    env = {**os.environ, "NEARLINE_USER": user, "NEARLINE_DATA": str(cwd / "data")}
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_deploy_list_undeploy(tmp_path):
    package = copy_example("counts-histogram", tmp_path)
    deployed = nearline("deploy", str(package), cwd=tmp_path)
    assert deployed.returncode == 0, deployed.stderr
    assert deployed.stdout == "deployed counts-histogram 1.0 (private to alice)\n"
    assert "running test case 1 of 1" in deployed.stderr
    listed = nearline("list", cwd=tmp_path)
    assert listed.returncode == 0
    header, row = listed.stdout.splitlines()
    assert header.split() == ["ID", "VERSION", "OWNER", "VISIBILITY", "TITLE"]
    assert row.split()[:4] == ["counts-histogram", "1.0", "alice", "private"]
    hidden = nearline("list", cwd=tmp_path, user="bob")
    assert hidden.returncode == 2
    assert hidden.stderr == "nearline: error: no processes that bob may order in this data folder\n"
    refused = nearline("undeploy", "counts-histogram", cwd=tmp_path, user="bob")
    assert refused.returncode == 2
    assert refused.stderr.startswith("nearline: error: no process 'counts-histogram'")
    assert len(refused.stderr.splitlines()) == 1
    gone = nearline("undeploy", "counts-histogram", cwd=tmp_path)
    assert (gone.returncode, gone.stdout) == (0, "undeployed counts-histogram\n")
    assert nearline("list", cwd=tmp_path).returncode == 2


def test_a_public_zip_and_its_replacement(tmp_path):
    (tmp_path / "v1.zip").write_bytes(zip_folder(adder(tmp_path / "v1")))
    (tmp_path / "v2.zip").write_bytes(zip_folder(adder(tmp_path / "v2", version="2.0")))
    first = nearline("deploy", "v1.zip", "--public", "--data", "data", cwd=tmp_path)
    assert first.stdout == "deployed adder 1.0 (public)\n", first.stderr
    again = nearline("deploy", "v2.zip", cwd=tmp_path)
    assert again.returncode == 2
    assert "exists already; deploy a new version of it with replace" in again.stderr
    second = nearline("deploy", "v2.zip", "--replace", cwd=tmp_path)
    assert second.stdout == "deployed adder 2.0 (public)\n", second.stderr
    versions = nearline("list", "--versions", cwd=tmp_path, user="bob")
    assert [line.split()[1] for line in versions.stdout.splitlines()[1:]] == ["2.0", "1.0"]


def test_errors_are_one_line(tmp_path):
    package = adder(tmp_path / "bad", version=3)
    bad = nearline("deploy", str(package), cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.startswith("nearline: error: algorithm.yaml: version: expected a version")
    assert len(bad.stderr.splitlines()) == 1
    missing = nearline("deploy", "nowhere.zip", cwd=tmp_path)
    assert missing.stderr == (
        "nearline: error: no package at nowhere.zip: give a folder or a .zip file\n"
    )
    adder(tmp_path / "ok")
    nearline("deploy", str(tmp_path / "ok"), cwd=tmp_path)
    taken = nearline(
        "deploy", str(adder(tmp_path / "other", version="5")), cwd=tmp_path, user="bob"
    )
    assert taken.stderr == (
        "nearline: error: the process id 'adder' is not available; choose another id\n"
    )
