"""The service benchmark's peer: pgstac on PostgreSQL + PostGIS, served by stac-fastapi-pgstac.

The standard STAC API stack, run beside nearline in one run: a throwaway PostgreSQL cluster
(``initdb``, Debian's PostgreSQL with PostGIS, default settings), pgstac's schema installed by
``pypgstac migrate``, items loaded by pypgstac's loader (COPY into the collection's partition)
and searched through stac-fastapi-pgstac under uvicorn (one process unless asked for more).
pypgstac and stac-fastapi-pgstac run in an environment of their own (_peer_env.py), not in
nearline's.

    with PgstacPeer() as peer:
        peer.start(folder)
        items_per_second = peer.load(*stac_json(items))  # nearline Items, as STAC JSON
        base_url = peer.serve()  # serve(workers=4): four processes on one socket

Run as a script, it checks itself on MODIS-like items and prints the load rate and the search
latency of the service benchmark's searches:

    .venv/bin/python benchmarks/_pgstac_peer.py [--items 10000] [--searches 100]
        [--folder bench-output/pgstac-peer]
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Self

import httpx
import orjson

from _peer_env import PeerEnvError, peer_python, run_peer
from _stac_searches import COLLECTION, START, days_of, percentiles, queries, timed
from nearline.testing.pgcluster import (
    SUPERUSER,
    Cluster,
    ClusterError,
    free_port,
    postgis_present,
    postgres_bindir,
    postgres_major,
    stop_process,
)

DATABASE = "pgstac"
MIGRATE = """
import sys
from pypgstac.db import PgstacDB
from pypgstac.migrate import Migrate
with PgstacDB(dsn=sys.argv[1]) as db:
    Migrate(db).run_migration()
"""
LOAD = """
import sys, time, orjson
from pypgstac.db import PgstacDB
from pypgstac.load import Loader, Methods
dsn, collection, path = sys.argv[1:]
items = [orjson.loads(line) for line in open(path, "rb")]
with PgstacDB(dsn=dsn) as db:
    loader = Loader(db=db)
    loader.load_collections(iter([orjson.loads(open(collection, "rb").read())]), Methods.upsert)
    began = time.perf_counter()
    loader.load_items(iter(items), Methods.insert)
    rate = len(items) / (time.perf_counter() - began)
    db.connect().execute("ANALYZE")
print(rate)
"""
VERSION = "import sys; from importlib.metadata import version; print(version(sys.argv[1]))"
# uvicorn with its arguments, but for one fix. With --workers N, uvicorn binds the listening
# socket itself, with its protocol left at 0, and asyncio then leaves Nagle's algorithm on for
# every connection: each answer on a kept-alive connection waits ~40 ms for the client's
# delayed acknowledgement (Kludex/uvicorn#3149, open; 44 ms per GET /conformance here). The fix
# proposed there (#3154): the listener made as IPPROTO_TCP, which accepted sockets inherit.
# One worker (asyncio's own listener) never needed it.
UVICORN = """
import socket, sys
import uvicorn.config, uvicorn.main
bind_socket = uvicorn.config.Config.bind_socket
def bind_tcp_socket(config):
    sock = bind_socket(config)
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock = socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())
        sock.set_inheritable(True)
    return sock
uvicorn.config.Config.bind_socket = bind_tcp_socket
sys.exit(uvicorn.main.main())
"""


class PeerError(RuntimeError):
    """The peer stack cannot run here; the message says what to do."""


# -- finding PostgreSQL and PostGIS (the cluster itself: nearline.testing.pgcluster) -----------
def ensure_postgis(bindir: Path) -> None:
    """Install Debian's PostGIS for this PostgreSQL when it is missing and we are root."""
    if postgis_present(bindir):
        return
    package = f"postgresql-{postgres_major(bindir)}-postgis-3"
    install = ["apt-get", "install", "-y", "--no-install-recommends", package]
    if os.geteuid() != 0:
        raise PeerError(f"PostGIS is not installed for {bindir}: run `sudo {' '.join(install)}`")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    done = subprocess.run(install, capture_output=True, text=True, env=env)
    if done.returncode != 0:  # most often: no package lists yet, or stale ones
        subprocess.run(["apt-get", "update"], capture_output=True, env=env)
        done = subprocess.run(install, capture_output=True, text=True, env=env)
    if done.returncode != 0 or not postgis_present(bindir):
        raise PeerError(f"`{' '.join(install)}` failed:\n{done.stdout[-2000:]}{done.stderr}")


# -- the peer ------------------------------------------------------------------------------------
class PgstacPeer:
    """A throwaway pgstac database and its STAC API; everything ends with the ``with`` block.

    Parameters
    ----------
    bindir
        PostgreSQL's binaries; found by :func:`postgres_bindir` when None.
    python
        The interpreter of an environment holding pypgstac and stac-fastapi-pgstac; the
        peer's own (``_peer_env.peer_python``), made on first use, when None.
    """

    def __init__(self, *, bindir: Path | None = None, python: Path | None = None) -> None:
        self.cluster = Cluster(bindir=bindir)
        self.python = python  # the peer's own environment's interpreter (made on start())
        self.api: subprocess.Popen | None = None
        self.url = ""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def home(self) -> Path | None:
        """The cluster's folder: data, socket, logs."""
        return self.cluster.home

    @property
    def port(self) -> int:
        return self.cluster.port

    @property
    def dsn(self) -> str:
        return self.cluster.url(DATABASE)

    def start(self, folder: Path) -> None:
        """Create a cluster in a new folder inside ``folder``, start it on 127.0.0.1 and a
        free port, create the database and install pgstac (with PostGIS) in it, with
        pypgstac's migration run in the peer's own environment."""
        try:
            self.python = self.python or peer_python()
            self.cluster.bindir = self.cluster.bindir or postgres_bindir()
            ensure_postgis(self.cluster.bindir)
            self.cluster.start(Path(folder).absolute())
            self.cluster.create_database(DATABASE)
            run_peer(self.python, MIGRATE, self.dsn)
        except (ClusterError, PeerEnvError) as error:
            self.close()
            raise PeerError(str(error)) from None
        except BaseException:
            self.close()
            raise

    def load(self, items: list[dict[str, Any]], collection: dict[str, Any]) -> float:
        """Put ``collection`` (upserted), then bulk load ``items`` (STAC Item dicts) with
        pypgstac's loader in its insert mode (COPY into the partition), in the peer's own
        environment; items/s of the latter, timed there once the items are in its memory
        (read from an NDJSON file first, outside the time).

        The tables are ANALYZEd afterwards, outside the time, as autovacuum would soon do.
        """
        assert self.home is not None, "start() the peer first"
        assert self.python is not None, "start() the peer first"
        file = self.home / "items.ndjson"
        with open(file, "wb") as out:
            for item in items:
                out.write(orjson.dumps(item) + b"\n")
        collection_file = self.home / "collection.json"
        collection_file.write_bytes(orjson.dumps(collection))
        try:
            found = run_peer(self.python, LOAD, self.dsn, str(collection_file), str(file))
        except PeerEnvError as error:
            raise PeerError(str(error)) from None
        finally:
            file.unlink(missing_ok=True)
        return float(found.split()[-1])

    def serve(self, *, workers: int = 1, timeout: float = 60) -> str:
        """Start stac-fastapi-pgstac (uvicorn with ``workers`` processes on one socket,
        127.0.0.1, a free port; :data:`UVICORN`) on the database, stopping the one it started
        before; its base URL once GET /conformance answers."""
        assert self.home is not None, "start() the peer first"
        self.stop_serving()
        port = free_port()
        env = {
            **os.environ,
            "PGUSER": SUPERUSER,
            "PGPASSWORD": "unused",  # trust authentication; the setting is required
            "PGHOST": "127.0.0.1",
            "PGPORT": str(self.port),
            "PGDATABASE": DATABASE,
        }
        # 7.x builds the app in a factory (the module no longer has an ``app``)
        command = [str(self.python), "-c", UVICORN, "stac_fastapi.pgstac.app:create_app"]
        command += [
            "--factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ]
        if workers > 1:  # uvicorn's supervisor then imports the app afresh in each worker
            command += ["--workers", str(workers)]
        log_path = self.home / "api.log"
        with open(log_path, "ab") as log:  # cwd: the cluster's folder, so no stray .env is read
            self.api = subprocess.Popen(command, env=env, stdout=log, stderr=log, cwd=self.home)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.api.poll() is not None:
                raise PeerError(f"stac-fastapi-pgstac exited:\n{log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{url}/conformance", timeout=1).status_code == 200:
                    self.url = url
                    return url
            except httpx.TransportError:
                time.sleep(0.1)
        raise PeerError(f"stac-fastapi-pgstac did not answer:\n{log_path.read_text()[-3000:]}")

    def versions(self) -> dict[str, str]:
        """PostgreSQL, PostGIS, pgstac and stac-fastapi-pgstac versions, for a report."""
        import psycopg

        assert self.python is not None, "start() the peer first"
        with psycopg.connect(self.dsn) as connection:
            postgres = connection.execute("SHOW server_version").fetchone()[0]
            postgis = connection.execute("SELECT postgis_lib_version()").fetchone()[0]
            pgstac = connection.execute("SELECT pgstac.get_version()").fetchone()[0]
        served = run_peer(self.python, VERSION, "stac-fastapi-pgstac").strip()
        return {
            "PostgreSQL": postgres.split()[0],
            "PostGIS": postgis,
            "pgstac": pgstac,
            "stac-fastapi-pgstac": served,
        }

    def stop_serving(self) -> None:
        """Stop the API; PostgreSQL goes on."""
        stop_process(self.api)
        self.api, self.url = None, ""

    def close(self) -> None:
        """Stop the API and PostgreSQL, and remove the cluster's folder."""
        self.stop_serving()
        self.cluster.close()


# -- the items as the peer takes them ----------------------------------------------------------
def stac_json(items: list) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``items`` (nearline Items) and their collection as STAC JSON for :meth:`PgstacPeer.load`;
    nearline's own links are dropped (pgstac's API makes its own)."""
    from nearline.archive import Collection, collection_to_stac, item_to_stac

    stac = []
    for item in items:
        body = item_to_stac(item, "http://peer")
        body["links"] = []
        stac.append(body)
    collection = collection_to_stac(
        Collection(id=COLLECTION, title="MODIS-like granules", extent=(None, START, items[-1].end)),
        "http://peer",
    )
    collection["links"] = []
    return stac, collection


# -- the self-check ------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--folder", default="bench-output/pgstac-peer")
    args = parser.parse_args()
    from nearline.archive import modis_like_items

    made = list(modis_like_items(args.items, collection=COLLECTION, start=START, seed=1))
    items, collection = stac_json(made)
    asked = queries(args.searches, days=days_of(args.items))
    with PgstacPeer() as peer:
        began = time.perf_counter()
        peer.start(Path(args.folder))
        print(f"cluster with pgstac ready in {time.perf_counter() - began:.1f} s", flush=True)
        rate = peer.load(items, collection)
        url = peer.serve()
        print(", ".join(f"{k} {v}" for k, v in peer.versions().items()))
        with httpx.Client(base_url=url, timeout=60) as client:
            returned = [client.get("/search", params=q).json()["numberReturned"] for q in asked]
            assert sum(returned) > 0, "the searches find nothing: a benchmark would measure nothing"
            pending = itertools.cycle(asked)

            def search() -> None:
                response = client.get("/search", params=next(pending))
                assert response.status_code == 200, response.text

            p50, p95 = percentiles(timed(search, args.searches))
    print(f"{args.items:,} items: pypgstac load {rate:,.0f} items/s")
    print(
        f"{args.searches} searches (bbox 10x10 degrees + one day, limit 10, keep-alive): "
        f"p50 {p50 * 1e3:.2f} ms, p95 {p95 * 1e3:.2f} ms; "
        f"{sum(returned)} items returned, {sum(1 for r in returned if r)} searches found some"
    )


if __name__ == "__main__":
    main()
