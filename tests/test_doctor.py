"""`nearline doctor` as a user runs it: every capability works on this machine (make test ran
scripts/system-packages first), and one made really missing (its tool off PATH, its path
pointing nowhere) is reported with its reason and install line, and a failing exit status."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from nearline.burst.native import SYSTEM_PACKAGES
from nearline.doctor import CAPABILITIES, Capability, capabilities, check, debian_packages, examine
from nearline.errors import CapabilityMissing

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]


def doctor(*names: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "nearline"), "doctor", *names],
        capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300,
    )  # fmt: skip


def findings(stdout: str) -> dict[str, tuple[str, str]]:
    """{capability: (status, the rest of its line)} from doctor's lines."""
    found = {}
    for line in stdout.splitlines():
        name, status, rest = line.split(None, 2)
        found[name] = (status, rest)
    return found


def test_every_capability_works_here() -> None:
    done = doctor()
    lines = findings(done.stdout)
    assert list(lines) == [capability.name for capability in CAPABILITIES], done.stdout
    assert {name: status for name, (status, _) in lines.items()} == {
        capability.name: "works" for capability in CAPABILITIES
    }, done.stdout
    assert done.returncode == 0
    assert "\x1b" not in done.stdout  # no colour codes when not on a terminal
    assert "HDF4 4." in lines["hdf4-netcdf"][1]
    assert "PostgreSQL" in lines["postgis"][1]


def empty_path(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "bin").mkdir()
    return {"PATH": str(tmp_path / "bin")}


def no_chromium(tmp_path: Path) -> dict[str, str]:
    return {"NEARLINE_CHROMIUM": str(tmp_path / "no-chromium")}


def no_seaweedfs(tmp_path: Path) -> dict[str, str]:
    return {"NEARLINE_WEED": str(tmp_path / "no-weed")}


def no_postgresql(tmp_path: Path) -> dict[str, str]:
    return {"NEARLINE_PG_BINDIR": str(tmp_path)}


@pytest.mark.parametrize(
    ("name", "break_it", "reason"),
    [
        ("chromium", no_chromium, "no Chromium at"),
        ("hdf4-netcdf", empty_path, "gcc is not on PATH"),
        ("mpi-fortran", empty_path, "gfortran missing"),
        ("postgis", no_postgresql, "PostgreSQL's initdb and postgres were not found"),
        ("prometheus", empty_path, "Prometheus's promtool and prometheus not on PATH"),
        ("node", empty_path, "node is not on PATH"),
        ("s3-server", no_seaweedfs, "SeaweedFS (the tests' S3 server) is not built at"),
    ],
)
def test_a_missing_capability_is_named_with_its_install_line(
    tmp_path: Path, name: str, break_it, reason: str
) -> None:
    done = doctor(name, env=break_it(tmp_path))
    status, rest = findings(done.stdout)[name]
    assert status == "missing", done.stdout
    assert reason in rest
    (capability,) = capabilities([name])
    assert rest.endswith(f"; to fix: {capability.install_command}")
    built_here = "-m nearline.testing.s3server build"  # SeaweedFS: built from the Go proxy
    assert capability.install_command.startswith(
        "apt-get install -y --no-install-recommends "
    ) or capability.install_command.endswith(built_here)
    assert done.returncode == 1


def test_the_others_are_checked_beside_a_missing_one(tmp_path: Path) -> None:
    done = doctor("chromium", "hdf4-netcdf", env=no_chromium(tmp_path))
    lines = findings(done.stdout)
    assert [(name, status) for name, (status, _) in lines.items()] == [
        ("chromium", "missing"),
        ("hdf4-netcdf", "works"),
    ]
    assert done.returncode == 1


def test_an_unknown_capability_is_refused_in_one_line() -> None:
    done = doctor("postgis", "s3")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "nearline: error: no capability called 's3': choose from "
        + ", ".join(capability.name for capability in CAPABILITIES)
    ]


def test_system_packages_installs_every_package_the_capabilities_name() -> None:
    script = (ROOT / "scripts" / "system-packages").read_text()
    (listed,) = re.findall(r'^PACKAGES="([^"]*)"$', script, re.M)
    assert listed.split() == debian_packages()
    (fortran,) = capabilities(["mpi-fortran"])
    assert SYSTEM_PACKAGES.split() == list(fortran.packages)


def test_make_test_runs_the_doctor_before_the_suite() -> None:
    # -n: print the recipe without running it; -o: as if the environment were installed
    command = ["make", "-n", "-s", "-C", str(ROOT), "-o", ".venv/.installed", "test"]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    first_words = [line.split()[0].rsplit("/", 1)[-1] for line in done.stdout.splitlines()]
    assert first_words[:5] == ["system-packages", "python", "python", "nearline", "ruff"]
    lines = done.stdout.splitlines()
    assert lines[1].split()[1:] == ["-m", "nearline.testing.s3server", "build"]
    assert lines[2].split()[1:] == ["-m", "nearline.testing.keycloak", "fetch"]
    assert "doctor" in lines[3].split()


# -- checking, with capabilities made for the test -------------------------------------------
def test_a_check_that_breaks_is_missing_and_its_folder_is_removed() -> None:
    folders = []

    def breaks(folder: Path) -> str:
        folders.append(folder)
        (folder / "left.txt").write_text("a file the check leaves")
        raise RuntimeError("a bug in the check\nwith a second line\nand a third")

    finding = check(Capability(name="breaks", purpose="the test", probe=breaks, packages=("x",)))
    assert not finding.works
    assert finding.status == "missing"
    assert finding.reason == "RuntimeError: a bug in the check ... and a third"
    assert finding.fix.startswith("apt-get install -y --no-install-recommends x ")
    assert len(folders) == 1
    assert not folders[0].exists()


def test_a_remedy_replaces_the_install_line() -> None:
    def needs_root(folder: Path) -> str:
        raise CapabilityMissing("not root", remedy="run as root")

    optional = Capability(name="r", purpose="p", probe=needs_root, packages=("x",), required=False)
    finding = check(optional)
    assert (finding.status, finding.fix) == ("missing (optional)", "run as root")
    assert finding.describe() == "p: not root; to fix: run as root"


def test_checks_run_at_once_and_are_reported_in_order() -> None:
    """The first check waits for the second to start: in turn, it would wait in vain."""
    second_started = threading.Event()

    def first(folder: Path) -> str:
        if not second_started.wait(timeout=30):
            raise CapabilityMissing("the second check never ran alongside")
        return "saw the second"

    def second(folder: Path) -> str:
        second_started.set()
        return "started"

    made = [
        Capability(name="first", purpose="p", probe=first, install="nothing"),
        Capability(name="second", purpose="p", probe=second, install="nothing"),
    ]
    found = list(examine(made))
    assert [(f.capability.name, f.works, f.reason) for f in found] == [
        ("first", True, "saw the second"),
        ("second", True, "started"),
    ]
