"""A throwaway PostgreSQL cluster, for tests and benchmarks: ``initdb`` into a new folder,
``postgres`` on 127.0.0.1 and a free port, everything removed on ``close()``.

PostgreSQL refuses to run as root, so as root the cluster runs as ``nobody`` (or a system user
made for it), in a folder that user can reach (under /tmp by default). PostGIS comes from
Debian's package; :func:`missing` says what is absent so a caller can name the remedy.

    with Cluster() as cluster:
        cluster.start()
        url = cluster.create_database("nearline")
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nearline.closing import Closing
from nearline.errors import ConfigError

SUPERUSER = "postgres"
SERVICE_USER = "nearline-pg"  # created only when running as root and "nobody" is missing
SOCKET_PATH_MAX = 107  # sun_path's size, less its terminating zero
FAST = {  # for tests: durability traded for speed (a crash loses the throwaway cluster anyway)
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


class ClusterError(ConfigError):
    """PostgreSQL cannot run here; the message says what to do."""


# -- finding PostgreSQL and PostGIS ----------------------------------------------------------
def postgres_bindir() -> Path:
    """The folder of ``initdb`` and ``postgres``: $NEARLINE_PG_BINDIR, else Debian's newest
    /usr/lib/postgresql/N/bin, else ``pg_config --bindir``, else ``initdb`` on PATH."""
    if named := os.environ.get("NEARLINE_PG_BINDIR"):
        candidates = [Path(named)]
    else:
        debian = glob.glob("/usr/lib/postgresql/*/bin")
        candidates = sorted(
            (Path(d) for d in debian if Path(d).parent.name.isdigit()),
            key=lambda d: int(d.parent.name),
            reverse=True,
        )
        if pg_config := shutil.which("pg_config"):
            found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
            candidates.append(Path(found.stdout.strip()))
        if initdb := shutil.which("initdb"):
            candidates.append(Path(initdb).parent)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    raise ClusterError(
        "PostgreSQL's initdb and postgres were not found (looked in "
        f"{[str(c) for c in candidates] or '/usr/lib/postgresql/*/bin and PATH'}): install "
        "them with `apt-get install -y postgresql postgresql-postgis`, or set NEARLINE_PG_BINDIR"
    )


def postgres_major(bindir: Path) -> str:
    found = subprocess.run([bindir / "postgres", "--version"], capture_output=True, text=True)
    return found.stdout.split()[-1].split(".")[0]  # "postgres (PostgreSQL) 15.18" -> "15"


def postgis_present(bindir: Path) -> bool:
    pg_config = bindir / "pg_config"
    if pg_config.is_file():
        found = subprocess.run([pg_config, "--sharedir"], capture_output=True, text=True)
        share = Path(found.stdout.strip())
    else:
        share = Path("/usr/share/postgresql") / postgres_major(bindir)
    return (share / "extension" / "postgis.control").is_file()


def missing() -> str | None:
    """What of PostgreSQL and PostGIS is absent here (None: both are present)."""
    try:
        bindir = postgres_bindir()
    except ClusterError as error:
        return str(error)
    if not postgis_present(bindir):
        package = f"postgresql-{postgres_major(bindir)}-postgis-3"
        return f"PostGIS is not installed for {bindir} (Debian's {package})"
    return None


def service_user() -> tuple[int, int] | None:
    """(uid, gid) to run PostgreSQL as when we are root (postgres refuses root); else None."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        try:
            entry = pwd.getpwnam(SERVICE_USER)
        except KeyError:
            subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                 SERVICE_USER],
                check=True,
            )  # fmt: skip
            entry = pwd.getpwnam(SERVICE_USER)
    return entry.pw_uid, entry.pw_gid


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_process(process: subprocess.Popen | None, first: int = signal.SIGINT) -> None:
    """Signal ``first`` (SIGINT: fast shutdown for postgres), then SIGKILL after 30 s."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(first)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# -- the cluster ------------------------------------------------------------------------------
class Cluster(Closing):
    """A throwaway cluster; ``start()`` it, ``close()`` stops it and removes its folder.

    Parameters
    ----------
    bindir
        PostgreSQL's binaries; found by :func:`postgres_bindir` when None.
    settings
        Server settings (``-c name=value``), such as :data:`FAST` for tests.
    """

    def __init__(
        self, *, bindir: Path | None = None, settings: Mapping[str, str] | None = None
    ) -> None:
        self.bindir = bindir
        self.settings = dict(settings or {})
        self.home: Path | None = None  # the cluster's folder: data, socket, log
        self.port = 0
        self.postgres: subprocess.Popen | None = None

    def url(self, database: str = "postgres") -> str:
        """The connection URL of ``database`` (trust authentication, on 127.0.0.1)."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def start(self, folder: Path | None = None) -> None:
        """Create a cluster in a new folder inside ``folder`` (default: the system's temporary
        folder, which the cluster's user can reach), and start it."""
        try:
            self._start(Path(folder or tempfile.gettempdir()).absolute())
        except BaseException:
            self.close()
            raise

    def _start(self, folder: Path) -> None:
        self.bindir = self.bindir or postgres_bindir()
        folder.mkdir(parents=True, exist_ok=True)
        self.home = Path(tempfile.mkdtemp(prefix="nearline-pg-", dir=folder))
        self.port = free_port()
        if len(f"{self.home}/.s.PGSQL.{self.port}") > SOCKET_PATH_MAX:
            raise ClusterError(f"{self.home} is too long a path for a unix socket: use a shorter")
        user = service_user()
        if user is not None:
            os.chown(self.home, *user)
            reachable = self._run_as(["test", "-w", str(self.home)], check=False)
            if reachable.returncode != 0:
                raise ClusterError(
                    f"{self.home} is not writable by uid {user[0]}, which runs PostgreSQL "
                    "(postgres refuses root): every folder above it needs o+x; use one under /tmp"
                )
        data = self.home / "data"
        initdb = [self.bindir / "initdb", "-D", data, "-U", SUPERUSER, "--auth=trust"]
        self._run_as([*initdb, "--encoding=UTF8", "--locale=C", "--no-sync"])
        settings = [a for k, v in self.settings.items() for a in ("-c", f"{k}={v}")]
        with open(self.home / "postgres.log", "ab") as log:
            self.postgres = subprocess.Popen(
                [
                    *(self.bindir / "postgres", "-D", data, "-p", str(self.port)),
                    *("-k", self.home, "-c", "listen_addresses=127.0.0.1", *settings),
                ],
                stdout=log,
                stderr=log,
                cwd=self.home,
                **self._as_user(),
            )
        self._wait()

    def create_database(self, name: str, *, extensions: Sequence[str] = ()) -> str:
        """Create database ``name`` (with ``extensions``, such as postgis); its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        with psycopg.connect(self.url(name), autocommit=True) as connection:
            for extension in extensions:
                connection.execute(f'CREATE EXTENSION IF NOT EXISTS "{extension}"')
        return self.url(name)

    def log(self, tail: int = 3000) -> str:
        """The end of the server's log."""
        if self.home is None or not (self.home / "postgres.log").exists():
            return ""
        return (self.home / "postgres.log").read_text(errors="replace")[-tail:]

    def _as_user(self) -> dict[str, Any]:
        user = service_user()
        if user is None:
            return {}
        return {"user": user[0], "group": user[1], "extra_groups": []}

    def _run_as(self, command: Sequence[Any], *, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(c) for c in command], capture_output=True, text=True, cwd=self.home,
            **self._as_user(),
        )  # fmt: skip
        if check and done.returncode != 0:
            raise ClusterError(f"{command[0]} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        return done

    def _wait(self, timeout: float = 60) -> None:
        import psycopg

        assert self.postgres is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.postgres.poll() is not None:
                raise ClusterError(f"postgres exited:\n{self.log()}")
            try:
                with psycopg.connect(self.url(), connect_timeout=5):
                    return
            except psycopg.OperationalError:
                time.sleep(0.05)
        raise ClusterError(f"postgres did not answer in {timeout} s:\n{self.log()}")

    def close(self) -> None:
        """Stop PostgreSQL and remove the cluster's folder."""
        stop_process(self.postgres)
        self.postgres = None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None
