"""``nearline serve`` and ``nearline jobs``: the service from the shell (``nearline users``
is in cli_users.py).

Embedded defaults: everything under ``./nearline-data`` (``--data`` or ``NEARLINE_DATA``), a
SQLite catalogue and job store, runs as local sandboxed processes. Nothing to install.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import logging
import os
import re
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nearline.errors import ConfigError, NearlineError

DB_HELP = (
    "the PostgreSQL database holding the catalogue and the jobs, shared by several servers: "
    "postgresql://USER@HOST:PORT/DB (default: $NEARLINE_DB; none: SQLite files under --data)"
)


def data_folder(args: argparse.Namespace) -> Path:
    """The service's data folder: --data, else $NEARLINE_DATA, else ./nearline-data (as
    ServiceSettings.resolve says, without importing the service)."""
    return Path(args.data or os.environ.get("NEARLINE_DATA") or "nearline-data").absolute()


def add_data_option(parser: argparse.ArgumentParser) -> None:
    """--data (the service's folder) and --db (its PostgreSQL state, if not SQLite).

    No explicit defaults: argparse's own (None) here, and none at all where
    :func:`shared_options` adds them after a verb."""
    parser.add_argument(
        "--data", help="the service's data folder (default: $NEARLINE_DATA or ./nearline-data)"
    )
    parser.add_argument("--db", help=DB_HELP)


@dataclass(frozen=True)
class SharedOptions:
    """A command family's shared options, taken before its verb and after it alike:
    ``nearline users --data D add erin`` and ``nearline users add erin --data D``.

    The copy after the verb has no defaults (``SUPPRESS``), so when an option is not given
    there it does not overwrite what was given before the verb; given in both places, the
    one after the verb wins."""

    before: argparse.ArgumentParser
    after: argparse.ArgumentParser

    def family(self, commands: Any, name: str, **settings: Any) -> argparse.ArgumentParser:
        """The family's parser ``name`` in ``commands``, taking the options before its verb."""
        return commands.add_parser(name, parents=[self.before], **settings)

    def verb(self, actions: Any, name: str, **settings: Any) -> argparse.ArgumentParser:
        """The verb ``name`` in the family's ``actions``, taking the options after it too."""
        return actions.add_parser(name, parents=[self.after], **settings)


def shared_options(add: Callable[[argparse.ArgumentParser], None]) -> SharedOptions:
    """The options that ``add`` puts on a parser, shared by a family and each of its verbs."""
    before = argparse.ArgumentParser(add_help=False)
    after = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    add(before)
    add(after)
    return SharedOptions(before, after)


DATA_OPTIONS = shared_options(add_data_option)


def state_options(whose: str) -> SharedOptions:
    """--data, --db and --user (help: ``whose`` things they are), for the command families
    that work on the service's state directly, without a server."""

    def add(parser: argparse.ArgumentParser) -> None:
        add_data_option(parser)
        parser.add_argument("--user", help=f"{whose} (default: $NEARLINE_USER or your login name)")

    return shared_options(add)


def user_of(args: argparse.Namespace) -> str:
    """--user, else $NEARLINE_USER, else the login name."""
    return args.user or os.environ.get("NEARLINE_USER") or getpass.getuser()


SERVING = re.compile(r"nearline serving .* at \S+ \(port (\d+)\)")


def served_port(output: str) -> int | None:
    """The port a `nearline serve` whose ``output`` this is serves on; None until it has
    bound one (it says so only then)."""
    found = SERVING.search(output)
    return int(found.group(1)) if found else None


def wait_until_serving(process: subprocess.Popen, log: Path, *, since: int, timeout: float) -> int:
    """The port of the `nearline serve` in ``process`` (writing ``log`` from byte ``since``)
    once it answers there. Its own 'serving' line comes first: whatever answers on a port
    before it is some other server. :class:`NearlineError` if it exits or stays silent."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise NearlineError(f"nearline serve stopped at start; its log: {log}")
        port = served_port(log.read_bytes()[since:].decode(errors="replace"))
        if port is not None:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"http://127.0.0.1:{port}/conformance", timeout=1).status_code == 200:
                    return port
        time.sleep(0.1)
    process.kill()
    process.wait()
    raise NearlineError(f"nearline serve did not answer within {timeout:g} s; its log: {log}")


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) < 65536:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {text!r}")
    return int(text)


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host``:``port`` (0: any free port), bound before the service
    says where it serves, so that what it says is true (and a port taken is one line).

    Nagle's algorithm is off on every connection it accepts: a kept-alive client's delayed
    acknowledgement would otherwise hold the last segment of each answer for 40 ms. Its
    protocol is IPPROTO_TCP (``socket.create_server`` leaves 0), without which asyncio does not
    set TCP_NODELAY on accepted connections; and TCP_NODELAY is set on it too, which Linux
    copies to each connection it accepts, whatever event loop serves them.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if family == socket.AF_INET6:
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        listener.bind((host, port))
        listener.listen()
    except OSError as error:
        listener.close()
        reason = error.strerror or str(error)
        raise ConfigError(
            f"cannot serve on {host}:{port}: {reason}; choose another --port (0: any free one)"
        ) from None
    return listener


def add_serve_parser(subparsers: Any) -> None:
    serve = subparsers.add_parser(
        "serve",
        help="run the near-archive service (STAC API, OGC API - Processes)",
        description="Serve the catalogue, the algorithms and orders over HTTP. Runs go to "
        "local sandboxed processes; state lives in --data.",
    )
    add_data_option(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument(
        "--port", type=_port, default=8000, help="port, 0 for any free one (default: %(default)s)"
    )
    serve.add_argument(
        "--base-url", default=None, help="the URL users reach it by (default: http://HOST:PORT)"
    )
    serve.add_argument("--cpus", type=float, default=None, help="CPUs lent to runs at once")
    serve.add_argument("--memory", default=None, help="memory lent to runs at once, e.g. 16GiB")
    serve.add_argument(
        "--max-upload", default=None, help="largest algorithm package accepted (default: 512MiB)"
    )
    serve.add_argument(
        "--executor",
        default=None,
        help="where runs execute: local (default), or dask://HOST:PORT for a Dask cluster",
    )
    serve.add_argument(
        "--admission",
        choices=("on", "off"),
        default=None,
        help="on (default): runs start as their declared CPUs and memory fit; off: every "
        "queued run starts at once, held only by its own limits, for comparisons "
        "(default: $NEARLINE_ADMISSION or on)",
    )
    serve.add_argument(
        "--record",
        default=None,
        metavar="DIR",
        help="sample the machine every second into DIR while serving, marking each run's "
        "start and end, for `nearline monitor plot DIR` (default: $NEARLINE_RECORD)",
    )
    serve.set_defaults(func=run_serve)

    jobs = subparsers.add_parser("jobs", help="jobs and the stations' queues")
    add_data_option(jobs)
    jobs.add_argument("--user", default=None, help="only this user's jobs")
    jobs.add_argument("--limit", type=int, default=20, help="how many jobs (default: 20)")
    jobs.set_defaults(func=run_jobs)


def _service(args: argparse.Namespace, **settings: Any):
    from nearline.orders import Service, ServiceSettings

    return Service(ServiceSettings.resolve(data=args.data, db=args.db, **settings))


def run_serve(args: argparse.Namespace) -> int:
    import uvicorn
    from rich.console import Console

    from nearline.api import create_app

    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    listener = listening_socket(args.host, args.port)
    port = listener.getsockname()[1]
    base = args.base_url or f"http://{args.host}:{port}"
    service = _service(
        args,
        base_url=base,
        cpus=args.cpus,
        memory=args.memory,
        max_upload=args.max_upload,
        executor=args.executor,
        admission=args.admission,
        record=args.record,
    )
    console = Console(stderr=True)
    try:
        service.start()
        app = create_app(service)
        console.print(
            f"nearline serving {service.settings.data} at {base} (port {port})", soft_wrap=True
        )
        if not service.users.list():
            console.print("no users yet: `nearline users add NAME` prints a token")
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[listener])
    except OSError as error:  # the data folder, the database, a run's folder
        where = f" ({error.filename})" if error.filename else ""
        raise ConfigError(f"cannot serve: {error.strerror or error}{where}") from None
    finally:
        listener.close()
        service.close()
    return 0


def run_jobs(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from nearline.backends import open_database
    from nearline.database import database_url
    from nearline.orders import Station
    from nearline.orders.store import JobStore

    database = open_database(database_url(args.db), data_folder(args) / "service.db")
    try:
        store = JobStore(database)
        active = [station for station in Station if not station.ended]
        queues = {s: 0 for s in active}
        for run in store.at(*active):
            queues[run.station] += 1
        console = Console()
        console.print("stations: " + ", ".join(f"{s.value} {n}" for s, n in queues.items()))
        table = Table("job", "user", "process", "status", "runs", "progress", "waiting")
        rows = database.query(
            "SELECT id FROM jobs WHERE (? IS NULL OR owner = ?) ORDER BY created DESC LIMIT ?",
            (args.user, args.user, args.limit),
        )
        for row in rows:
            job = store.get(row["id"], viewer=None)
            waiting = next((run.waiting for run in job.runs if run.waiting), "")
            table.add_row(
                job.id[:12],
                job.owner,
                f"{job.process} {job.version}",
                job.status.value,
                str(len(job.runs)),
                f"{job.progress}%",
                waiting,
            )
        console.print(table)
    finally:
        database.close()
    return 0
