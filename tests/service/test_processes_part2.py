"""OGC API - Processes Part 2's parts that nearline does keep, from outside: each listed
process says whether the caller may change it (``mutable``), and the refusals of a deploy,
replace or undeploy carry Part 2's exception types. The class itself is not declared, because
nearline deploys its own zip packages, not OGC application packages (docs/algorithms.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..live_service import LiveService
from .conftest import PACKAGES, deploy, serving, zip_folder

PART2 = "http://www.opengis.net/def/exceptions/ogcapi-processes-2/1.0/"
ZIP = {"Content-Type": "application/zip"}
CWL = "cwlVersion: v1.2\nclass: CommandLineTool\nbaseCommand: echo\ninputs: {}\noutputs: {}\n"


@pytest.fixture(scope="module")
def part2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    """A server with the echo process on (and the built-in pathfinder), alice's public
    granule-sizes deployed."""
    with serving(tmp_path_factory.mktemp("part2"), extra=("--echo", "on")) as service:
        deploy(service, "alice", "sizes", public=True)
        yield service


def listed(live: LiveService, user: str) -> dict[str, bool]:
    with live.client(user) as client:
        processes = client.get("/processes").json()["processes"]
    return {process["id"]: process["mutable"] for process in processes}


def test_mutable_says_whether_the_caller_may_change_the_process(part2):
    builtin = {"echo": False, "openeo": False, "pathfinder": False, "subset": False}
    assert listed(part2, "alice") == {"granule-sizes": True, **builtin}
    assert listed(part2, "bob") == {"granule-sizes": False, **builtin}
    with part2.client("bob") as client:
        assert client.get("/processes/granule-sizes").json()["mutable"] is False
        assert client.get("/processes/echo").json()["mutable"] is False
    with part2.client("alice") as client:
        assert client.get("/processes/granule-sizes").json()["mutable"] is True


@pytest.mark.parametrize("process", ["granule-sizes", "echo", "openeo", "pathfinder", "subset"])
def test_changing_a_process_not_yours_is_immutable_process(part2, process):
    package = zip_folder(PACKAGES / "sizes")
    with part2.client("bob") as client:
        replaced = client.put(f"/processes/{process}", content=package, headers=ZIP)
        undeployed = client.delete(f"/processes/{process}")
    for response in (replaced, undeployed):
        assert response.status_code == 403, response.text
        assert response.json()["type"] == PART2 + "immutable-process"
    assert listed(part2, "alice") == {
        "granule-sizes": True,
        "echo": False,
        "openeo": False,
        "pathfinder": False,
        "subset": False,
    }  # all still there


def test_a_second_deploy_of_one_id_is_duplicated_process(part2):
    with part2.client("alice") as client:
        response = client.post("/processes", content=zip_folder(PACKAGES / "sizes"), headers=ZIP)
    assert response.status_code == 409, response.text
    assert response.json()["type"] == PART2 + "duplicated-process"
    assert "replace" in response.json()["detail"]


@pytest.mark.parametrize(
    ("media_type", "body"),
    [
        ("application/cwl+yaml", CWL),
        ("application/ogcapppkg+json", '{"executionUnit": {"href": "http://x/echo.cwl"}}'),
        ("text/plain", "print(1)"),
    ],
)
def test_a_package_of_another_kind_is_unsupported_media_type(part2, media_type, body):
    with part2.client("alice") as client:
        deployed = client.post("/processes", content=body, headers={"Content-Type": media_type})
        replaced = client.put(
            "/processes/granule-sizes", content=body, headers={"Content-Type": media_type}
        )
    for response in (deployed, replaced):
        assert response.status_code == 415, response.text
        problem = response.json()
        assert problem["type"] == PART2 + "unsupported-media-type"
        assert "application/zip" in problem["detail"]
        assert media_type in problem["detail"]


def test_conformance_leaves_out_the_part2_class_it_does_not_pass(part2):
    with part2.client("alice") as client:
        classes = client.get("/conformance").json()["conformsTo"]
    assert not [c for c in classes if "ogcapi-processes-2" in c]
    assert "http://www.opengis.net/spec/ogcapi-processes-1/1.0/conf/core" in classes
