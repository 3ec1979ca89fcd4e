"""What an operator sees of a live `nearline serve --metrics ... --log-format json`: metrics
on an address of their own (never on the API's, whoever asks), scraped by a real Prometheus
while orders run; and a log of JSON lines that follows one order from its POST to its last
output, with no token in any line."""

from __future__ import annotations

import json
import re
import secrets
import socket
from collections.abc import Iterator

import httpx
import pytest

from nearline.cli._serve import METRICS, served_port

from ..live_service import LiveService, nearline
from ..prometheus_server import prometheus
from .conftest import deploy, serving

SIZES = "granule-sizes"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    options = ("--metrics", "127.0.0.1:0", "--log-format", "json")
    with serving(tmp_path_factory.mktemp("operations"), extra=options) as service:
        deploy(service, "alice", "sizes", public=True)
        yield service


def metrics_address(live: LiveService) -> str:
    port = served_port(live.log.read_text(), METRICS)
    assert port is not None, live.log.read_text()[-2000:]
    return f"127.0.0.1:{port}"


def scrape(live: LiveService) -> dict[str, float]:
    """Every sample of the metrics page: {'name{labels}': value}."""
    text = httpx.get(f"http://{metrics_address(live)}/metrics", timeout=10).text
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def order(live: LiveService, user: str, granules: list[str], **headers: str) -> httpx.Response:
    with live.client(user) as client:
        return client.post(
            f"/processes/{SIZES}/execution",
            json={"inputs": {"granules": {"ids": granules}}},
            headers={"Prefer": "respond-async", **headers},
        )


def log_lines(live: LiveService) -> list[dict]:
    """The server's log, each line parsed: every one is a JSON object."""
    lines = [line for line in live.log.read_text().splitlines() if line.strip()]
    return [json.loads(line) for line in lines]


def test_the_api_never_serves_the_metrics_whoever_asks(live):
    for headers in ({}, {"Authorization": f"Bearer {live.tokens['alice']}"}):
        answer = httpx.get(f"{live.url}/metrics", headers=headers, timeout=10)
        assert answer.status_code in (401, 404), answer.text
        assert "nearline_runs" not in answer.text
    assert 'nearline_runs{state="queued",station="queued"}' in scrape(live)


def test_prometheus_scrapes_the_runs_the_orders_made(live, tmp_path):
    before = scrape(live)
    done = 'nearline_runs{state="successful",station="done"}'
    with prometheus(tmp_path / "prometheus", [metrics_address(live)]) as server:
        jobs = [
            (user, order(live, user, [granule]).json()["jobID"])
            for user, granule in (
                ("alice", "granule-001"),
                ("bob", "granule-002"),
                ("alice", "granule-003"),
            )
        ]
        for user, job in jobs:
            assert live.wait_for_job(user, job)["status"] == "successful"
        made = before[done] + len(jobs)
        assert server.value(f"sum({done})", equal=made) == made
        slots = "nearline_slot_overhead_seconds_count"
        held = before[slots] + len(jobs)  # each run's slot, measured once as it was released
        assert server.value(slots, equal=held) == held
        with live.client("alice") as client:
            alices_disk = client.get("/users/me").json()["usage"]["disk"]
        assert alices_disk > 0
        disk = 'nearline_user_disk_held_bytes{user="alice"}'
        assert server.value(disk, equal=alices_disk) == alices_disk
    after = scrape(live)
    assert after['nearline_station_queue_depth{station="queued"}'] == 0
    assert after['nearline_jobs{status="successful"}'] >= len(jobs)
    changes = "nearline_catalogue_changes_total"  # each run's output, catalogued
    assert after[changes] == before[changes] + len(jobs)
    routes = [k for k in after if k.startswith("nearline_http_request_duration_seconds_count")]
    assert 'method="GET",route="/jobs/{job_id}",status="200"' in " ".join(routes)


def test_the_json_log_follows_one_order_from_its_post_to_its_last_output(live):
    request_id = f"order-{secrets.token_hex(6)}"
    answer = order(live, "bob", ["granule-004", "granule-005"], **{"X-Request-ID": request_id})
    assert answer.status_code == 201, answer.text
    assert answer.headers["x-request-id"] == request_id
    job = answer.json()["jobID"]
    assert live.wait_for_job("bob", job)["status"] == "successful"
    lines = log_lines(live)
    (post,) = [line for line in lines if line.get("request_id") == request_id]
    assert (post["job"], post["user"], post["status"]) == (job, "bob", 201)
    assert post["route"] == "/processes/{process_id}/execution"
    followed = [line["message"] for line in lines if line.get("job") == job]
    # the POST's own line is written as its answer is sent: by then admission, on its own
    # thread, may have logged the run (a busy test machine showed "run admitted" first)
    posted = [m for m in followed if m.startswith(f"POST /processes/{SIZES}/execution 201")]
    assert len(posted) == 1
    assert "run admitted" in followed
    stations = [m.removeprefix("run at station ") for m in followed if "at station" in m]
    assert stations == ["allocate", "run", "ingest", "cleanup", "done"]
    kept = [m for m in followed if m.startswith("output kept as item ")]
    assert len(kept) == 1
    assert kept[0].endswith(f"{job}-0-summary.json")
    assert followed.index(kept[0]) < followed.index("run at station done")
    about_runs = [line for line in lines if line.get("job") == job and "run" in line]
    assert {line["user"] for line in about_runs} == {"bob"}
    assert {line["run"] for line in about_runs} == {f"{job}-0"}
    made = answer.headers["x-request-id"]
    unnamed = httpx.get(f"{live.url}/conformance", timeout=10).headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", unnamed)
    assert unnamed != made


def test_no_token_reaches_the_log(live):
    token = live.tokens["alice"]
    stranger = "nl_" + secrets.token_urlsafe(32)
    with live.client("alice") as client:
        assert client.get(f"/jobs/{token}").status_code == 404  # a token where an id goes
        assert client.get("/jobs", params={"token": token}).status_code == 200
    for bad in (stranger, f"{token}x"):
        answer = httpx.get(f"{live.url}/jobs", headers={"Authorization": f"Bearer {bad}"})
        assert answer.status_code == 401
    text = live.log.read_text()
    assert f"/jobs/{token}" not in text
    for secret in (token, stranger, token[3:], stranger[3:]):
        assert secret not in text
    messages = [line["message"] for line in log_lines(live)]
    assert any(message.startswith("GET /jobs/[redacted] 404") for message in messages)


def test_every_line_of_the_log_is_one_json_object(live):
    lines = log_lines(live)
    assert {"time", "level", "logger", "message"} <= set(lines[0])
    serving = [line for line in lines if line["message"].startswith("nearline serving")]
    assert len(serving) == 1
    assert serving[0]["logger"] == "nearline.cli._serve"


def test_a_taken_metrics_address_is_refused_in_one_line(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = nearline(
            "serve", "--port", "0", "--metrics", f"127.0.0.1:{port}", data=tmp_path, check=False
        )
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        f"nearline: error: cannot serve the metrics on 127.0.0.1:{port}: Address already in "
        "use; choose another --metrics address (port 0: any free one)"
    )
    assert "Traceback" not in done.stderr
