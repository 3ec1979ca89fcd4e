"""Deploys for real: packages unpacked, built and tested in the sandbox, promoted in SQLite;
visibility, versions, conflicts and failures seen through the registry's own answers."""

from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path

import pytest

from nearline.algorithms import AlgorithmRegistry, DeploySettings, builtin_algorithms
from nearline.errors import (
    AlgorithmNotFound,
    Conflict,
    DeployError,
    ImmutableProcess,
    ManifestError,
)

from .conftest import adder, copy_example, write_package, zip_folder


def test_the_python_example_is_tested_promoted_and_private_to_its_owner(registry, tmp_path):
    phases: list[tuple[str, int, int]] = []
    package = copy_example("counts-histogram", tmp_path)
    algorithm = registry.deploy(package, owner="alice", progress=lambda *p: phases.append(p))
    assert (algorithm.id, algorithm.version, algorithm.owner) == (
        "counts-histogram",
        "1.0",
        "alice",
    )
    assert not algorithm.public
    assert algorithm.package == registry.root / "counts-histogram" / "1.0" / "package"
    assert (algorithm.package / "histogram.py").is_file()
    assert ("test", 0, 1) in phases
    assert ("test", 1, 1) in phases
    assert registry.get("counts-histogram", viewer="alice").version == "1.0"
    for stranger in ("bob", None):
        with pytest.raises(AlgorithmNotFound, match="no process 'counts-histogram'") as caught:
            registry.get("counts-histogram", viewer=stranger)
        assert caught.value.status == 404
    assert [a.id for a in registry.list(viewer="alice")] == ["counts-histogram"]
    assert registry.list(viewer="bob") == []
    assert not (algorithm.package.parent / "tests" / "1").exists()  # test folders are cleaned
    with sqlite3.connect(registry.path) as db:
        assert db.execute("SELECT state FROM versions").fetchall() == [("live",)]


def test_a_public_zip_upload_is_visible_to_everyone(registry, tmp_path):
    data = zip_folder(adder(tmp_path / "adder"))
    algorithm = registry.deploy(data, owner="alice", public=True)
    assert algorithm.public
    for viewer in ("alice", "bob", None):
        assert registry.get("adder", viewer=viewer).owner == "alice"
        assert [a.id for a in registry.list(viewer=viewer)] == ["adder"]


def test_the_c_example_is_built_with_make_in_the_sandbox(registry, tmp_path):
    algorithm = registry.deploy(copy_example("gac-quicklook", tmp_path), owner="carol")
    binary = algorithm.package / "quicklook"
    assert binary.is_file()
    assert binary.read_bytes()[:4] == b"\x7fELF"
    build_log = (algorithm.package.parent / "build.log").read_text()
    assert "gcc -O2 -Wall -Wextra -std=c99 -o quicklook quicklook.c" in build_log


def test_a_failing_build_is_a_deploy_error_with_the_log_tail_and_nothing_promoted(
    registry, tmp_path
):
    package = copy_example("gac-quicklook", tmp_path)
    source = package / "quicklook.c"
    source.write_text(source.read_text().replace("int main(void) {", "int main(void) { oops"))
    with pytest.raises(DeployError) as caught:
        registry.deploy(package, owner="carol")
    message = str(caught.value)
    assert message.startswith("build make CC=gcc CFLAGS=-O2 -Wall -Wextra -std=c99 failed (exit")
    assert re.search(r"quicklook.c:\d+:\d+: error: .oops. undeclared", message)
    assert str(registry.data) not in message  # the service's folders are not shown
    assert caught.value.status == 400
    with pytest.raises(AlgorithmNotFound):
        registry.get("gac-quicklook", viewer="carol")
    assert not (registry.root / "gac-quicklook").joinpath("1.0").exists()
    with sqlite3.connect(registry.path) as db:
        assert db.execute("SELECT COUNT(*) FROM versions").fetchone() == (0,)
        assert db.execute("SELECT COUNT(*) FROM processes").fetchone() == (0,)
    # the id was not kept: anyone may take it now
    assert registry.deploy(copy_example("gac-quicklook", tmp_path / "x"), owner="dave").owner == (
        "dave"
    )


def test_a_test_output_that_differs_is_a_deploy_error_naming_it(registry, tmp_path):
    with pytest.raises(DeployError, match=r"test case 1: output total.txt differs .* at byte 7"):
        registry.deploy(adder(tmp_path / "adder", expected="total=11.0\n"), owner="alice")
    assert registry.list(viewer="alice") == []


def test_a_netcdf_output_is_compared_by_values(registry, tmp_path):
    import netCDF4

    package = copy_example("counts-histogram", tmp_path)
    with netCDF4.Dataset(package / "tests" / "expected" / "histogram.nc", "a") as dataset:
        dataset.history = "written elsewhere"  # attributes do not count
    registry.deploy(package, owner="alice")
    other = copy_example("counts-histogram", tmp_path / "other")
    with netCDF4.Dataset(other / "tests" / "expected" / "histogram.nc", "a") as dataset:
        dataset["histogram"][0, 1] = dataset["histogram"][0, 1] + 1
    text = (other / "algorithm.yaml").read_text().replace('version: "1.0"', 'version: "1.1"')
    (other / "algorithm.yaml").write_text(text)
    with pytest.raises(DeployError, match=r"output histogram.nc variable 'histogram': 1 of 16"):
        registry.replace("counts-histogram", other, owner="alice")


def test_a_run_that_fails_or_leaves_no_output_fails_the_deploy(registry, tmp_path):
    crash = {
        "add.py": "raise SystemExit('no numbers today')\n",
        "tests/a.txt": "1",
        "tests/b.txt": "2",
        "tests/total.txt": "x",
    }
    from .conftest import adder_manifest

    write_package(tmp_path / "crash", adder_manifest(), crash)
    with pytest.raises(DeployError, match=r"(?s)test case 1 failed \(exit code 1\).*no numbers"):
        registry.deploy(tmp_path / "crash", owner="alice")
    quiet = {**crash, "add.py": "pass\n"}
    write_package(tmp_path / "quiet", adder_manifest(), quiet)
    with pytest.raises(DeployError, match=r"left no output 'total\.txt' \(it left: nothing"):
        registry.deploy(tmp_path / "quiet", owner="alice")


def test_replace_keeps_versions_and_the_newest_is_the_default(registry, tmp_path):
    registry.deploy(adder(tmp_path / "v1"), owner="alice", public=True)
    newer = adder(tmp_path / "v2", version="2.0", title="Adds numbers, again")
    algorithm = registry.replace("adder", newer, owner="alice")
    assert (algorithm.version, algorithm.public) == ("2.0", True)  # visibility carries over
    assert registry.get("adder", viewer="bob").version == "2.0"
    assert registry.get("adder", viewer="bob", version="1.0").manifest.title == "Adds numbers"
    assert [a.version for a in registry.versions("adder", viewer="bob")] == ["2.0", "1.0"]
    assert len(registry.list(viewer="bob")) == 1
    with pytest.raises(AlgorithmNotFound, match=r"version '3\.0'"):
        registry.get("adder", viewer="alice", version="3.0")
    with pytest.raises(Conflict, match=r"version '2\.0' of process 'adder' exists already"):
        registry.replace("adder", newer, owner="alice")
    with pytest.raises(ImmutableProcess, match="not yours to replace") as caught:
        registry.replace("adder", adder(tmp_path / "v3", version="3.0"), owner="bob")
    assert caught.value.status == 403
    registry.deploy(adder(tmp_path / "other", id="other"), owner="alice")
    with pytest.raises(ManifestError, match="id: the package's id is 'adder'"):
        registry.replace("other", newer, owner="alice")


def test_another_users_id_is_not_available_and_a_private_one_is_not_found(registry, tmp_path):
    registry.deploy(adder(tmp_path / "a"), owner="alice")
    with pytest.raises(Conflict) as caught:
        registry.deploy(adder(tmp_path / "b", version="9"), owner="bob")
    assert str(caught.value) == "the process id 'adder' is not available; choose another id"
    assert caught.value.status == 409
    with pytest.raises(AlgorithmNotFound):  # private: bob cannot tell it exists
        registry.replace("adder", adder(tmp_path / "c", version="2"), owner="bob")
    with pytest.raises(AlgorithmNotFound):
        registry.undeploy("adder", owner="bob")
    with pytest.raises(Conflict, match=r"exists already; deploy a new version of it with replace"):
        registry.deploy(adder(tmp_path / "d", version="2"), owner="alice")


def test_undeploy_retires_every_version_and_versions_are_never_reused(registry, tmp_path):
    registry.deploy(adder(tmp_path / "v1"), owner="alice")
    registry.replace("adder", adder(tmp_path / "v2", version="2.0"), owner="alice")
    registry.undeploy("adder", owner="alice")
    with pytest.raises(AlgorithmNotFound):
        registry.get("adder", viewer="alice")
    with pytest.raises(AlgorithmNotFound):
        registry.get("adder", viewer="alice", version="1.0")
    assert registry.list(viewer="alice") == []
    with sqlite3.connect(registry.path) as db:
        states = db.execute("SELECT version, state FROM versions ORDER BY version").fetchall()
    assert states == [("1.0", "retired"), ("2.0", "retired")]
    with pytest.raises(Conflict, match=r"exists already \(retired\)"):
        registry.deploy(adder(tmp_path / "again"), owner="alice")
    assert registry.deploy(adder(tmp_path / "v3", version="3.0"), owner="alice").version == "3.0"
    with pytest.raises(Conflict, match="not available"):  # the id stays alice's
        registry.deploy(adder(tmp_path / "b", version="4.0"), owner="bob")


def test_two_deploys_of_one_id_at_once_do_not_both_win(registry, tmp_path):
    """Each deploy's test case pauses a second, so the two are surely testing together."""
    packages = [
        zip_folder(
            adder(
                tmp_path / name,
                tests=[
                    {
                        "inputs": {"numbers": ["tests/a.txt"]},
                        "parameters": {"pause": 1.0},
                        "expect": {"total.txt": "tests/total.txt"},
                    }
                ],
                expected="total=3.0\n",
            )
        )
        for name in ("first", "second")
    ]
    results: list[object] = []
    start = threading.Barrier(2)

    def deploy(data: bytes, owner: str) -> None:
        start.wait()
        try:
            results.append(registry.deploy(data, owner=owner))
        except Conflict as error:
            results.append(error)

    threads = [
        threading.Thread(target=deploy, args=(data, owner))
        for data, owner in zip(packages, ("alice", "bob"), strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [r for r in results if not isinstance(r, Exception)]
    losers = [r for r in results if isinstance(r, Conflict)]
    assert (len(winners), len(losers)) == (1, 1)
    assert registry.get("adder", viewer=winners[0].owner).version == "1.0"
    with sqlite3.connect(registry.path) as db:
        assert db.execute("SELECT COUNT(*) FROM versions").fetchone() == (1,)


def test_a_deploy_that_died_while_testing_is_forgotten_by_the_next_registry(tmp_path):
    data = tmp_path / "data"
    with AlgorithmRegistry(data, settings=DeploySettings()) as first:
        first.deploy(adder(tmp_path / "a"), owner="alice")
        with sqlite3.connect(first.path) as db:  # as a deploy killed mid-test leaves it
            db.execute(
                "UPDATE versions SET state = 'testing', serial = NULL, deployer = ?",
                (f"{_hostname()}:999999999",),  # a pid no process has
            )
    with AlgorithmRegistry(data, settings=DeploySettings()) as second:
        with sqlite3.connect(second.path) as db:
            assert db.execute("SELECT COUNT(*) FROM versions").fetchone() == (0,)
        assert not (second.root / "adder" / "1.0").exists()
        assert second.deploy(adder(tmp_path / "b"), owner="bob").owner == "bob"


def test_the_builtin_composite_is_deployed_once_public_and_owned_by_nearline(registry):
    package = next(path for path in builtin_algorithms() if path.name == "pathfinder")
    first = registry.ensure_builtin(package, owner="nearline")
    assert (first.id, first.owner, first.public) == ("pathfinder", "nearline", True)
    assert registry.get("pathfinder", viewer=None).manifest.command == (
        "python",
        "-m",
        "nearline.composite.job",
    )
    again = registry.ensure_builtin(package, owner="nearline")
    assert again.deployed == first.deployed
    with pytest.raises(ImmutableProcess):
        registry.undeploy("pathfinder", owner="alice")
    registry.undeploy("pathfinder", owner="nearline")
    assert registry.ensure_builtin(package, owner="nearline") is None  # undeployed on purpose


def _hostname() -> str:
    import socket

    return socket.gethostname()


def test_manifest_errors_come_before_anything_is_kept(registry, tmp_path):
    from .conftest import adder_manifest

    write_package(tmp_path / "bad", adder_manifest(version=2), {"add.py": ""})
    with pytest.raises(ManifestError, match="version: expected a version string"):
        registry.deploy(tmp_path / "bad", owner="alice")
    assert sorted(p.name for p in Path(registry.root).iterdir()) == [".incoming"]
    assert list((registry.root / ".incoming").iterdir()) == []


def test_a_version_under_test_when_its_process_is_undeployed_is_not_promoted(registry, tmp_path):
    registry.deploy(adder(tmp_path / "v1"), owner="alice")
    slow = adder(tmp_path / "v2", version="2.0", expected="total=3.0\n", tests=[{
        "inputs": {"numbers": ["tests/a.txt"]}, "parameters": {"pause": 1.5},
        "expect": {"total.txt": "tests/total.txt"}}])  # fmt: skip
    outcome: list[BaseException] = []

    def replace() -> None:
        try:
            registry.replace("adder", slow, owner="alice")
        except Conflict as error:
            outcome.append(error)

    thread = threading.Thread(target=replace)
    thread.start()
    with sqlite3.connect(registry.path) as db:
        while not db.execute("SELECT 1 FROM versions WHERE state = 'testing'").fetchone():
            thread.join(0.02)
    registry.undeploy("adder", owner="alice")
    thread.join()
    assert [str(e) for e in outcome] == ["process 'adder' was undeployed while it was tested"]
    with sqlite3.connect(registry.path) as db:
        assert db.execute("SELECT version, state FROM versions").fetchall() == [("1.0", "retired")]
    assert not (registry.root / "adder" / "2.0").exists()
