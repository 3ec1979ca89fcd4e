"""Checks of the programs the service's conformance runs and client tests use: Java 17 for
the OGC's executable test suites (``python -m nearline.testing.ogc_suites``), and GDAL's
command-line tools with their OGC API - Features driver (OAPIF), the client of QGIS and of
most GIS scripts, Node.js with npm, which build STAC Browser for its test
(scripts/stac-browser), and wrk, the concurrent-search benchmark's load generator
(benchmarks/search_concurrency.py)."""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

from nearline.doctor._base import run
from nearline.errors import CapabilityMissing

JAVA_RELEASE = 17  # the OGC suites' jars are built for it
NODE_RELEASE = 18  # STAC Browser's build (webpack 5, Vue CLI 5) runs on 18 and newer
# a done hook that reports what wrk saw, as the benchmark's does (benchmarks/_wrk_paths.lua)
WRK_SCRIPT = """
done = function(summary, latency, requests)
  io.write(string.format("probe %d %d %.0f\\n", summary.requests, summary.errors.status,
                         latency:percentile(95.0)))
end
"""


def java(folder: Path) -> str:
    """The Java runtime says its specification version, and it is at least 17."""
    if shutil.which("java") is None:
        raise CapabilityMissing("java is not on PATH")
    shown = run(
        ["java", "-XshowSettings:properties", "-version"], folder=folder, what="java -version"
    )
    found = re.search(r"java\.specification\.version = (\d+)", shown)
    if found is None or int(found.group(1)) < JAVA_RELEASE:
        release = found.group(1) if found else "unknown"
        raise CapabilityMissing(f"Java {release}; the OGC suites need Java {JAVA_RELEASE}")
    runtime = re.search(r"java\.runtime\.version = (\S+)", shown)
    return f"Java {runtime.group(1) if runtime else found.group(1)}"


def gdal_oapif(folder: Path) -> str:
    """ogrinfo reads back a GeoJSON feature written here, and lists the OAPIF driver."""
    if shutil.which("ogrinfo") is None:
        raise CapabilityMissing("ogrinfo (GDAL) is not on PATH")
    formats = run(["ogrinfo", "--formats"], folder=folder, what="ogrinfo --formats")
    if "OAPIF" not in formats:
        raise CapabilityMissing("GDAL has no OAPIF (OGC API - Features) driver")
    point = {"type": "Point", "coordinates": [12.5, 41.9]}
    feature = {"type": "Feature", "properties": {"name": "probe"}, "geometry": point}
    path = folder / "probe.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [feature]}))
    summary = run(["ogrinfo", "-so", "-al", path], folder=folder, what="ogrinfo on GeoJSON")
    if "Feature Count: 1" not in summary:
        raise CapabilityMissing(f"ogrinfo did not read the probe's one feature: {summary[-200:]}")
    version = run(["ogrinfo", "--version"], folder=folder, what="ogrinfo --version")
    return version.strip().split(",")[0]


def node_npm(folder: Path) -> str:
    """Node.js runs a script and is new enough, and npm packs a package made here (offline:
    the registry is reached only by the build itself)."""
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise CapabilityMissing(f"{tool} is not on PATH")
    version = run(
        ["node", "-e", "process.stdout.write(process.versions.node)"], folder=folder, what="node"
    ).strip()
    if int(version.split(".")[0]) < NODE_RELEASE:
        raise CapabilityMissing(f"Node.js {version}; STAC Browser's build needs {NODE_RELEASE}")
    package = folder / "probe"
    package.mkdir()
    (package / "package.json").write_text(json.dumps({"name": "probe", "version": "1.0.0"}))
    run(["npm", "pack", "--silent", "--pack-destination", folder, package], folder=folder,
        what="npm pack")  # fmt: skip
    if not (folder / "probe-1.0.0.tgz").is_file():
        raise CapabilityMissing("npm pack made no probe-1.0.0.tgz")
    npm = run(["npm", "--version"], folder=folder, what="npm --version").strip()
    return f"Node.js {version}, npm {npm}"


def wrk(folder: Path) -> str:
    """wrk keeps two connections to a loopback server started here busy for a second, and a
    Lua script's done hook reports the requests, none refused, and their p95."""
    if shutil.which("wrk") is None:
        raise CapabilityMissing("wrk is not on PATH")
    script = folder / "probe.lua"
    script.write_text(WRK_SCRIPT)
    with _answering() as url:
        shown = run(["wrk", "-t1", "-c2", "-d1s", "-s", script, url], folder=folder, what="wrk")
    found = re.search(r"^probe (\d+) (\d+) (\d+)$", shown, re.M)
    if found is None:
        raise CapabilityMissing(f"wrk's Lua done hook printed nothing: {shown.strip()}")
    requests, refused, p95 = map(int, found.groups())
    if requests == 0 or refused:
        raise CapabilityMissing(f"wrk made {requests} requests, {refused} answered with an error")
    # --version prints the version and exits 1
    said = subprocess.run(["wrk", "--version"], capture_output=True, text=True, timeout=10)
    version = said.stdout.split(" [")[0] or "wrk"
    kept = f"{requests:,} requests on 2 kept connections, p95 {p95 / 1e3:.1f} ms"
    return f"{version} ran a Lua script: {kept}"


class _Ok(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keeps the connection, as the service does
    disable_nagle_algorithm = True  # else each answer's body waits 40 ms for an acknowledgement

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # wrk resets its connections when its time is up


@contextlib.contextmanager
def _answering() -> Iterator[str]:
    """The URL of an HTTP server on 127.0.0.1 answering every GET with 200, until the block
    ends."""
    server = _Server(("127.0.0.1", 0), _Ok)
    thread = threading.Thread(target=server.serve_forever, name="nearline-doctor-wrk")
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()
