"""``nearline serve``: the service from the shell (``nearline jobs`` is in _jobs.py,
``nearline users`` in _users.py), and how a caller knows where it serves.

Embedded defaults: everything under ``./nearline-data`` (``--data`` or ``NEARLINE_DATA``), a
SQLite catalogue and job store, runs as local sandboxed processes. Nothing to install.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import shutil
import socket
import subprocess
import time
from functools import partial
from pathlib import Path
from typing import Any

from nearline.cli._options import (
    add_data_option,
    add_door_options,
    add_operator_options,
    add_s3_options,
    door_options,
    s3_options,
)
from nearline.errors import ConfigError, NearlineError

SERVING = re.compile(r"nearline serving .* at \S+ \(port (\d+)\)")
METRICS = re.compile(r"nearline metrics for Prometheus at \S+ \(port (\d+)\)")
log = logging.getLogger(__name__)


def served_port(output: str, what: re.Pattern[str] = SERVING) -> int | None:
    """The port a `nearline serve` whose ``output`` this is serves on (``what``: METRICS,
    the port of its metrics); None until it has bound one (it says so only then)."""
    found = what.search(output)
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


def listening_socket(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A TCP socket listening on ``host``:``port`` (0: any free port), bound before the service
    says where it serves, so that what it says is true (and a port taken is one line).

    Nagle's algorithm is off on every connection it accepts: a kept-alive client's delayed
    acknowledgement would otherwise hold the last segment of each answer for 40 ms. Its
    protocol is IPPROTO_TCP (``socket.create_server`` leaves 0), without which asyncio does not
    set TCP_NODELAY on accepted connections; and TCP_NODELAY is set on it too, which Linux
    copies to each connection it accepts, whatever event loop serves them.

    ``reuse_port``: several sockets, one a worker process, share the port (SO_REUSEPORT). The
    primary binds without it first, so that a port another server holds is refused.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:  # one of `--workers`' sockets on one port (nearline.cli._workers)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
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


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def add_serve_parser(subparsers: Any) -> None:
    serve = subparsers.add_parser(
        "serve",
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
    serve.add_argument(
        "--archive",
        default=None,
        metavar="s3://BUCKET/PREFIX",
        help="keep job outputs in this bucket instead of under --data, so that servers on "
        "other hosts (one --db) can send them (default: $NEARLINE_ARCHIVE)",
    )
    serve.add_argument(
        "--oidc",
        default=None,
        metavar="FILE",
        help="sign people in through an OpenID Connect provider, as this YAML file says "
        '(docs/service.md, "Signing in"; default: $NEARLINE_OIDC)',
    )
    serve.add_argument(
        "--echo",
        choices=("on", "off"),
        default=None,
        help="on: serve the echo process (a test process that gives back its inputs, for "
        "OGC's conformance suite and new clients); off (default) in production "
        "(default: $NEARLINE_ECHO or off)",
    )
    serve.add_argument(
        "--cors",
        nargs="+",
        default=None,
        metavar="ORIGIN",
        help="let web pages from these origins (https://host[:port]) call the API from a "
        "browser, e.g. a STAC Browser hosted elsewhere; '*': pages from any origin, never "
        'with credentials (docs/service.md, "CORS and STAC Browser"; default: $NEARLINE_CORS, '
        "else none)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes that answer requests, on one port; the first also runs the orders "
        "(default: $NEARLINE_WORKERS, else the cores this process may use)",
    )
    add_door_options(serve)
    add_s3_options(serve)
    add_operator_options(serve)
    serve.set_defaults(func=run_serve)


def _service(args: argparse.Namespace, wake_primary: Any = None, **settings: Any):
    from nearline.orders import Service, ServiceSettings

    resolved = ServiceSettings.resolve(data=args.data, db=args.db, **settings)
    return Service(resolved, wake_primary=wake_primary)


def _cross_origin(args: argparse.Namespace):
    """--cors, else $NEARLINE_CORS (origins apart by spaces or commas); None: off."""
    from nearline.api import CrossOrigin

    texts = args.cors if args.cors is not None else os.environ.get("NEARLINE_CORS", "").split()
    return CrossOrigin.parse(texts) if texts else None


def _settings(args: argparse.Namespace, base: str) -> dict[str, Any]:
    """The service's settings from the command line, the same in every worker process."""
    return {
        "base_url": base,
        "cpus": args.cpus,
        "memory": args.memory,
        "max_upload": args.max_upload,
        "executor": args.executor,
        "admission": args.admission,
        "record": args.record,
        "archive": args.archive,
        "storage_options": s3_options(args),
        "oidc": args.oidc,
        "echo": args.echo,
    }


def _base_url(args: argparse.Namespace, listener: socket.socket) -> str:
    return args.base_url or f"http://{args.host}:{listener.getsockname()[1]}"


def _uvicorn_config(app: Any) -> Any:
    import uvicorn

    return uvicorn.Config(app, log_level="warning", log_config=None, access_log=False)


def run_serve(args: argparse.Namespace) -> int:
    from nearline.cli._workers import FrontLink, check_workers, default_workers, share_metrics

    front = FrontLink.of_environment()
    if front is not None:
        return _serve_front(args, front)
    workers = check_workers(args.workers if args.workers is not None else default_workers())
    metrics_shared = share_metrics() if workers > 1 else None  # before prometheus_client loads
    try:
        return _serve_primary(args, workers)
    finally:
        if metrics_shared is not None:
            shutil.rmtree(metrics_shared, ignore_errors=True)


def _serve_primary(args: argparse.Namespace, workers: int) -> int:
    import uvicorn
    from rich.console import Console

    from nearline import logs
    from nearline.api import create_app, open_doors
    from nearline.cli._workers import Fronts

    logs.configure(args.log_format)
    cors = _cross_origin(args)
    logging.getLogger("botocore").setLevel(logging.WARNING)  # "found credentials in ..."
    listener = listening_socket(args.host, args.port)  # a port taken: refused here
    port = listener.getsockname()[1]
    base = _base_url(args, listener)
    if workers > 1:  # the same port again, now shared with the fronts
        listener.close()
        listener = listening_socket(args.host, port, reuse_port=True)
    service = _service(args, **_settings(args, base))
    console = Console(stderr=True)  # a person's terminal; a machine's log has JSON lines only
    say = log.info if args.log_format == "json" else partial(console.print, soft_wrap=True)
    metrics = None
    fronts = None
    try:
        if args.metrics is not None:  # bound first: a taken address is one line, at once
            metrics = service.metrics.serve(*args.metrics)
        service.start()
        app = create_app(service, cors=cors)
        doors = open_doors(app, service, **door_options(args))
        if workers > 1:  # after start: the built-in algorithms are there for them
            fronts = Fronts(port, args.argv, workers, service.dispatcher.wake_from_front)
            fronts.wait_ready()
        if metrics is not None:
            say(f"nearline metrics for Prometheus at {_url(args.metrics[0], metrics.port)}"
                f"/metrics (port {metrics.port})")  # fmt: skip
        say(f"nearline serving {service.settings.data} at {base} (port {port})")
        say(f"{workers} worker process{'es' if workers > 1 else ''} answer requests (--workers)")
        if doors.guest is not None:
            say(f"guest: requests without a token act as user {doors.guest}")
        if doors.public is not None:
            say(f"anonymous readers may read: {', '.join(sorted(doors.public))}")
        if cors is not None:
            say(cors.describe())
        if service.settings.echo:
            say("echo: the echo test process is served (--echo on)")
        if not service.users.list():
            say("no users yet: `nearline users add NAME` prints a token")
        uvicorn.Server(_uvicorn_config(app)).run(sockets=[listener])
    except OSError as error:  # the data folder, the database, a run's folder
        where = f" ({error.filename})" if error.filename else ""
        raise ConfigError(f"cannot serve: {error.strerror or error}{where}") from None
    finally:
        if fronts is not None:
            fronts.close()
        listener.close()
        if metrics is not None:
            metrics.close()
        service.close()
    return 0


def _serve_front(args: argparse.Namespace, front: Any) -> int:
    """A front: the same service and app over the primary's socket, answering requests only
    (nearline.cli._workers); it stops when the primary does."""
    import uvicorn

    from nearline import logs
    from nearline.api import create_app, open_doors

    logs.configure(args.log_format)
    logging.getLogger("botocore").setLevel(logging.WARNING)
    listener = listening_socket(args.host, front.port, reuse_port=True)
    service = _service(args, wake_primary=front.wake, **_settings(args, _base_url(args, listener)))
    try:
        service.start_front()
        app = create_app(service, cors=_cross_origin(args))
        open_doors(app, service, **door_options(args))
        server = uvicorn.Server(_uvicorn_config(app))
        front.on_primary_gone(lambda: setattr(server, "should_exit", True))
        front.ready()
        server.run(sockets=[listener])
    finally:
        listener.close()
        service.close()
    return 0
