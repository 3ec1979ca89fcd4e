"""A real S3-compatible object server for tests and benchmarks: SeaweedFS, built once from its
Go module and run on 127.0.0.1 with throwaway buckets.

Why SeaweedFS: it is Apache-2.0 (MinIO is AGPL), a single static binary, and it comes from the
Go module proxy, a registry this project may use. Its go.mod has ``replace`` directives, so
``go install module@version`` refuses it: :func:`build` downloads the module's source and runs
``go build ./weed`` inside it, once, into a cache that outlives the clone (5 to 6 minutes on
two cores with an empty Go module cache; the binary is about 230 MB). A machine without a
recent enough Go gets the toolchain from the Go module proxy too (``golang.org/toolchain``).

    python -m nearline.testing.s3server build     # once a machine (make test does it)

    with SeaweedFS(folder) as server:
        server.make_bucket("archive")
        s3 = server.client()   # boto3, as the admin identity

The server knows three identities: ``admin`` (everything), ``reader`` (read and list only) and
none other, so a wrong key is refused as it would be by AWS.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nearline.errors import ConfigError

MODULE = "github.com/seaweedfs/seaweedfs"
VERSION = "v0.0.0-20261109003541-7506e5f91cd6"  # the newest the Go module proxy serves here
GO_NEEDED = (1, 26)  # its go.mod's ``go 1.26.6``
GO_TOOLCHAIN = "go1.26.8"  # fetched from the module proxy when the machine's Go is older
GO_PROXY = os.environ.get("GOPROXY", "https://proxy.golang.org").split(",")[0].split("|")[0]
# Seconds SeaweedFS gets to stop on SIGTERM before SIGKILL. The process takes more than 20 s
# to exit, so every stop ends in SIGKILL; a longer grace bought nothing but waiting. With the
# volume server's pre-stop wait off (-volume.preStopSeconds=0; 10 s by default, which the
# old 5 s grace never outlived) its log shows the volume server and the filer shut down
# within a quarter of a second of the SIGTERM, so this second is enough for both.
STOP_GRACE = 1.0
WARM_UP = "nearline-warm-up"  # the bucket of the first write, which waits for volumes to grow
START_TIMEOUT = 60.0


class S3ServerMissing(ConfigError):
    """SeaweedFS is not built on this machine; the message says how to build it."""


@dataclass(frozen=True)
class Identity:
    """An access key pair the server knows, and what it may do."""

    name: str
    access_key: str
    secret_key: str
    actions: tuple[str, ...]


ADMIN = Identity(
    "admin",
    "nearline-admin",
    "nearline-admin-secret",
    ("Admin", "Read", "List", "Tagging", "Write"),
)
READER = Identity("reader", "nearline-reader", "nearline-reader-secret", ("Read", "List"))
IDENTITIES = (ADMIN, READER)


# -- the binary ------------------------------------------------------------------------------
def cache_folder() -> Path:
    """Where built tools outlive a clone: $NEARLINE_CACHE, else $XDG_CACHE_HOME/nearline, else
    ~/.cache/nearline."""
    if named := os.environ.get("NEARLINE_CACHE"):
        return Path(named)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "nearline"


def binary_path() -> Path:
    """Where the built ``weed`` is (or will be): $NEARLINE_WEED, else the cache."""
    if named := os.environ.get("NEARLINE_WEED"):
        return Path(named)
    return cache_folder() / "seaweedfs" / VERSION / "weed"


def build_command() -> str:
    return f"{sys.executable} -m nearline.testing.s3server build"


def weed_binary() -> Path:
    """The built ``weed``; :class:`S3ServerMissing` with the build command when it is not."""
    path = binary_path()
    if not os.access(path, os.X_OK):
        raise S3ServerMissing(
            f"SeaweedFS (the tests' S3 server) is not built at {path}: build it once with "
            f"`{build_command()}` (5 to 6 minutes; make test does it)"
        )
    return path


def go_version(go: str) -> tuple[int, int] | None:
    found = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True)
    text = found.stdout.strip().removeprefix("go")
    try:
        major, minor = (int(part) for part in text.split(".")[:2])
    except ValueError:
        return None
    return major, minor


def go_toolchain(say: Callable[[str], None]) -> Path:
    """A ``go`` recent enough for SeaweedFS: the machine's, else one from the module proxy."""
    if (go := shutil.which("go")) and (go_version(go) or (0, 0)) >= GO_NEEDED:
        return Path(go)
    folder = cache_folder() / "go" / GO_TOOLCHAIN
    go_binary = folder / "go" / "bin" / "go"
    if go_binary.is_file():
        return go_binary
    name = f"v0.0.1-{GO_TOOLCHAIN}.linux-amd64"
    url = f"{GO_PROXY}/golang.org/toolchain/@v/{name}.zip"
    say(f"fetching the Go toolchain {GO_TOOLCHAIN} from {url}")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        archive = Path(scratch) / "toolchain.zip"
        urllib.request.urlretrieve(url, archive)
        with zipfile.ZipFile(archive) as bundle:
            prefix = f"golang.org/toolchain@{name}/"
            for member in bundle.infolist():
                target = Path(scratch) / "go" / member.filename.removeprefix(prefix)
                if member.is_dir():
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(bundle.read(member))
                target.chmod(0o755 if (member.external_attr >> 16) & 0o111 else 0o644)
        os.replace(Path(scratch) / "go", folder / "go")
    return go_binary


def build(say: Callable[[str], None] = print) -> Path:
    """Build ``weed`` into the cache unless it is there; its path."""
    target = binary_path()
    if os.access(target, os.X_OK):
        return target
    go = go_toolchain(say)
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    say(f"downloading {MODULE}@{VERSION} through the Go module proxy")
    found = subprocess.run(
        [go, "mod", "download", "-json", f"{MODULE}@{VERSION}"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if found.returncode != 0:
        raise S3ServerMissing(f"`go mod download {MODULE}@{VERSION}` failed: {found.stderr}")
    source = Path(json.loads(found.stdout)["Dir"])
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(".weed.partial")
    say(f"building SeaweedFS in {source} (5 to 6 minutes on two cores the first time)")
    began = time.monotonic()
    built = subprocess.run([go, "build", "-o", partial, "./weed"], cwd=source, env=env)
    if built.returncode != 0:
        raise S3ServerMissing(f"`go build ./weed` in {source} failed (its output is above)")
    os.replace(partial, target)  # complete or absent: never a half-written binary in place
    say(f"built {target} in {time.monotonic() - began:.0f} s")
    return target


def server_version() -> str:
    """``weed version``'s first line, e.g. ``version 30GB 4.01 ... linux amd64``."""
    found = subprocess.run([weed_binary(), "version"], capture_output=True, text=True)
    return (found.stdout.strip().splitlines() or ["unknown"])[0]


# -- the server ------------------------------------------------------------------------------
def free_ports(count: int) -> list[int]:
    """``count`` distinct ports free on 127.0.0.1 now."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def stop_group(process: subprocess.Popen[bytes] | None, grace: float) -> None:
    """Stop a server started in a session of its own: SIGTERM to its process group, then
    SIGKILL after ``grace`` seconds."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


class SeaweedFS:
    """``weed server -s3`` on 127.0.0.1, its data in ``folder``.

    :meth:`stop` and :meth:`start` again keep the folder and the ports, so a test can take the
    store away mid-transfer and bring it back with everything it had.
    """

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        names = [
            f"{part}{grpc}"
            for part in ("master", "volume", "filer", "s3")
            for grpc in ("", "_grpc")
        ]
        self.ports = dict(zip(names, free_ports(len(names)), strict=True))
        self.endpoint_url = f"http://127.0.0.1:{self.ports['s3']}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log = self.folder / "weed.log"

    def command(self) -> list[str]:
        config = self.folder / "s3.json"
        config.write_text(json.dumps({"identities": [
            {"name": i.name, "actions": list(i.actions),
             "credentials": [{"accessKey": i.access_key, "secretKey": i.secret_key}]}
            for i in IDENTITIES
        ]}))  # fmt: skip
        p = self.ports
        data = self.folder / "data"
        data.mkdir(exist_ok=True)
        return [
            str(weed_binary()), "server", f"-dir={data}",
            "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-master.port={p['master']}", f"-master.port.grpc={p['master_grpc']}",
            f"-volume.port={p['volume']}", f"-volume.port.grpc={p['volume_grpc']}",
            f"-filer.port={p['filer']}", f"-filer.port.grpc={p['filer_grpc']}",
            f"-filer.localSocket={self.folder / 'filer.sock'}",
            "-s3", f"-s3.port={p['s3']}", f"-s3.port.grpc={p['s3_grpc']}",
            f"-s3.localSocket={self.folder / 's3.sock'}",
            "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.config={config}",
            "-s3.autoCreateBucket=false", "-master.telemetry=false",
            "-master.volumeSizeLimitMB=1024", "-volume.max=0",
            "-master.electionTimeout=1s",  # one master: its election after a restart is quick
            "-volume.preStopSeconds=0",  # no heartbeat-free wait before closing, on a stop
        ]  # fmt: skip

    def start(self) -> SeaweedFS:
        """Start the server and return once S3 answers."""
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + START_TIMEOUT
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-2000:]
                self.stop()
                raise ConfigError(f"SeaweedFS did not start on {self.endpoint_url}:\n{tail}")
            time.sleep(0.2)
        self.warm_up()
        return self

    def warm_up(self) -> None:
        """Write once, so the first volumes grow now (3 to 9 s here) and not in a test's
        first write, where a timeout or a retry under test would meet it."""
        s3 = self.client()
        if WARM_UP not in {b["Name"] for b in s3.list_buckets().get("Buckets", [])}:
            s3.create_bucket(Bucket=WARM_UP)
        s3.put_object(Bucket=WARM_UP, Key="warm", Body=b"warm")

    def answers(self) -> bool:
        """Whether S3 answers a signed request (a bucket listing) now."""
        try:
            self.client(retries=0).list_buckets()
        except Exception:
            return False
        return True

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after :data:`STOP_GRACE` seconds: stopped for good."""
        process, self.process = self.process, None
        stop_group(process, STOP_GRACE)

    def kill(self) -> None:
        """SIGKILL at once: the store goes away as a crashed host's would."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def __enter__(self) -> SeaweedFS:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- clients ---------------------------------------------------------------------------
    def credentials(self, identity: Identity = ADMIN) -> dict[str, str]:
        """The AWS environment variables that make any S3 client this identity here."""
        return {
            "AWS_ACCESS_KEY_ID": identity.access_key,
            "AWS_SECRET_ACCESS_KEY": identity.secret_key,
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def client(self, identity: Identity = ADMIN, *, retries: int = 3) -> Any:
        """A boto3 S3 client for ``identity``."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=identity.access_key,
            aws_secret_access_key=identity.secret_key,
            region_name="us-east-1",
            config=Config(
                retries={"max_attempts": retries + 1, "mode": "standard"},
                s3={"addressing_style": "path"},
            ),
        )

    def make_bucket(self, name: str) -> str:
        """Create bucket ``name`` (as admin); its name."""
        self.client().create_bucket(Bucket=name)
        return name

    def empty_bucket(self, name: str) -> None:
        """Delete every object in a bucket, and the multipart uploads left open in it."""
        s3 = self.client()
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
            for entry in page.get("Contents", []):
                s3.delete_object(Bucket=name, Key=entry["Key"])
        for upload in s3.list_multipart_uploads(Bucket=name).get("Uploads", []):
            s3.abort_multipart_upload(Bucket=name, Key=upload["Key"], UploadId=upload["UploadId"])


@contextmanager
def running_server(folder: Path | str | None = None) -> Iterator[SeaweedFS]:
    """A started server in ``folder`` (a new temporary one by default), stopped afterwards."""
    with (
        tempfile.TemporaryDirectory(prefix="nearline-s3-") as scratch,
        SeaweedFS(folder or scratch) as server,
    ):
        yield server


def main(argv: list[str]) -> int:
    if argv[:1] != ["build"]:
        print(f"usage: {build_command()}", file=sys.stderr)
        return 2
    try:
        print(build(lambda line: print(line, flush=True)))
    except ConfigError as error:
        print(f"nearline: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
