"""Small real packages written by the tests, and a registry on a fresh data folder."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from nearline.algorithms import AlgorithmRegistry, DeploySettings

from .example_data import EXAMPLES

# a Python program that writes "<prefix><sum of the numbers in its inputs>\n" to total.txt
ADDER = """\
import json, os, pathlib, time
job = json.loads(pathlib.Path(os.environ["NEARLINE_JOB"]).read_text())
numbers = [float(pathlib.Path(e["path"]).read_text()) for e in job["inputs"]["numbers"]]
time.sleep(job["parameters"].get("pause", 0))
total = sum(numbers) * job["parameters"]["scale"]
out = pathlib.Path(job["outputs"]) / "total.txt"
out.write_text(job["parameters"]["prefix"] + repr(total) + "\\n")
"""


def adder_manifest(**changes: Any) -> dict[str, Any]:
    manifest = {
        "id": "adder",
        "version": "1.0",
        "title": "Adds numbers",
        "description": "Sums the numbers in its input files.",
        "command": ["python", "add.py"],
        "inputs": [{"name": "numbers", "collection": "numbers", "min": 1, "max": 5}],
        "outputs": [{"name": "total", "media_type": "text/plain", "pattern": "*.txt"}],
        "parameters": {
            "type": "object",
            "properties": {
                "scale": {"type": "number", "default": 1},
                "prefix": {"type": "string", "default": "total="},
                "pause": {"type": "number", "default": 0},
            },
        },
        "resources": {"cpus": 1, "memory": "1GiB", "timeout": "2m"},
        "tests": [
            {
                "inputs": {"numbers": ["tests/a.txt", "tests/b.txt"]},
                "parameters": {"scale": 2},
                "expect": {"total.txt": "tests/total.txt"},
            }
        ],
    }
    manifest.update(changes)
    return {key: value for key, value in manifest.items() if value is not None}


def write_package(folder: Path, manifest: dict[str, Any], files: dict[str, str | bytes]) -> Path:
    """A package folder: ``algorithm.yaml`` from ``manifest`` and ``files`` by path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "algorithm.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return folder


def adder(folder: Path, *, expected: str = "total=10.0\n", **changes: Any) -> Path:
    """The adder package: 3 + 2 scaled by 2 is 10."""
    return write_package(
        folder,
        adder_manifest(**changes),
        {"add.py": ADDER, "tests/a.txt": "3\n", "tests/b.txt": "2\n", "tests/total.txt": expected},
    )


def zip_folder(folder: Path) -> bytes:
    """A package folder as zip bytes, as a client uploads it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return buffer.getvalue()


def copy_example(name: str, into: Path) -> Path:
    target = into / name
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns("quicklook", "*.o"))
    return target


@pytest.fixture
def registry(tmp_path: Path) -> AlgorithmRegistry:
    with AlgorithmRegistry(tmp_path / "data", settings=DeploySettings()) as opened:
        yield opened
