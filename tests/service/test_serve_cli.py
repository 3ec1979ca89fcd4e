"""`nearline serve` takes its port before it says where it serves."""

from __future__ import annotations

import socket

from ..live_service import LiveService, nearline


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


def test_port_zero_serves_on_a_free_port_and_says_which(tmp_path):
    live = LiveService(tmp_path / "data")
    live.start()
    try:
        assert live.port > 0
        log = live.log.read_text()
        assert f"at http://127.0.0.1:{live.port} (port {live.port})" in log
    finally:
        live.stop()
