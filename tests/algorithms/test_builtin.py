"""The built-in Pathfinder algorithm: its manifest agrees with the chain it runs, and a real
run in the sandbox composites staged granules into the 12-band igh-8km file and its PNG."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from nearline.algorithms import (
    builtin_algorithms,
    manifest_to_process,
    read_manifest,
    run_algorithm,
)
from nearline.algorithms._kernels import NEARLINE, seed_kernel_cache
from nearline.composite import REDUCERS, OnError, Period, run
from nearline.composite.job import output_name
from nearline.grid._registry import GRIDS
from nearline.swath import synthesize_day

from .conftest import adder_manifest, write_package


@pytest.fixture(scope="module")
def manifest():
    package = next(path for path in builtin_algorithms() if path.name == "pathfinder")
    return read_manifest(package)


def test_the_manifest_offers_exactly_what_the_chain_accepts(manifest):
    properties = manifest.parameters["properties"]
    assert properties["grid"]["enum"] == list(GRIDS)
    assert properties["reducer"]["enum"] == list(REDUCERS)
    assert properties["period"]["enum"] == [p.value for p in Period]
    assert properties["on_error"]["enum"] == [o.value for o in OnError]
    assert properties["grid"]["default"] == "igh-8km"
    assert manifest.command == ("python", "-m", "nearline.composite.job")
    spec = manifest.inputs[0]
    assert (spec.name, spec.collection, spec.min_count, spec.max_count) == (
        "granules",
        "avhrr-gac",
        1,
        None,
    )
    resources = manifest.resources
    assert (resources.cpus, resources.memory, resources.timeout) == (2, 3 * 1024**3, 3600)
    process = manifest_to_process(manifest)
    assert list(process["inputs"]) == ["granules", "grid", "reducer", "period", "on_error"]
    assert {name: o["schema"]["contentMediaType"] for name, o in process["outputs"].items()} == {
        "composite": "application/x-netcdf",
        "quicklook": "image/png",
    }


def test_output_names_carry_grid_period_and_first_day():
    entries = [
        {"path": "b", "item": {"properties": {"start_datetime": "2012-12-13T00:10:00Z"}}},
        {"path": "a", "item": {"properties": {"datetime": "2012-12-12T23:50:00Z"}}},
    ]
    assert output_name(entries, grid="igh-8km", period="day") == "pathfinder-igh-8km-day-2012-12-12"
    assert (
        output_name([{"path": "a"}], grid="igh-1km", period="month") == "pathfinder-igh-1km-month"
    )


PROBE = """\
import json, os, pathlib
from nearline.grid import _footprints
job = json.loads(pathlib.Path(os.environ["NEARLINE_JOB"]).read_text())
found = []
for name in dir(_footprints):
    cache = getattr(getattr(_footprints, name), "_cache", None)
    index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
    if index is None or not os.path.lexists(index):
        continue
    found.append({
        "index": os.path.basename(index),
        "cache": cache._cache_path,
        "link": os.path.islink(index),
        "overloads": len(cache._cache_file._load_index()),
    })
(pathlib.Path(job["outputs"]) / "kernels.json").write_text(json.dumps(found))
"""


def test_a_run_in_the_sandbox_makes_the_composite_and_its_quicklook(registry, tmp_path):
    from PIL import Image

    package = next(path for path in builtin_algorithms() if path.name == "pathfinder")
    algorithm = registry.ensure_builtin(package, owner="nearline")
    granules = sorted(synthesize_day("2012-12-12", 2, tmp_path / "archive", lines_per_orbit=900))
    # an unsandboxed run compiles nearline's kernels into its __pycache__ folders
    run(granules, out=tmp_path / "warm.nc", grid="igh-8km", workers=2)
    items = [
        {
            "id": path.stem,
            "collection": "avhrr-gac",
            "properties": {"start_datetime": datetime(2012, 12, 12, tzinfo=UTC).isoformat()},
        }
        for path in granules
    ]
    inputs = {
        "granules": [{"path": str(p), "item": i} for p, i in zip(granules, items, strict=True)]
    }
    result = run_algorithm(
        algorithm,
        job_id="composite-1",
        inputs=inputs,
        parameters={"grid": "igh-8km", "reducer": "max-ndvi", "period": "day", "on_error": "fail"},
        folder=tmp_path / "run",
    )
    assert result.outcome.ok, result.log.read_text()[-3000:]
    names = [p.name for p in result.output_files]
    assert names == [
        "pathfinder-igh-8km-day-2012-12-12.nc",
        "pathfinder-igh-8km-day-2012-12-12.png",
    ]
    with xr.open_dataset(result.output_files[0]) as dataset:
        bands = [name for name in dataset.data_vars if name != "crs"]
        assert len(bands) == 12
        assert dataset["ndvi"].shape == (2168, 5004)
        assert int(np.isfinite(dataset["ndvi"].values).sum()) > 1000
        assert dataset.attrs["input_granules"].split() == [Path(p).name for p in granules]
    with Image.open(result.output_files[1]) as image:
        assert image.size[0] == 2502
        assert image.size[1] > 1084  # the map, then its legend
    assert "composited 2 granules (0 skipped)" in result.log.read_text()
    # in a run's own disk, numba finds those kernels' indexes where it looks: through links
    # to nearline's __pycache__ (_kernels.py), not copies; they are valid for the source
    prober = write_package(
        tmp_path / "prober",
        adder_manifest(
            id="prober", command=["python", "probe.py"], tests=None, parameters=None,
            resources={"cpus": 1, "memory": "1GiB", "disk": "16MiB", "timeout": "2m"},
        ),
        {"probe.py": PROBE},
    )  # fmt: skip
    probed = run_algorithm(
        registry.deploy(prober, owner="alice"),
        job_id="probe-1",
        inputs={"numbers": [{"path": str(granules[0]), "item": items[0]}]},
        parameters={},
        folder=tmp_path / "probe",
    )
    assert probed.outcome.ok, probed.log.read_text()[-3000:]
    found = json.loads((probed.outputs_folder / "kernels.json").read_text())
    compiled = {path.name for path in (NEARLINE / "grid" / "__pycache__").glob("_footprints.*.nbi")}
    assert compiled
    assert {entry["index"] for entry in found} == compiled
    assert all(entry["link"] and entry["overloads"] >= 1 for entry in found)
    assert all(
        entry["cache"].startswith(str(tmp_path / "probe" / "tmp" / "numba")) for entry in found
    )


def test_kernel_caches_are_linked_under_numbas_names(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub" / "__pycache__").mkdir(parents=True)
    (package / "sub" / "__pycache__" / "mod.f-10.py311.nbi").write_bytes(b"index")
    (package / "sub" / "__pycache__" / "mod.f-10.py311.1.nbc").write_bytes(b"code")
    (package / "sub" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"bytecode")
    (package / "sub" / "mod.py").write_text("")
    # a renamed module's kernels stay behind in __pycache__: no run gets them
    (package / "sub" / "__pycache__" / "gone.f-3.py311.nbi").write_bytes(b"stale")
    assert seed_kernel_cache(tmp_path / "cache", package=package) == 2
    digest = hashlib.sha1(str(package / "sub").encode()).hexdigest()
    linked = tmp_path / "cache" / f"sub_{digest}"
    assert sorted(p.name for p in linked.iterdir()) == [
        "mod.f-10.py311.1.nbc",
        "mod.f-10.py311.nbi",
    ]
    assert (linked / "mod.f-10.py311.nbi").read_bytes() == b"index"
    index = package / "sub" / "__pycache__" / "mod.f-10.py311.nbi"
    assert (linked / "mod.f-10.py311.nbi").readlink() == index
