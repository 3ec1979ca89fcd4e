"""`nearline serve --workers 3`: three processes answer on one port, and a user meets one
service. Which process answered each request is read from the outside (the process holding
the connection's other end), and every check is repeated until each process has answered."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any

import psutil

from nearline.cli._serve import METRICS, served_port

from ..live_service import LiveService, nearline
from .conftest import deploy
from .granules import add_granules

WORKERS = 3


def workers_of(service: LiveService) -> set[int]:
    """The primary and its fronts (the other `nearline serve` processes it started)."""
    assert service.process is not None
    primary = psutil.Process(service.process.pid)
    fronts = {child.pid for child in primary.children() if "serve" in " ".join(child.cmdline())}
    return {primary.pid, *fronts}


def answered_by(connection: http.client.HTTPConnection, pids: set[int]) -> int:
    """Which of ``pids`` holds the server's end of ``connection``."""
    assert connection.sock is not None
    mine = connection.sock.getsockname()
    for pid in pids:
        for held in psutil.Process(pid).net_connections(kind="tcp"):
            if held.raddr and (held.raddr.ip, held.raddr.port) == mine[:2]:
                return pid
    raise AssertionError(f"no worker holds the connection from {mine}")


def ask(
    service: LiveService, pids: set[int], method: str, path: str, *, token: str | None = None,
    body: Any = None, prefer: str | None = None,
) -> tuple[int, int, Any]:  # fmt: skip
    """One request on a fresh connection: (the worker that answered, status, JSON body)."""
    connection = http.client.HTTPConnection("127.0.0.1", service.port, timeout=60)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if prefer is not None:
        headers["Prefer"] = prefer
    try:
        connection.request(method, path, body=json.dumps(body) if body is not None else None,
                           headers=headers)  # fmt: skip
        response = connection.getresponse()
        text = response.read()
        pid = answered_by(connection, pids)
    finally:
        connection.close()
    return pid, response.status, json.loads(text) if text else None


def on_every_worker(
    service: LiveService, pids: set[int], method: str, path: str, **options: Any
) -> dict[int, tuple[int, Any]]:
    """The same request on fresh connections until each worker has answered it."""
    seen: dict[int, tuple[int, Any]] = {}
    for _ in range(300):
        pid, status, body = ask(service, pids, method, path, **options)
        seen.setdefault(pid, (status, body))
        if len(seen) == len(pids):
            return seen
    raise AssertionError(f"only {sorted(seen)} of {sorted(pids)} answered in 300 requests")


def until_gone(pids: set[int], timeout: float) -> set[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = {pid for pid in pids if psutil.pid_exists(pid)
                 and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE}  # fmt: skip
        if not alive:
            return alive
        time.sleep(0.05)
    return alive


def test_every_worker_answers_with_the_same_tokens_orders_and_metrics(tmp_path: Path) -> None:
    service = LiveService(tmp_path / "data")
    add_granules(service.data, 2)
    alice = service.add_user("alice")
    service.start("--workers", str(WORKERS), "--cpus", "2", "--metrics", "127.0.0.1:0")
    try:
        pids = workers_of(service)
        assert len(pids) == WORKERS
        assert service.process is not None
        primary = service.process.pid
        # the token `nearline users add` printed opens every worker
        me = on_every_worker(service, pids, "GET", "/users/me", token=alice)
        assert {status for status, _ in me.values()} == {200}
        assert {body["name"] for _, body in me.values()} == {"alice"}

        # kept-alive connections opened at once are spread over every worker (by the
        # kernel, over each one's socket); on one shared socket, one process took them all
        held = [
            http.client.HTTPConnection("127.0.0.1", service.port, timeout=60) for _ in range(32)
        ]
        try:
            for connection in held:
                connection.connect()
            for connection in held:
                connection.request("GET", "/conformance")
            for connection in held:
                assert connection.getresponse().read()
            spread = [answered_by(connection, pids) for connection in held]
        finally:
            for connection in held:
                connection.close()
        assert {pid: spread.count(pid) > 0 for pid in pids} == dict.fromkeys(pids, True), spread

        # a personal token made on one worker works on all, and revoked on one, on none
        _, status, made = ask(service, pids, "POST", "/users/me/tokens", token=alice,
                              body={"name": "laptop", "days": 1})  # fmt: skip
        assert status == 201, made
        fresh = on_every_worker(service, pids, "GET", "/users/me", token=made["token"])
        assert {status for status, _ in fresh.values()} == {200}
        revoker, status, _ = ask(service, pids, "DELETE", f"/users/me/tokens/{made['id']}",
                                 token=alice)  # fmt: skip
        assert status in (200, 204)
        revoked = on_every_worker(service, pids, "GET", "/users/me", token=made["token"])
        assert {status for status, _ in revoked.values()} == {401}, (revoker, revoked)

        # an order taken by a front is run by the primary, and its job is seen everywhere
        deploy(service, "alice", "sleeper")
        order = {"inputs": {"granules": {"ids": ["granule-000"]}, "seconds": 0}}
        for _ in range(100):
            taker, status, job = ask(service, pids, "POST", "/processes/sleeper/execution",
                                     token=alice, body=order, prefer="respond-async")  # fmt: skip
            assert status == 201, job
            if taker != primary:
                break
        assert taker != primary
        ended = service.wait_for_job("alice", job["jobID"], timeout=120)
        assert ended["status"] == "successful", ended
        statuses = on_every_worker(service, pids, "GET", f"/jobs/{job['jobID']}", token=alice)
        assert {body["status"] for _, body in statuses.values()} == {"successful"}

        # the metrics count the requests every worker answered
        port = served_port(service.log.read_text(), METRICS)
        assert port is not None
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
        counted = sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("nearline_http_request_duration_seconds_count")
            and 'route="/users/me"' in line
        )
        asked = len(me) + len(fresh) + len(revoked)
        assert counted >= asked, (counted, asked)
    finally:
        fronts = workers_of(service) - {service.process.pid} if service.process else set()
        service.stop()
    assert until_gone(fronts, 15) == set()  # a clean stop stops every front


def test_a_killed_primary_takes_its_fronts_and_the_port_is_free_at_once(tmp_path: Path) -> None:
    service = LiveService(tmp_path / "data")
    service.start("--workers", str(WORKERS))
    pids = workers_of(service)
    assert len(pids) == WORKERS
    service.kill()
    assert until_gone(pids, 5) == set()
    service.start("--workers", "2")  # the same port again
    try:
        assert len(workers_of(service)) == 2
        # another server on that port is refused, though the workers share it among them
        other = nearline("serve", "--port", str(service.port), "--workers", "2",
                         data=tmp_path / "other", check=False)  # fmt: skip
        assert other.returncode == 2
        assert f"cannot serve on 127.0.0.1:{service.port}" in other.stderr
    finally:
        service.stop()


def test_a_bad_worker_count_is_one_line(tmp_path: Path) -> None:
    result = nearline("serve", "--port", "0", "--workers", "0", data=tmp_path / "data", check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == "nearline: error: --workers: expected 1 to 256 processes, got 0"
