"""Requirements installed from wheels into the algorithm's own environment (a local folder of
wheels here: no network), imported inside the sandbox, over nearline's own packages."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import numpy as np
import pytest

from nearline.algorithms import AlgorithmRegistry, DeploySettings, WheelSource
from nearline.errors import DeployError

from .conftest import adder_manifest, write_package

# writes the library's answer and where numpy came from
PROGRAM = """\
import json, os, pathlib
import numpy, tinylib
job = json.loads(pathlib.Path(os.environ["NEARLINE_JOB"]).read_text())
out = pathlib.Path(job["outputs"])
(out / "answer.txt").write_text(f"{tinylib.ANSWER} {tinylib.mean([1, 2, 6])}\\n")
(out / "where.txt").write_text(numpy.__file__ + "\\n" + tinylib.__file__ + "\\n")
"""


def make_wheel(folder: Path, name: str, version: str, requires: list[str], code: str) -> Path:
    """A pure-Python wheel written by hand (PEP 427: files, METADATA, WHEEL, RECORD)."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": code,
        f"{info}/METADATA": "Metadata-Version: 2.1\n"
        f"Name: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {line}\n" for line in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: nearline-tests\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }

    def digest(text: str) -> str:
        raw = hashlib.sha256(text.encode()).digest()
        return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    record = "".join(
        f"{path},{digest(text)},{len(text.encode())}\n" for path, text in files.items()
    )
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{info}/RECORD", record + f"{info}/RECORD,,\n")
    return wheel


TINYLIB = "import numpy\nANSWER = 42\n\ndef mean(values):\n    return float(numpy.mean(values))\n"


def package(folder: Path, requirements: list[str]) -> Path:
    manifest = adder_manifest(
        id="tiny",
        command=["python", "main.py"],
        requirements=requirements,
        tests=[{"inputs": {"numbers": ["in.txt"]}, "expect": {"answer.txt": "answer.txt"}}],
    )
    files = {"main.py": PROGRAM, "in.txt": "1\n", "answer.txt": "42 3.0\n"}
    return write_package(folder, manifest, files)


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    folder = tmp_path / "wheels"
    make_wheel(folder, "tinylib", "0.1", ["numpy>=1.20"], TINYLIB)
    make_wheel(folder, "greedylib", "0.1", ["numpy>=999"], "")
    return folder


def registry_of(tmp_path: Path, wheels: Path) -> AlgorithmRegistry:
    settings = DeploySettings(wheels=WheelSource(wheels=wheels))
    return AlgorithmRegistry(tmp_path / "data", settings=settings)


def test_a_requirement_from_a_local_wheel_is_imported_in_the_sandbox(tmp_path, wheels):
    with registry_of(tmp_path, wheels) as registry:
        algorithm = registry.deploy(package(tmp_path / "p", ["tinylib==0.1"]), owner="alice")
        env = algorithm.package.parent / "env"
        assert algorithm.python == env / "bin" / "python"
        site = next(env.glob("lib/python3*/site-packages"))
        assert (site / "tinylib" / "__init__.py").is_file()
        assert not (site / "numpy").exists()  # nearline's numpy serves it
        install_log = (algorithm.package.parent / "install.log").read_text()
        assert "--only-binary :all:" in install_log
        assert f"--no-index --find-links {wheels}" in install_log
        # a real run, as the orders room makes it, shows where each import came from
        from nearline.algorithms import run_algorithm

        inputs = {"numbers": [{"path": str(algorithm.package / "in.txt"), "item": {"id": "in"}}]}
        result = run_algorithm(
            algorithm, job_id="j", inputs=inputs, parameters={}, folder=tmp_path / "run"
        )
        assert result.outcome.ok, result.log.read_text()
        numpy_file, tinylib_file = (result.outputs_folder / "where.txt").read_text().split()
        assert Path(numpy_file) == Path(np.__file__)
        assert Path(tinylib_file).is_relative_to(env)


def test_a_dependency_nearline_cannot_satisfy_is_named(tmp_path, wheels):
    with registry_of(tmp_path, wheels) as registry, pytest.raises(DeployError) as caught:
        registry.deploy(package(tmp_path / "p", ["greedylib"]), owner="alice")
    message = str(caught.value)
    assert f"greedylib needs 'numpy>=999' but nearline provides numpy {np.__version__}" in message
    assert "add numpy>=999 to requirements to install your own" in message
    assert registry.list(viewer="alice") == []
    assert not (registry.root / "tiny").joinpath("1.0").exists()


def test_a_missing_wheel_fails_with_the_installers_words(tmp_path, wheels):
    with registry_of(tmp_path, wheels) as registry, pytest.raises(DeployError) as caught:
        registry.deploy(package(tmp_path / "p", ["nosuchlib>=1"]), owner="alice")
    message = str(caught.value)
    assert message.startswith("requirements: could not be installed (exit 1)")
    assert "nosuchlib" in message
    assert str(tmp_path) not in message  # the service's folders are named, not shown
