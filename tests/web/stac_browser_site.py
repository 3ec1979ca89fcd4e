"""Radiant Earth's STAC Browser, as a site of its own on another origin than the service: its
built files (scripts/stac-browser builds them once a machine from the npm registry) served by
a small HTTP server on 127.0.0.1, with the ``config.js`` the test writes (the catalogue's URL,
how to send a token), as an operator's web server would serve them."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "scripts" / "stac-browser"
BUILD_SECONDS = 1800  # npm install and webpack's build: 2 to 4 minutes on two busy cores


def built_files() -> Path:
    """The folder of STAC Browser's built files, built first if this machine has none."""
    done = subprocess.run([str(BUILD)], capture_output=True, text=True, timeout=BUILD_SECONDS)
    if done.returncode != 0:
        pytest.fail(f"STAC Browser could not be built: {done.stderr.strip()}")
    return Path(done.stdout.strip().splitlines()[-1])


@dataclass
class Site:
    """STAC Browser served at ``origin``; ``config`` is what its config.js gives it."""

    origin: str
    config: dict[str, Any] = field(default_factory=dict)


class _Files(SimpleHTTPRequestHandler):
    """The built files, but config.js, which says what the site's ``config`` holds."""

    def __init__(self, *args: Any, site: Site, **kwargs: Any) -> None:
        self.site = site
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        if self.path.split("?")[0] != "/config.js":
            super().do_GET()
            return
        body = f"window.STAC_BROWSER_CONFIG = {json.dumps(self.site.config)};".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/javascript")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: pytest shows the test's own output."""


@contextmanager
def stac_browser_site(files: Path) -> Iterator[Site]:
    """STAC Browser's ``files`` served on a free port of 127.0.0.1 until the block ends."""
    site = Site(origin="")
    handler = partial(_Files, site=site, directory=str(files))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    site.origin = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, name="stac-browser-site", daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
