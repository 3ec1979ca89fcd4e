"""The deployed algorithms and their versions: a SQLite table beside their folders.

``data/algorithms.db`` keeps each version's id, owner, visibility and state (testing, live,
retired) and its manifest as uploaded; ``data/algorithms/<id>/<version>/package`` holds its
files and ``.../env`` its own Python environment. A version is claimed as *testing* in one
transaction (ids are global: the first owner keeps an id; (id, version) is unique, so two
deploys of the same version cannot both win), built and tested, and only then promoted to
*live*. The newest live version is a process's default; older ones stay orderable by version.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from nearline.algorithms.base import MANIFEST, Algorithm, Manifest
from nearline.algorithms.deploy import (
    DeploySettings,
    Progress,
    build,
    hide_paths,
    install,
    run_tests,
)
from nearline.algorithms.manifest import parse_manifest
from nearline.algorithms.packages import package_root, unpack
from nearline.closing import Closing
from nearline.errors import (
    AlgorithmNotFound,
    Conflict,
    DeployError,
    ImmutableProcess,
    ManifestError,
)

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS processes (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS versions (
    id TEXT NOT NULL REFERENCES processes (id),
    version TEXT NOT NULL,
    owner TEXT NOT NULL,
    public INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('testing', 'live', 'retired')),
    package TEXT NOT NULL,
    python TEXT NOT NULL,
    manifest TEXT NOT NULL,
    deployed TEXT NOT NULL,
    serial INTEGER,
    deployer TEXT,
    PRIMARY KEY (id, version)
);
CREATE INDEX IF NOT EXISTS versions_live ON versions (state, id, serial);
"""


class AlgorithmRegistry(Closing):
    """Deploy, replace, undeploy and find algorithms kept under ``data``."""

    def __init__(self, data: str | Path, *, settings: DeploySettings | None = None) -> None:
        self.data = Path(data).absolute()
        self.root = self.data / "algorithms"
        self.path = self.data / "algorithms.db"
        self.settings = settings or DeploySettings.resolve()
        self._manifests: dict[tuple[str, str], Manifest] = {}
        self.root.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
        self._sweep()

    def close(self) -> None:
        """Nothing to release: every call opens and closes its own connection."""

    # -- finding ----------------------------------------------------------------------------
    def get(self, id: str, *, viewer: str | None, version: str | None = None) -> Algorithm:
        """The newest live version of ``id`` (or ``version``) that ``viewer`` may see;
        :class:`AlgorithmNotFound` otherwise, whether it is missing or another's."""
        query = "SELECT * FROM versions WHERE id = ? AND state = 'live'"
        args: tuple = (id,)
        if version is not None:
            query, args = query + " AND version = ?", (id, version)
        with self._db() as db:
            rows = db.execute(query + " ORDER BY serial DESC", args).fetchall()
        for row in rows:
            algorithm = self._algorithm(row)
            if algorithm.visible_to(viewer):
                return algorithm
        shown = f"process {id!r}" + (f" version {version!r}" if version is not None else "")
        raise AlgorithmNotFound(f"no {shown}; GET /processes lists the ones you may order")

    def list(self, *, viewer: str | None) -> list[Algorithm]:
        """The default version of every process ``viewer`` may see, by id."""
        with self._db() as db:
            rows = db.execute(
                "SELECT * FROM versions WHERE state = 'live' ORDER BY id, serial DESC"
            ).fetchall()
        found: dict[str, Algorithm] = {}
        for row in rows:
            if row["id"] not in found:
                algorithm = self._algorithm(row)
                if algorithm.visible_to(viewer):
                    found[row["id"]] = algorithm
        return list(found.values())

    def versions(self, id: str, *, viewer: str | None) -> list[Algorithm]:
        """Every live version of ``id`` that ``viewer`` may see, newest first."""
        with self._db() as db:
            rows = db.execute(
                "SELECT * FROM versions WHERE id = ? AND state = 'live' ORDER BY serial DESC",
                (id,),
            ).fetchall()
        found = [a for a in map(self._algorithm, rows) if a.visible_to(viewer)]
        if not found:
            raise AlgorithmNotFound(f"no process {id!r}; GET /processes lists the ones you see")
        return found

    # -- changing ---------------------------------------------------------------------------
    def deploy(
        self,
        package: Path | bytes,
        *,
        owner: str,
        public: bool = False,
        progress: Progress | None = None,
    ) -> Algorithm:
        """Deploy a new process from ``package`` (a folder, a zip file or zip bytes): check,
        build, test, then promote. Its id must be new, or retired and ``owner``'s."""
        return self._deploy(package, owner=owner, public=public, replacing=None, progress=progress)

    def replace(
        self, id: str, package: Path | bytes, *, owner: str, progress: Progress | None = None
    ) -> Algorithm:
        """Deploy a new version of ``owner``'s process ``id``; older versions stay."""
        current = self._owned(id, owner=owner, verb="replace")
        return self._deploy(
            package, owner=owner, public=current.public, replacing=id, progress=progress
        )

    def undeploy(self, id: str, *, owner: str) -> None:
        """Retire every version of ``owner``'s process ``id`` (jobs keep their records)."""
        self._owned(id, owner=owner, verb="undeploy")
        with self._db(write=True) as db:
            db.execute(
                "UPDATE versions SET state = 'retired' WHERE id = ? AND state != 'retired'", (id,)
            )
        log.info("undeployed %s", id)

    def ensure_builtin(self, package: Path, *, owner: str) -> Algorithm | None:
        """Deploy a built-in package as public unless that version is already there (or was
        undeployed on purpose, which is respected: None)."""
        manifest = parse_manifest((package_root(package) / MANIFEST).read_bytes())
        with self._db() as db:
            known = db.execute(
                "SELECT state FROM versions WHERE id = ? AND version = ?",
                (manifest.id, manifest.version),
            ).fetchone()
            states = {r[0] for r in db.execute("SELECT state FROM versions WHERE id = ?",
                                               (manifest.id,))}  # fmt: skip
        if known is not None and known["state"] == "live":
            return self.get(manifest.id, viewer=owner, version=manifest.version)
        if known is not None or (states and "live" not in states and "testing" not in states):
            return None
        try:
            if "live" in states:
                return self.replace(manifest.id, package, owner=owner)
            return self.deploy(package, owner=owner, public=True)
        except Conflict:  # another service process deployed it at the same moment
            return self.get(manifest.id, viewer=owner)

    # -- the pipeline -----------------------------------------------------------------------
    def _deploy(
        self,
        package: Path | bytes,
        *,
        owner: str,
        public: bool,
        replacing: str | None,
        progress: Progress | None,
    ) -> Algorithm:
        incoming = self.root / ".incoming" / f"{os.getpid()}-{uuid.uuid4().hex}"
        claimed: Manifest | None = None
        try:
            root = unpack(package, incoming, limits=self.settings.limits)
            text = (root / MANIFEST).read_bytes()
            manifest = parse_manifest(text, package=root)
            if replacing is not None and manifest.id != replacing:
                raise ManifestError(
                    f"the package's id is {manifest.id!r}, but it is to replace {replacing!r}",
                    field="id",
                )
            _report(progress, "unpack", 1, 1)
            folder = self.root / manifest.id / manifest.version
            self._claim(manifest, text, owner=owner, public=public, replacing=replacing,
                        folder=folder)  # fmt: skip
            claimed = manifest
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            os.rename(root, folder / "package")
            algorithm = self._test(manifest, folder, owner=owner, public=public,
                                   progress=progress)  # fmt: skip
            return self._promote(algorithm)
        except DeployError as error:
            if claimed is not None:
                self._discard(claimed.id, claimed.version)
            hidden = {self.data: "<data>", incoming: "<upload>", Path(sys.prefix): "<nearline>",
                      Path(sys.base_prefix): "<python>"}  # fmt: skip
            if self.settings.wheels.wheels is not None:
                hidden[self.settings.wheels.wheels] = "<wheels>"
            if claimed is not None:
                folder = self.root / claimed.id / claimed.version
                hidden.update({folder / "package": "<package>", folder: "<deploy>"})
            raise DeployError(hide_paths(str(error), hidden)) from None
        except BaseException:
            if claimed is not None:
                self._discard(claimed.id, claimed.version)
            raise
        finally:
            shutil.rmtree(incoming, ignore_errors=True)

    def _test(
        self, manifest: Manifest, folder: Path, *, owner: str, public: bool,
        progress: Progress | None,
    ) -> Algorithm:  # fmt: skip
        package = folder / "package"
        if manifest.requirements:
            _report(progress, "requirements", 0, 1)
        python = install(manifest, folder, settings=self.settings)
        if manifest.build is not None:
            _report(progress, "build", 0, 1)
        build(manifest, package, python, version_folder=folder)
        algorithm = Algorithm(manifest=manifest, owner=owner, public=public, package=package,
                              python=python, deployed=datetime.now(UTC))  # fmt: skip
        run_tests(algorithm, version_folder=folder, progress=progress)
        for work in (folder / "build", *(folder / "tests").glob("[0-9]*")):
            if work.is_dir():
                shutil.rmtree(work, ignore_errors=True)
        return algorithm

    def _claim(
        self,
        manifest: Manifest,
        text: bytes,
        *,
        owner: str,
        public: bool,
        replacing: str | None,
        folder: Path,
    ) -> None:
        id, version = manifest.id, manifest.version
        with self._db(write=True) as db:
            row = db.execute("SELECT owner FROM processes WHERE id = ?", (id,)).fetchone()
            if row is not None and row["owner"] != owner:
                raise Conflict(f"the process id {id!r} is not available; choose another id")
            states = {r[0] for r in db.execute("SELECT state FROM versions WHERE id = ?", (id,))}
            if replacing is None and states & {"live", "testing"}:
                raise Conflict(
                    f"process {id!r} exists already; deploy a new version of it with replace "
                    f"(PUT /processes/{id}, or `nearline algorithms deploy --replace`)"
                )
            same = db.execute(
                "SELECT state, deployer FROM versions WHERE id = ? AND version = ?", (id, version)
            ).fetchone()
            if same is not None and same["state"] == "testing" and not _alive(same["deployer"]):
                db.execute("DELETE FROM versions WHERE id = ? AND version = ?", (id, version))
            elif same is not None:
                raise Conflict(
                    f"version {version!r} of process {id!r} exists already ({same['state']}); "
                    "give the package a new version"
                )
            now = datetime.now(UTC).isoformat()
            try:
                if row is None:
                    db.execute("INSERT INTO processes VALUES (?, ?, ?)", (id, owner, now))
                db.execute(
                    "INSERT INTO versions (id, version, owner, public, state, package, python, "
                    "manifest, deployed, deployer) VALUES (?, ?, ?, ?, 'testing', ?, '', ?, ?, ?)",
                    (id, version, owner, int(public), str(folder / "package"),
                     text.decode("utf-8", "replace"), now, _me()),
                )  # fmt: skip
            except sqlite3.IntegrityError:
                raise Conflict(f"process {id!r} version {version!r} is being deployed") from None

    def _promote(self, algorithm: Algorithm) -> Algorithm:
        with self._db(write=True) as db:
            (serial,) = db.execute(
                "SELECT COALESCE(MAX(serial), 0) + 1 FROM versions WHERE id = ?", (algorithm.id,)
            ).fetchone()
            own = algorithm.python != Path(sys.executable)  # else: nearline's, wherever it is
            promoted = db.execute(
                "UPDATE versions SET state = 'live', serial = ?, python = ?, deployed = ?, "
                "deployer = NULL WHERE id = ? AND version = ? AND state = 'testing'",
                (serial, str(algorithm.python) if own else "", algorithm.deployed.isoformat(),
                 algorithm.id, algorithm.version),
            )  # fmt: skip
            if promoted.rowcount != 1:
                raise Conflict(f"process {algorithm.id!r} was undeployed while it was tested")
        log.info("deployed %s %s for %s", algorithm.id, algorithm.version, algorithm.owner)
        return algorithm

    def _discard(self, id: str, version: str) -> None:
        """Forget a version that did not make it: its row, its folder, and the id itself if
        nothing else of it was ever deployed."""
        with self._db(write=True) as db:
            db.execute(
                "DELETE FROM versions WHERE id = ? AND version = ? AND serial IS NULL",
                (id, version),
            )
            if db.execute("SELECT 1 FROM versions WHERE id = ?", (id,)).fetchone() is None:
                db.execute("DELETE FROM processes WHERE id = ?", (id,))
        shutil.rmtree(self.root / id / version, ignore_errors=True)

    def _owned(self, id: str, *, owner: str, verb: str) -> Algorithm:
        current = self.get(id, viewer=owner)
        with self._db() as db:
            row = db.execute("SELECT owner FROM processes WHERE id = ?", (id,)).fetchone()
        if row is None or row["owner"] != owner:
            raise ImmutableProcess(f"process {id!r} is not yours to {verb}")
        return current

    def _sweep(self) -> None:
        """Forget versions left testing by deploys that died (this host's, by pid)."""
        with self._db(write=True) as db:
            stale = [
                (row["id"], row["version"])
                for row in db.execute(
                    "SELECT id, version, deployer FROM versions WHERE state = 'testing'"
                )
                if not _alive(row["deployer"])
            ]
        for id, version in stale:
            log.warning("forgetting %s %s: its deploy died while testing it", id, version)
            self._discard(id, version)
        incoming = self.root / ".incoming"
        for folder in incoming.glob("*-*") if incoming.is_dir() else ():
            pid = folder.name.partition("-")[0]
            if pid.isdigit() and not _pid_alive(int(pid)):
                shutil.rmtree(folder, ignore_errors=True)

    # -- rows -------------------------------------------------------------------------------
    def _algorithm(self, row: sqlite3.Row) -> Algorithm:
        key = (row["id"], row["version"])
        manifest = self._manifests.get(key)
        if manifest is None:
            manifest = self._manifests[key] = parse_manifest(row["manifest"])
        return Algorithm(
            manifest=manifest,
            owner=row["owner"],
            public=bool(row["public"]),
            package=Path(row["package"]),
            python=Path(row["python"] or sys.executable),
            deployed=datetime.fromisoformat(row["deployed"]),
        )

    @contextmanager
    def _db(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        db.row_factory = sqlite3.Row
        try:
            if write:
                db.execute("BEGIN IMMEDIATE")
            yield db
            if write:
                db.execute("COMMIT")
        except BaseException:
            if write and db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()


def _report(progress: Progress | None, phase: str, done: int, total: int) -> None:
    if progress is not None:
        progress(phase, done, total)


def _me() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive(deployer: str | None) -> bool:
    """Whether the deploy that claimed a version may still be at work."""
    if not deployer:
        return False
    host, _, pid = deployer.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's: it cannot be checked from here
    return _pid_alive(int(pid))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
