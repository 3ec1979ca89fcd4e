"""``nearline algorithms deploy|list|undeploy``: algorithm packages managed on the service's
data folder directly (no server needed), as the web API's POST/PUT/DELETE /processes do.

``--data`` (or ``NEARLINE_DATA``, default ./nearline-data) is the service's data folder;
``--user`` (or ``NEARLINE_USER``, default the login name) is who deploys or looks.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nearline.cli._options import data_folder, state_options, user_of


def add_algorithms_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``algorithms {deploy,list,undeploy}`` to ``subparsers``."""
    options = state_options("who deploys or looks")
    parser = options.family(
        subparsers,
        "algorithms",
        description="Manage the algorithms of a nearline service's data folder: deploy a "
        "package (a folder or .zip holding algorithm.yaml; it is built and its test cases run "
        "in the sandbox before it goes live), list what a user may order, undeploy.",
    )
    actions = parser.add_subparsers(dest="action", required=True)

    deploy = options.verb(actions, "deploy", help="deploy a package")
    deploy.add_argument("package", help="a package folder or .zip holding algorithm.yaml")
    deploy.add_argument("--public", action="store_true", help="let every user order it")
    deploy.add_argument(
        "--replace", action="store_true", help="deploy a new version of your existing process"
    )
    deploy.add_argument(
        "--wheels", default=None, help="install requirements from this folder of wheels only "
        "(default: $NEARLINE_WHEELS, else the package index)",
    )  # fmt: skip
    deploy.set_defaults(func=_deploy)

    listing = options.verb(actions, "list", help="list the processes you see")
    listing.add_argument("--versions", action="store_true", help="every live version")
    listing.set_defaults(func=_list)

    undeploy = options.verb(actions, "undeploy", help="retire every version")
    undeploy.add_argument("id", help="the process id")
    undeploy.set_defaults(func=_undeploy)
    return parser


@contextmanager
def _registry(args: argparse.Namespace, *, wheels: str | None = None) -> Iterator[Any]:
    from nearline.algorithms import AlgorithmRegistry, DeploySettings
    from nearline.db import database_url, open_database

    data = data_folder(args)
    url = database_url(args.db)
    with contextlib.ExitStack() as stack:
        database = stack.enter_context(open_database(url, data)) if url else None
        settings = DeploySettings.resolve(wheels=wheels)
        yield stack.enter_context(AlgorithmRegistry(data, settings=settings, database=database))


def _deploy(args: argparse.Namespace) -> int:
    package = Path(args.package)
    user = user_of(args)

    def progress(phase: str, done: int, total: int) -> None:
        if phase == "test" and done < total:
            print(f"  running test case {done + 1} of {total}", file=sys.stderr)
        elif phase in ("requirements", "build") and done == 0:
            print(f"  {phase}", file=sys.stderr)

    with _registry(args, wheels=args.wheels) as registry:
        if args.replace:
            process = _process_id(package)
            algorithm = registry.replace(process, package, owner=user, progress=progress)
        else:
            algorithm = registry.deploy(package, owner=user, public=args.public,
                                        progress=progress)  # fmt: skip
    shown = "public" if algorithm.public else f"private to {algorithm.owner}"
    print(f"deployed {algorithm.id} {algorithm.version} ({shown})")
    return 0


def _process_id(package: Path) -> str:
    """The id a package declares (for --replace)."""
    import tempfile

    from nearline.algorithms import read_manifest, unpack

    with tempfile.TemporaryDirectory(prefix="nearline-package-") as scratch:
        return read_manifest(unpack(package, Path(scratch) / "package")).id


def _list(args: argparse.Namespace) -> int:
    from nearline.errors import AlgorithmNotFound

    user = user_of(args)
    with _registry(args) as registry:
        found = registry.list(viewer=user)
        if args.versions:
            found = [v for a in found for v in registry.versions(a.id, viewer=user)]
    if not found:
        raise AlgorithmNotFound(f"no processes that {user} may order in this data folder")
    rows = [("ID", "VERSION", "OWNER", "VISIBILITY", "TITLE")] + [
        (a.id, a.version, a.owner, "public" if a.public else "private", a.manifest.title)
        for a in found
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
              + "  " + row[4])  # fmt: skip
    return 0


def _undeploy(args: argparse.Namespace) -> int:
    with _registry(args) as registry:
        registry.undeploy(args.id, owner=user_of(args))
    print(f"undeployed {args.id}")
    return 0
