"""`nearline serve` takes its port before it says where it serves, and answers with Nagle's
algorithm off (else a kept-alive client waits for its own delayed acknowledgement, 40 ms, on
every request)."""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import os
import socket

import psutil
import pytest

from nearline.cli._serve import listening_socket

from ..live_service import LiveService, nearline

PIDFD_GETFD = 438  # the system call's number, the same on every Linux architecture


def test_a_port_in_use_is_one_line_and_nothing_is_started(tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = nearline("serve", "--port", str(port), data=tmp_path / "data", check=False)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"nearline: error: cannot serve on 127.0.0.1:{port}: Address already in use; "
        "choose another --port (0: any free one)"
    ]
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("setting", "value", "said"),
    [
        ("NEARLINE_TILES_OVERVIEWS", "lots", "expected a size such as '512MiB'"),
        ("NEARLINE_COVERAGE_MAX_VALUES", "0", "expected a whole number of values >= 1"),
    ],
)
def test_a_bad_setting_of_the_gridded_routes_stops_the_start_in_one_line(
    tmp_path, monkeypatch, setting, value, said
):
    monkeypatch.setenv(setting, value)
    result = nearline("serve", "--port", "0", data=tmp_path / "data", check=False)
    assert result.returncode == 2
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("nearline:")]
    assert line.startswith(f"nearline: error: {setting}: {said}")
    assert "Traceback" not in result.stderr


def test_port_zero_serves_on_a_free_port_and_says_which(tmp_path):
    live = LiveService(tmp_path / "data")
    live.start()
    try:
        assert live.port > 0
        log = live.log.read_text()
        assert f"at http://127.0.0.1:{live.port} (port {live.port})" in log
    finally:
        live.stop()


def nagle_is_off(connection: socket.socket) -> bool:
    return connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_connections_the_listener_accepts_have_nagle_off():
    with listening_socket("127.0.0.1", 0) as listener:
        assert listener.proto == socket.IPPROTO_TCP  # asyncio sets TCP_NODELAY only then
        with socket.create_connection(listener.getsockname()) as client:
            accepted, address = listener.accept()
            with accepted:
                assert address == client.getsockname()
                assert nagle_is_off(accepted)  # before any event loop touched it


def server_end_of(server: int, client: socket.socket) -> socket.socket:
    """A duplicate of the socket the server ``server`` (or one of its worker processes)
    holds for ``client``'s connection, taken with pidfd_getfd(2) (Linux 5.6, as root)."""
    for pid in [server, *(child.pid for child in psutil.Process(server).children())]:
        held = _held_by(pid, client)
        if held is not None:
            return held
    raise AssertionError(f"no process of server {server} holds {client.getsockname()}")


def _held_by(pid: int, client: socket.socket) -> socket.socket | None:
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    pidfd = os.pidfd_open(pid)
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(FileNotFoundError):
                if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                    continue
            fd = syscall(PIDFD_GETFD, pidfd, int(name), 0)
            if fd < 0:
                pytest.fail(f"pidfd_getfd (Linux 5.6+, as root): {os.strerror(ctypes.get_errno())}")
            held = socket.socket(fileno=fd)
            with contextlib.suppress(OSError):
                if held.getpeername() == client.getsockname():
                    return held
            held.close()
    finally:
        os.close(pidfd)
    return None


def test_the_server_answers_a_kept_connection_with_nagle_off(tmp_path):
    live = LiveService(tmp_path / "data")
    live.start()
    try:
        connection = http.client.HTTPConnection("127.0.0.1", live.port, timeout=30)
        with contextlib.closing(connection):
            for _ in range(2):  # the second on the same connection: a kept one
                connection.request("GET", "/conformance")
                assert connection.getresponse().read().startswith(b'{"conformsTo":')
            with server_end_of(live.process.pid, connection.sock) as served:
                assert nagle_is_off(served)
    finally:
        live.stop()
