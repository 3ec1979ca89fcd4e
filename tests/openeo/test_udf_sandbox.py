"""A UDF is a stranger's Python, run as an attacker would write it: each one that reaches for
the network, the server's or another user's files, the CPU, the disk or the memory meets the
sandbox's wall (the same as an uploaded algorithm's), its batch job fails with a log line
that says which wall, and the service goes on serving. A UDF that raises fails its job with
its own error and the UDF's line."""

from __future__ import annotations

from pathlib import Path

import openeo
import pytest
from openeo.rest import OpenEoApiError

from ..live_service import LiveService
from ..tiles.gridded import PUBLIC

ONE_DAY = ["2012-12-12", "2012-12-13"]
BOX = {"west": -170.0, "south": -40.0, "east": -160.0, "north": -30.0}
# every probe raises what it found, so the job's log says it; "reached" would be an escape
NETWORK = """
import socket, xarray

def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    try:
        socket.create_connection(("127.0.0.1", context["port"]), timeout=5).close()
    except OSError as error:
        raise RuntimeError(f"network refused: {type(error).__name__}")
    raise RuntimeError("network reached")
"""
FILES = """
import xarray

def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    found = []
    for path in context["paths"]:
        try:
            with open(path, "rb") as handle:
                handle.read(16)
            found.append(f"read {path}")
        except OSError as error:
            found.append(type(error).__name__)
    raise RuntimeError("files: " + ", ".join(found))
"""
LOOP = """
import xarray

def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    while True:
        pass
"""
FILL = """
import os, xarray

def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    with open(os.path.join(os.environ["TMPDIR"], "fill"), "wb") as handle:
        for _ in range(4096):
            handle.write(b"x" * 2**20)
            handle.flush()
    raise RuntimeError("disk not full after 4 GiB")
"""
HOG = """
import numpy, xarray

def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    held = [numpy.ones(2**27) for _ in range(64)]  # 1 GiB each, 64 GiB in all
    raise RuntimeError(f"memory not exhausted: {len(held)} GiB held")
"""
RAISES = """
import xarray

def apply_datacube(cube: xarray.DataArray, context: dict) -> xarray.DataArray:
    ratio = context["numerator"] / 0
    return cube * ratio
"""


def failed(connection: openeo.Connection, code: str, *, context: dict | None = None,
           options: dict | None = None) -> list[str]:  # fmt: skip
    """Run ``code`` as a UDF over a day's NDVI in a batch job that must fail; its error log
    lines."""
    cube = connection.load_collection(PUBLIC, spatial_extent=BOX, temporal_extent=ONE_DAY,
                                      bands=["ndvi"])  # fmt: skip
    udf = openeo.UDF(code, runtime="Python", context=context or {})
    job = cube.apply(udf).create_job(out_format="netCDF", job_options=options)
    with pytest.raises(openeo.rest.JobFailedException):
        job.start_and_wait(max_poll_interval=1, print=lambda *_: None)
    assert job.status() == "error"
    return [entry["message"] for entry in job.logs(level="error")]


def said(messages: list[str], text: str) -> bool:
    return any(text in message for message in messages)


def test_a_udf_that_raises_fails_its_job_naming_the_error_and_line(
    alice: openeo.Connection,
) -> None:
    messages = failed(alice, RAISES, context={"numerator": 1})
    assert said(messages, "run_udf: the UDF raised ZeroDivisionError: division by zero at line 5 "
                "of the UDF"), messages  # fmt: skip
    assert said(messages, "the job failed: the algorithm exited with code 1")


def test_a_udf_has_no_network(alice: openeo.Connection, live: LiveService) -> None:
    messages = failed(alice, NETWORK, context={"port": live.port})
    assert said(messages, "network refused"), messages
    assert not said(messages, "network reached")


def test_a_udf_sees_neither_the_servers_nor_other_users_files(
    alice: openeo.Connection, live: LiveService, tmp_path: Path
) -> None:
    secret = live.data.parent / "bobs-secret.txt"
    secret.write_text("bob's")
    paths = [str(live.data / "service.db"), str(live.data / "catalogue.db"), str(secret),
             "/root/.bash_history"]  # fmt: skip
    messages = failed(alice, FILES, context={"paths": paths})
    (line,) = [message for message in messages if "files: " in message]
    assert "read " not in line, line
    assert line.endswith("files: " + ", ".join(["FileNotFoundError"] * len(paths))
                         + " at line 13 of the UDF"), line  # fmt: skip
    assert secret.read_text() == "bob's"


def test_a_udf_that_loops_forever_meets_its_time_limit(alice: openeo.Connection) -> None:
    messages = failed(alice, LOOP, options={"timeout": 20})
    assert said(messages, "limit of 20 s"), messages  # wall clock or CPU time, whichever first


def test_a_udf_that_fills_the_disk_meets_its_disk_limit(alice: openeo.Connection) -> None:
    messages = failed(alice, FILL, options={"disk": "64MiB"})
    assert said(messages, "disk limit of 64 MiB exceeded"), messages
    assert not said(messages, "disk not full")


def test_a_udf_that_exhausts_memory_meets_its_memory_limit(alice: openeo.Connection) -> None:
    messages = failed(alice, HOG, options={"memory": "768MiB"})
    # the memory cgroup stops it; where there is none, the rlimit's MemoryError does
    assert said(messages, "memory limit of 768 MiB exceeded") or said(
        messages, "ran out of memory"), messages  # fmt: skip
    assert not said(messages, "memory not exhausted")


def test_the_service_serves_on_and_its_files_are_whole(
    alice: openeo.Connection, live: LiveService
) -> None:
    """After every probe above: the server answers, and a plain job still runs."""
    cube = alice.load_collection(PUBLIC, spatial_extent=BOX, temporal_extent=ONE_DAY,
                                 bands=["ndvi"])  # fmt: skip
    job = cube.max_time().create_job(out_format="netCDF")
    job.start_and_wait(max_poll_interval=1, print=lambda *_: None)
    assert job.status() == "finished"
    assert (live.data / "service.db").stat().st_size > 0
    with live.client("alice") as client:
        assert client.get("/openeo/1.2/me").json()["user_id"] == "alice"


def test_job_options_only_tighten_and_name_the_wrong_one(alice: openeo.Connection) -> None:
    cube = alice.load_collection(PUBLIC, temporal_extent=ONE_DAY, bands=["ndvi"])
    with pytest.raises(openeo.rest.OpenEoApiError) as refused:
        cube.create_job(out_format="netCDF", job_options={"executor-memory": "4g"})
    assert refused.value.http_status_code == 400
    assert "'executor-memory' is not an option here" in refused.value.message
    with pytest.raises(openeo.rest.OpenEoApiError) as refused:
        cube.create_job(out_format="netCDF", job_options={"memory": "1MiB"})
    assert "job_options memory: at least 256 MiB" in refused.value.message


def test_a_synchronous_udf_that_raises_is_an_openeo_error(alice: openeo.Connection) -> None:
    cube = alice.load_collection(PUBLIC, spatial_extent=BOX, temporal_extent=ONE_DAY,
                                 bands=["ndvi"])  # fmt: skip
    udf = openeo.UDF(RAISES, runtime="Python", context={"numerator": 1})
    with pytest.raises(OpenEoApiError) as refused:
        cube.apply(udf).download(format="netCDF")
    assert refused.value.http_status_code == 400
    assert refused.value.code == "ProcessGraphInvalid"
    assert "ZeroDivisionError" in refused.value.message
