"""Checks of what the service runs on: the sandbox at its full level, PostgreSQL with PostGIS,
and Chromium for the web page's tests. Heavy imports stay inside the checks, so listing the
capabilities costs nothing."""

from __future__ import annotations

import io
import os
import shutil
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from nearline.errors import CapabilityMissing, ConfigError

if TYPE_CHECKING:
    from nearline.algorithms import Isolation

CHROMIUM = Path("/usr/bin/chromium")  # Debian's; Playwright cannot download its own here
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
ROLES = ("memory", "pids", "cpu", "cpuacct")  # the cgroup controllers of the full level
RGB = (12, 200, 34)  # what the page's script paints, read back from the screenshot

# inside the sandbox: who it runs as, whether the service's port is reachable, then more
# memory than the run may hold
_SANDBOXED = """
import os, socket, sys
print("uid", os.getuid(), flush=True)
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    print("network: reached the service", flush=True)
except OSError:
    print("network: blocked", flush=True)
held = [b"x" * 2**24 for _ in range(16)]
"""
_SANDBOX_MEMORY = 64 * 2**20
# then a run that writes files of 1 MiB, each under its allotment, until it is stopped
_WRITER = """
import sys, time
for number in range(int(sys.argv[1])):
    with open(f"part-{number}", "wb") as part:
        part.write(b"x" * 2**20)
    time.sleep(0.05)
"""
_SANDBOX_DISK = 4 * 2**20

_PAGE = f"""<!doctype html><body style="margin:0"><canvas id="c" width="64" height="48"></canvas>
<script>const g = document.getElementById("c").getContext("2d");
g.fillStyle = "rgb{RGB}"; g.fillRect(0, 0, 64, 48);</script></body>"""


def sandbox(folder: Path) -> str:
    """A run under bubblewrap in every cgroup role: as nobody, cut off from the service's
    port, and stopped at its memory limit by the kernel."""
    from nearline.algorithms import Limits, isolation, run_sandboxed

    level = isolation()
    root = "" if level.root else "; not root"
    if level.namespaces != "bwrap":
        if shutil.which("bwrap") is None:
            raise CapabilityMissing("bubblewrap is not installed")
        raise CapabilityMissing(
            f"bubblewrap cannot make a run's namespaces here{root}",
            remedy="run as root (or allow unprivileged user namespaces)",
        )
    absent = [role for role in ROLES if role not in level.controllers]
    if absent:
        raise CapabilityMissing(
            f"no cgroup for a run's {', '.join(absent)} (cgroups: {level.cgroups}){root}",
            remedy="run as root, on a machine whose cgroups a run can be put in (docs/sandbox.md)",
        )
    limits = Limits(memory=_SANDBOX_MEMORY, wall_seconds=30, processes=16)
    with socket.create_server(("127.0.0.1", 0)) as service:
        program = folder / "run" / "sandboxed.py"  # in the run's own folder, which it sees
        program.parent.mkdir()
        program.write_text(_SANDBOXED)
        outcome = run_sandboxed(
            [sys.executable, str(program), str(service.getsockname()[1])],
            folder=program.parent,
            limits=limits,
            log=folder / "run.log",
            enforce=level,
        )
    said = (folder / "run.log").read_text(errors="replace")
    if "uid 65534" not in said or "network: blocked" not in said:
        raise CapabilityMissing(f"the sandboxed run was not held as it should be: {said}")
    if outcome.reason != limits.memory_broken():
        raise CapabilityMissing(
            f"the sandboxed run was not stopped at its memory limit: {outcome.reason or said}"
        )
    held = _disk_held(folder, level)
    return (
        f"a run under bubblewrap with {level.cgroups} cgroups ran as nobody, could not reach "
        f"the service and was stopped at its {_SANDBOX_MEMORY // 2**20} MiB limit; {held}"
    )


def _disk_held(folder: Path, level: Isolation) -> str:
    """A run writing twice its disk allotment in small files is stopped, at its own file
    system's edge where the full level has one (else at the watcher's samples)."""
    from nearline.algorithms import Limits, run_sandboxed

    limits = Limits(disk=_SANDBOX_DISK, wall_seconds=30, processes=16)
    run = folder / "writer"
    run.mkdir()
    outcome = run_sandboxed(
        [sys.executable, "-c", _WRITER, str(2 * _SANDBOX_DISK // 2**20)],
        folder=run,
        limits=limits,
        log=folder / "writer.log",
        enforce=level,
    )
    if outcome.reason != limits.disk_broken():
        said = (folder / "writer.log").read_text(errors="replace")
        raise CapabilityMissing(
            f"a run writing past its disk allotment was not stopped: {outcome.reason or said}"
        )
    how = "its own file system" if level.disk == "filesystem" else "samples of its folder"
    return f"one writing 2x its {_SANDBOX_DISK // 2**20} MiB disk was stopped ({how})"


def postgis(folder: Path) -> str:
    """``CREATE EXTENSION postgis`` in a throwaway cluster, and a spatial query answered."""
    import psycopg

    from nearline.testing.pgcluster import FAST, Cluster, missing, postgres_major

    if (absent := missing()) is not None:
        raise CapabilityMissing(absent)
    with Cluster(settings=FAST) as cluster:
        cluster.start()  # in a folder of its own that the cluster's user can reach
        url = cluster.create_database("doctor", extensions=["postgis"])
        with psycopg.connect(url) as connection:
            area, version = connection.execute(
                "SELECT ST_Area(ST_MakeEnvelope(0, 0, 3, 2)), postgis_lib_version()"
            ).fetchone()
        major = postgres_major(cluster.bindir)
    if area != 6:
        raise CapabilityMissing(f"PostGIS answered {area} for a 3 x 2 rectangle's area, not 6")
    return f"PostGIS {version} in a throwaway PostgreSQL {major} cluster measured a rectangle"


def chromium(folder: Path) -> str:
    """Headless Chromium, driven by Playwright, draws a page whose script paints a canvas;
    the screenshot's pixel is read back."""
    from PIL import Image

    path = Path(os.environ.get("NEARLINE_CHROMIUM", CHROMIUM))
    if not path.is_file():
        raise CapabilityMissing(f"no Chromium at {path}")
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        raise CapabilityMissing(
            "Playwright is not installed", remedy="make .venv/.installed (nearline's dev extra)"
        ) from None
    started: list[psutil.Process] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(path), args=CHROMIUM_ARGS, timeout=30_000
            )
            started = chromium_processes()  # now: once closed, they may leave our tree
            try:
                page = browser.new_page(viewport={"width": 64, "height": 48})
                page.set_content(_PAGE)
                shot = page.screenshot(path=folder / "page.png")
                version = browser.version
            finally:
                started += [p for p in chromium_processes() if p not in started]
                browser.close()
    except Error as error:
        raise CapabilityMissing(f"Chromium at {path} did not draw the page: {error}") from None
    finally:
        _, alive = psutil.wait_procs(started, timeout=10)
        for process in alive:
            process.kill()
    pixel = Image.open(io.BytesIO(shot)).convert("RGB").getpixel((32, 24))
    if pixel != RGB:
        raise CapabilityMissing(f"Chromium drew {pixel} where the page's script painted {RGB}")
    return f"headless Chromium {version} ran a page's script and drew its canvas"


def chromium_processes() -> list[psutil.Process]:
    """The Chromium processes among this process's descendants."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "chrom" in child.name().lower():
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def s3_server(folder: Path) -> str:
    """SeaweedFS (the tests' S3 server) starts on 127.0.0.1, takes an object into a new bucket
    and gives it back byte for byte; the read-only identity is refused a write."""
    from nearline.testing.s3server import READER, S3ServerMissing, SeaweedFS, server_version

    try:
        version = server_version()
    except S3ServerMissing as error:
        raise CapabilityMissing(str(error)) from None
    data = os.urandom(1 << 20)
    with SeaweedFS(folder) as server:
        s3 = server.client()
        server.make_bucket("doctor")
        s3.put_object(Bucket="doctor", Key="probe", Body=data)
        back = s3.get_object(Bucket="doctor", Key="probe")["Body"].read()
        try:
            server.client(READER, retries=0).put_object(Bucket="doctor", Key="no", Body=b"")
            refused = False
        except Exception:
            refused = True
    if back != data:
        raise CapabilityMissing("SeaweedFS gave back different bytes than it was given")
    if not refused:
        raise CapabilityMissing("SeaweedFS let the read-only identity write")
    return f"SeaweedFS ({version.removeprefix('version ')}) stored and returned 1 MiB over S3"


def oidc(folder: Path) -> str:
    """With ``$NEARLINE_OIDC`` (the service's sign-in settings): the provider's discovery
    document, keys and clients (``check_provider``). Without: the tests' provider, Keycloak,
    is fetched and a Java runtime new enough for it runs."""
    from nearline.identity import OidcSettings, check_provider
    from nearline.testing.keycloak import VERSION, ProviderMissing, java_home, launcher

    try:
        settings = OidcSettings.resolve()
        if settings is not None:
            return check_provider(settings)
        launcher()
        java = java_home()
    except (ProviderMissing, ConfigError) as error:
        raise CapabilityMissing(str(error)) from None
    return (
        f"no provider set ($NEARLINE_OIDC); the tests' Keycloak {VERSION} is here, Java at {java}"
    )
