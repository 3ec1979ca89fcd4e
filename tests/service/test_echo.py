"""The echo process from outside: a live `nearline serve --echo on`, real clients (httpx,
OWSLib), every kind of input and every execution mode the OGC suite tries (sync and async, raw
and document, by value and by reference, one output and several, a job not done yet)."""

from __future__ import annotations

import base64
import email.parser
import email.policy
import io
import json
import time
import zipfile
from collections.abc import Iterator

import httpx
import pytest
from owslib.ogcapi import REQUEST_HEADERS
from owslib.ogcapi.processes import Processes

from ..live_service import LiveService
from .conftest import PACKAGES

PNG = b"\x89PNG\r\n\x1a\n\x00\x01\xff"
INPUTS = {
    "string": "hello",
    "number": 1.5,
    "object": {"value": {"a": [1, {"b": None}]}},  # a qualified value: the object is inside
    "array": [3, 1, 2],
    "mixed": 7,
    "binary": {"value": base64.b64encode(PNG).decode(), "mediaType": "image/png"},
    "bbox": {"bbox": [7, 51.9, 7.1, 52], "crs": "http://www.opengis.net/def/crs/OGC/1.3/CRS84"},
}
OGC = "http://www.opengis.net/def/exceptions/ogcapi-processes-1/1.0"


@pytest.fixture(scope="module")
def echoing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    """A server with the echo process on, and users alice and bob (no granules: it needs
    none)."""
    service = LiveService(tmp_path_factory.mktemp("echo") / "data")
    service.add_user("alice")
    service.add_user("bob")
    service.start("--echo", "on")
    try:
        yield service
    finally:
        service.stop()


def execute(live: LiveService, body: dict, *, user: str = "alice", prefer: str | None = None):
    headers = {"Prefer": prefer} if prefer else {}
    with live.client(user) as client:
        return client.post("/processes/echo/execution", json=body, headers=headers)


def parts_of(response: httpx.Response) -> dict[str, email.message.Message]:
    """A multipart/related answer's parts, by Content-ID, read by the standard library."""
    head = f"Content-Type: {response.headers['content-type']}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + response.content)
    assert message.get_content_type() == "multipart/related"
    return {part["Content-ID"].strip("<>"): part for part in message.iter_parts()}


def test_the_description_has_an_input_and_output_of_each_kind(echoing):
    with echoing.client("alice") as client:
        listed = {p["id"]: p for p in client.get("/processes").json()["processes"]}
        described = client.get("/processes/echo").json()
        pages = [client.get("/processes", params={"limit": 1}).json()]
        while following := [link for link in pages[-1]["links"] if link["rel"] == "next"]:
            pages.append(client.get(following[0]["href"]).json())
    assert listed["echo"]["outputTransmission"] == ["value", "reference"]
    assert described["jobControlOptions"] == ["sync-execute", "async-execute", "dismiss"]
    assert list(described["inputs"]) == [*INPUTS, "pause"]
    assert list(described["outputs"]) == list(INPUTS)
    assert [i["minOccurs"] for i in described["inputs"].values()] == [1] + [0] * 7
    assert described["inputs"]["mixed"]["schema"]["oneOf"][1] == {"type": "number"}
    assert described["inputs"]["bbox"]["schema"]["allOf"][0] == {"format": "ogc-bbox"}
    assert described["links"][1]["href"].endswith("/processes/echo/execution")
    assert [len(page["processes"]) for page in pages] == [1] * len(listed)
    assert [p["id"] for page in pages for p in page["processes"]] == list(listed)


def test_sync_raw_one_output_is_its_bytes(echoing):
    body = {"inputs": INPUTS, "outputs": {"binary": {}}, "response": "raw"}
    response = execute(echoing, body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    assert response.content == PNG
    text = execute(echoing, {"inputs": {"string": "hello"}, "outputs": {"string": {}}})
    assert (text.status_code, text.text) == (200, "hello")  # raw: 1.0's default response
    assert text.headers["content-type"] == "text/plain; charset=utf-8"


def test_sync_raw_several_outputs_are_multipart_with_references_as_locations(echoing):
    outputs = {name: {"transmissionMode": "value"} for name in INPUTS}
    outputs["array"] = {"transmissionMode": "reference"}
    response = execute(echoing, {"inputs": INPUTS, "outputs": outputs, "response": "raw"})
    assert response.status_code == 200, response.text
    parts = parts_of(response)
    assert list(parts) == list(INPUTS)
    assert parts["string"].get_content() == "hello"
    assert parts["binary"].get_content_type() == "image/png"
    assert parts["binary"].get_payload(decode=True) == PNG
    assert json.loads(parts["object"].get_payload(decode=True)) == {"a": [1, {"b": None}]}
    assert json.loads(parts["bbox"].get_payload(decode=True)) == INPUTS["bbox"]
    assert json.loads(parts["number"].get_payload(decode=True)) == 1.5
    location = parts["array"]["Content-Location"]
    assert parts["array"].get_payload() == ""
    with echoing.client("alice") as client:
        assert client.get(location).json() == [3, 1, 2]
        assert client.get(response.headers["location"]).json()["status"] == "successful"


def test_sync_document_inline_qualified_and_by_reference(echoing):
    linked = {"href": "http://127.0.0.1:9/never-fetched.tif", "type": "image/tiff"}
    body = {
        "inputs": {**INPUTS, "mixed": {"value": "seven"}, "binary": linked},
        "outputs": {"string": {}, "object": {}, "mixed": {}, "binary": {}, "number": {}},
        "response": "document",
    }
    body["outputs"]["number"] = {"transmissionMode": "reference"}
    response = execute(echoing, body)
    assert response.status_code == 200, response.text
    results = response.json()
    assert results == {
        "string": "hello",
        "object": {"value": {"a": [1, {"b": None}]}, "mediaType": "application/json"},
        "mixed": "seven",
        "binary": linked,  # a reference is echoed as that reference, never fetched
        "number": {"href": results["number"]["href"], "type": "application/json"},
    }
    with echoing.client("alice") as client:
        assert client.get(results["number"]["href"]).json() == 1.5


def test_async_job_status_results_and_job_list(echoing):
    inputs = {"string": "teststring", "object": {"value": "teststring"}}  # as the suite sends
    response = execute(echoing, {"inputs": inputs, "response": "document"}, prefer="respond-async")
    assert response.status_code == 201, response.text
    job = response.json()
    assert response.headers["location"].endswith(f"/jobs/{job['jobID']}")
    assert (job["processID"], job["status"], job["progress"]) == ("echo", "successful", 100)
    with echoing.client("alice") as client:
        results = client.get(f"/jobs/{job['jobID']}/results").json()
        listed = [j["jobID"] for j in client.get("/jobs").json()["jobs"]]
    # an object input's {"value": "teststring"} is that object itself: a string is no object
    assert results == {
        "string": "teststring",
        "object": {"value": {"value": "teststring"}, "mediaType": "application/json"},
    }
    assert listed[0] == job["jobID"]


def test_owslib_executes_echo_sync_and_async(echoing):
    before = dict(REQUEST_HEADERS)
    try:
        processes = Processes(
            echoing.url, headers={"Authorization": f"Bearer {echoing.tokens['bob']}"}
        )
        results = processes.execute("echo", {"string": "hi", "array": [1, 2]})
        assert results == {"string": "hi", "array": [1, 2]}
        status = processes.execute("echo", {"string": "later"}, async_=True)
        assert status["status"] == "successful"
    finally:
        REQUEST_HEADERS.clear()
        REQUEST_HEADERS.update(before)


# seconds a short paused job runs: long enough to be seen running on a loaded machine (with 1,
# a busy CI machine saw it end before the next request)
SHORT_PAUSE = 5


def ended(client, job_id: str) -> dict:
    """The job's status once its pause is over (within a minute)."""
    deadline = time.monotonic() + 60
    while (status := client.get(f"/jobs/{job_id}").json())["status"] == "running":
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
    return status


def test_a_paused_job_is_running_its_results_not_ready_and_it_can_be_dismissed(echoing):
    body = {"inputs": {"string": "wait", "pause": SHORT_PAUSE}, "outputs": {"string": {}}}
    job = execute(echoing, body, prefer="respond-async").json()
    kept = execute(echoing, {"inputs": {"string": "stop", "pause": 30}}, prefer="respond-async")
    with echoing.client("alice") as client:
        assert job["status"] == "running"
        early = client.get(f"/jobs/{job['jobID']}/results")
        assert (early.status_code, early.json()["type"]) == (404, f"{OGC}/result-not-ready")
        done = ended(client, job["jobID"])
        assert (done["status"], done["progress"]) == ("successful", 100)
        assert client.get(f"/jobs/{job['jobID']}/results").text == "wait"
        dismissed = client.delete(f"/jobs/{kept.json()['jobID']}").json()
        assert dismissed["status"] == "dismissed"
        assert client.get(f"/jobs/{kept.json()['jobID']}/results").status_code == 404


def test_the_job_list_filters_by_status_and_process_as_ogc_names_them(echoing):
    def listed(client, **params) -> set[str]:
        response = client.get("/jobs", params={"limit": 1000, **params})
        assert response.status_code == 200, response.text
        return {job["jobID"] for job in response.json()["jobs"]} & mine

    body = {"inputs": {"string": "soon", "pause": SHORT_PAUSE}}
    ends = execute(echoing, body, prefer="respond-async")
    stays = execute(echoing, {"inputs": {"string": "late", "pause": 30}}, prefer="respond-async")
    done = execute(echoing, {"inputs": {"string": "now"}}, prefer="respond-async")
    soon, late, now = (r.json()["jobID"] for r in (ends, stays, done))
    mine = {soon, late, now}
    with echoing.client("alice") as client:
        assert listed(client, status="running") == {soon, late}
        assert listed(client, status="successful") == {now}
        assert ended(client, soon)["status"] == "successful"  # filtered as it is now
        assert listed(client, status="running") == {late}
        assert listed(client, status=["successful", "dismissed"]) == {soon, now}
        assert listed(client, status=["running", "successful"]) == mine
        assert listed(client, processID="echo") == mine
        assert listed(client, processID="pathfinder") == set()
        assert listed(client, processID="echo", status="accepted") == set()
        wrong = client.get("/jobs", params={"status": "finished"})
        assert (wrong.status_code, wrong.json()["detail"].split(":")[0]) == (400, "query.status.0")
        no_id = client.get("/jobs", params={"processID": "\u00ea"})  # no process is named so
        assert (no_id.status_code, no_id.json()["detail"].split(":")[0]) == (
            400,
            "query.processID.0",
        )
        client.delete(f"/jobs/{late}")
        assert listed(client, status="dismissed") == {late}
    with echoing.client("bob") as bob:
        assert listed(bob, status=["running", "successful", "dismissed"]) == set()


def test_another_users_echo_job_is_a_404(echoing):
    job = execute(echoing, {"inputs": {"string": "mine"}}, prefer="respond-async").json()
    with echoing.client("bob") as bob:
        for path in ("", "/results", "/results/string"):
            assert bob.get(f"/jobs/{job['jobID']}{path}").status_code == 404


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"inputs": {"number": 1}}, "input string is required"),
        ({"inputs": {"string": 5}}, "input string: 5 is not of type 'string'"),
        ({"inputs": {"string": "x", "binary": {"type": "wrong/type"}}}, "input binary"),
        ({"inputs": {"string": "x", "binary": "not base64!"}}, "expected base64"),
        ({"inputs": {"string": "x", "bbox": {"bbox": [1, 2, 3]}}}, "input bbox"),
        ({"inputs": {"string": "x", "pause": 61}}, "input pause"),
        ({"inputs": {"string": "x", "nope": 1}}, "echo has no input 'nope'"),
        ({"inputs": {"string": {"href": "file:///etc/passwd"}}}, "http(s) URL"),
        ({"inputs": {"string": "x"}, "outputs": {"pause": {}}}, "echo has no output 'pause'"),
        ({"inputs": {"string": "x"}, "outputs": {"string": {"transmissionMode": "x"}}}, "value or"),
        ({"inputs": {"string": "x"}, "response": "json"}, "expected raw or document"),
        ({"invalid-execute-request": "true)"}, "not invalid-execute-request"),
    ],
)
def test_bad_requests_are_400s_naming_the_problem(echoing, body, named):
    response = execute(echoing, body)
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["type"] == f"{OGC}/invalid-parameter-value"
    assert named in problem["detail"]


def test_inputs_over_a_mebibyte_are_refused(echoing):
    response = execute(echoing, {"inputs": {"string": "x" * 1024**2}})
    assert response.status_code == 413
    assert "the limit is 1,048,576" in response.json()["detail"]


def test_no_package_may_take_the_echo_id(echoing):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as package:
        for path in sorted((PACKAGES / "sizes").rglob("*")):
            if path.is_file():
                text = path.read_bytes()
                if path.name == "algorithm.yaml":
                    text = text.replace(b"id: granule-sizes", b"id: echo")
                package.writestr(path.relative_to(PACKAGES / "sizes").as_posix(), text)
    with echoing.client("alice") as client:
        response = client.post(
            "/processes", content=buffer.getvalue(), headers={"Content-Type": "application/zip"}
        )
    assert response.status_code == 400, response.text
    assert "the id 'echo' is the service's built-in test process" in response.json()["detail"]
