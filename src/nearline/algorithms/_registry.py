"""The deployed algorithms: deploy, replace, undeploy, and who may see which version.

``data/algorithms.db`` (store.py) keeps each version's owner, visibility, state and manifest
as uploaded; ``data/algorithms/<id>/<version>/package`` holds its files and ``.../env`` its own
Python environment. A version is claimed as *testing*, given its environment, built and
tested (_deploy.py), and only then promoted to *live*; a failure leaves nothing of it. The
newest live version is a process's default; older ones stay orderable by version. A private
process is its owner's alone: to anyone else it does not exist (404, never 403).
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nearline.algorithms._base import MANIFEST, Algorithm, Manifest
from nearline.algorithms._deploy import (
    DeploySettings,
    Progress,
    build,
    hide_paths,
    install,
    run_tests,
)
from nearline.algorithms._manifest import parse_manifest
from nearline.algorithms._packages import package_root, unpack
from nearline.algorithms.store import VersionStore, pid_alive
from nearline.closing import Closing
from nearline.db import Database, SQLiteDatabase
from nearline.errors import (
    AlgorithmNotFound,
    Conflict,
    DeployError,
    ImmutableProcess,
    ManifestError,
)

log = logging.getLogger(__name__)


class AlgorithmRegistry(Closing):
    """Deploy, replace, undeploy and find algorithms: the service's processes.

    A deploy checks, builds and tests the package in the sandbox before the version goes
    live; a version that fails any step never becomes visible.
    """

    def __init__(
        self,
        data: str | Path,
        *,
        settings: DeploySettings | None = None,
        accept: Callable[[Manifest, str], None] | None = None,
        database: Database | None = None,
    ) -> None:
        """Open the registry under ``data``.

        Parameters
        ----------
        data
            The service's data folder; packages go under ``data/algorithms``.
        settings
            How deploys are done (default: from the environment).
        accept
            ``accept(manifest, owner)`` may refuse a package (raise) before it is built, for
            reasons the registry cannot see, such as a clash with the catalogue.
        database
            Keeps the versions (default: the SQLite file ``data/algorithms.db``; the caller
            closes one it gives).
        """
        self.data = Path(data).absolute()
        self.accept = accept
        self.root = self.data / "algorithms"
        self.path = self.data / "algorithms.db"
        self.settings = settings or DeploySettings.resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._own = database is None
        self.store = VersionStore(database or SQLiteDatabase(self.path))
        self._manifests: dict[tuple[str, str], Manifest] = {}
        self._sweep()

    def close(self) -> None:
        """Release the versions' database, if the registry opened it."""
        if self._own:
            self.store.database.close()

    # -- finding ----------------------------------------------------------------------------
    def get(self, id: str, *, viewer: str | None, version: str | None = None) -> Algorithm:
        """The newest live version of a process that ``viewer`` may see.

        Parameters
        ----------
        id
            The process's id.
        viewer
            The user asking (None: anonymous).
        version
            This version rather than the newest.

        Raises
        ------
        AlgorithmNotFound
            None the viewer may see, whether it is missing or another's.
        """
        for row in self.store.live(id, version):
            algorithm = self._algorithm(row)
            if algorithm.visible_to(viewer):
                return algorithm
        shown = f"process {id!r}" + (f" version {version!r}" if version is not None else "")
        raise AlgorithmNotFound(f"no {shown}; GET /processes lists the ones you may order")

    def list(self, *, viewer: str | None) -> list[Algorithm]:
        """The default version of every process ``viewer`` may see, by id.

        Parameters
        ----------
        viewer
            The user asking (None: anonymous, public processes only).
        """
        found: dict[str, Algorithm] = {}
        for row in self.store.live():
            if row["id"] not in found:
                algorithm = self._algorithm(row)
                if algorithm.visible_to(viewer):
                    found[row["id"]] = algorithm
        return list(found.values())

    def versions(self, id: str, *, viewer: str | None) -> list[Algorithm]:
        """Every live version of a process that ``viewer`` may see, newest first.

        Parameters
        ----------
        id
            The process's id.
        viewer
            The user asking.

        Raises
        ------
        AlgorithmNotFound
            None the viewer may see.
        """
        found = [a for a in map(self._algorithm, self.store.live(id)) if a.visible_to(viewer)]
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
        """Deploy a new process: check, build, test, then promote.

        Parameters
        ----------
        package
            A folder, a zip file or a zip's bytes.
        owner
            The user deploying it; its id must be new, or retired and theirs.
        public
            Whether every user sees it.
        progress
            ``progress(step, done, total)``, told as the steps go.

        Returns
        -------
        Algorithm
            The live version.

        Raises
        ------
        ManifestError, PackageError, TooLarge
            The package does not check or is too large.
        DeployError
            Its build, install or tests failed; the message says which and where the log is.
        Conflict
            The id is taken.
        """
        return self._deploy(package, owner=owner, public=public, replacing=None, progress=progress)

    def replace(
        self, id: str, package: Path | bytes, *, owner: str, progress: Progress | None = None
    ) -> Algorithm:
        """Deploy a new version of a process; older versions stay.

        The new version keeps the visibility of the one it follows.

        Parameters
        ----------
        id
            The process's id.
        package
            A folder, a zip file or a zip's bytes.
        owner
            The user replacing it: it must be theirs.
        progress
            ``progress(step, done, total)``, told as the steps go.

        Returns
        -------
        Algorithm
            The new live version.

        Raises
        ------
        ImmutableProcess
            The process is not ``owner``'s.
        ManifestError, PackageError, TooLarge, DeployError
            As for [`deploy`][nearline.algorithms.AlgorithmRegistry.deploy].
        """
        current = self._owned(id, owner=owner, verb="replace")
        return self._deploy(
            package, owner=owner, public=current.public, replacing=id, progress=progress
        )

    def undeploy(self, id: str, *, owner: str) -> None:
        """Retire every version of a process; jobs keep their records.

        Parameters
        ----------
        id
            The process's id.
        owner
            The user retiring it: it must be theirs.

        Raises
        ------
        ImmutableProcess
            The process is not ``owner``'s.
        """
        self._owned(id, owner=owner, verb="undeploy")
        self.store.retire(id)
        log.info("undeployed %s", id)

    def ensure_builtin(self, package: Path, *, owner: str) -> Algorithm | None:
        """Deploy a built-in package, public, unless that version is live already.

        Parameters
        ----------
        package
            One of [`builtin_algorithms`][nearline.algorithms.builtin_algorithms].
        owner
            The service's own user.

        Returns
        -------
        Algorithm or None
            The live version; None for a built-in undeployed on purpose, which stays so.
        """
        manifest = parse_manifest((package_root(package) / MANIFEST).read_bytes())
        states = self.store.states(manifest.id)
        if self.store.states(manifest.id, manifest.version) == {"live"}:
            return self.get(manifest.id, viewer=owner, version=manifest.version)
        if self.store.states(manifest.id, manifest.version) or states == {"retired"}:
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
        # named by process and host: servers on several hosts may share the data folder
        name = f"{os.getpid()}-{uuid.uuid4().hex}-{socket.gethostname()}"
        incoming = self.root / ".incoming" / name
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
            if self.accept is not None:
                self.accept(manifest, owner)
            _report(progress, "unpack", 1, 1)
            folder = self.root / manifest.id / manifest.version
            self.store.claim(
                manifest.id,
                manifest.version,
                owner=owner,
                public=public,
                replacing=replacing is not None,
                package=folder / "package",
                manifest=text.decode("utf-8", "replace"),
            )
            claimed = manifest
            if folder.exists():  # left by a deploy that died
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            os.rename(root, folder / "package")
            algorithm = self._test(manifest, folder, owner=owner, public=public, progress=progress)
            own = algorithm.python != Path(sys.executable)  # else nearline's, found at load
            self.store.promote(
                algorithm.id,
                algorithm.version,
                python=str(algorithm.python) if own else "",
                deployed=algorithm.deployed,
            )
            log.info("deployed %s %s for %s", algorithm.id, algorithm.version, owner)
            return algorithm
        except DeployError as error:
            self._discard(claimed)
            raise DeployError(hide_paths(str(error), self._hidden(incoming, claimed))) from None
        except BaseException:
            self._discard(claimed)
            raise
        finally:
            shutil.rmtree(incoming, ignore_errors=True)

    def _test(
        self,
        manifest: Manifest,
        folder: Path,
        *,
        owner: str,
        public: bool,
        progress: Progress | None,
    ) -> Algorithm:
        package = folder / "package"
        if manifest.requirements:
            _report(progress, "requirements", 0, 1)
        python = install(manifest, folder, settings=self.settings)
        if manifest.build is not None:
            _report(progress, "build", 0, 1)
        build(manifest, package, python, version_folder=folder)
        algorithm = Algorithm(
            manifest=manifest,
            owner=owner,
            public=public,
            package=package,
            python=python,
            deployed=datetime.now(UTC),
        )
        run_tests(algorithm, version_folder=folder, progress=progress)
        for work in (folder / "build", *(folder / "tests").glob("[0-9]*")):
            if work.is_dir():
                shutil.rmtree(work, ignore_errors=True)
        return algorithm

    def _discard(self, manifest: Manifest | None) -> None:
        if manifest is not None:
            self.store.discard(manifest.id, manifest.version)
            shutil.rmtree(self.root / manifest.id / manifest.version, ignore_errors=True)

    def _hidden(self, incoming: Path, claimed: Manifest | None) -> dict[Path, str]:
        """The service's own folders, by the names a deploy error shows instead."""
        hidden = {
            self.data: "<data>",
            incoming: "<upload>",
            Path(sys.prefix): "<nearline>",
            Path(sys.base_prefix): "<python>",
        }
        if self.settings.wheels.wheels is not None:
            hidden[self.settings.wheels.wheels] = "<wheels>"
        if claimed is not None:
            folder = self.root / claimed.id / claimed.version
            hidden.update({folder / "package": "<package>", folder: "<deploy>"})
        return hidden

    def _owned(self, id: str, *, owner: str, verb: str) -> Algorithm:
        current = self.get(id, viewer=owner)  # AlgorithmNotFound unless owner may see it
        if self.store.owner(id) != owner:
            raise ImmutableProcess(f"process {id!r} is not yours to {verb}")
        return current

    def _sweep(self) -> None:
        """Forget versions left testing by deploys that died, and their uploads."""
        for id, version in self.store.stale():
            log.warning("forgetting %s %s: its deploy died while testing it", id, version)
            self.store.discard(id, version)
            shutil.rmtree(self.root / id / version, ignore_errors=True)
        incoming = self.root / ".incoming"
        for folder in incoming.glob("*-*") if incoming.is_dir() else ():
            pid, _, rest = folder.name.partition("-")
            here = rest.partition("-")[2] in ("", socket.gethostname())  # another host's: alive
            if pid.isdigit() and here and not pid_alive(int(pid)):
                shutil.rmtree(folder, ignore_errors=True)

    def _algorithm(self, row: Any) -> Algorithm:
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


def _report(progress: Progress | None, phase: str, done: int, total: int) -> None:
    if progress is not None:
        progress(phase, done, total)
