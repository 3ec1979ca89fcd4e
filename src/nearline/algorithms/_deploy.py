"""A new version's way to live: its Python environment, its build in the sandbox, and its
declared test cases run exactly as real runs are, outputs compared with what the package
expects. Any failure is a :class:`DeployError` carrying the end of the log; the registry then
throws the version away (test, then promote, as S4PM-DM's NADM audit did).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nearline.algorithms._base import Algorithm, Manifest
from nearline.algorithms._compare import difference
from nearline.algorithms._environment import WheelSource, create_environment, log_tail
from nearline.algorithms._manifest import parameters_with_defaults
from nearline.algorithms._packages import PackageLimits
from nearline.algorithms._runner import (
    command_line,
    describe,
    limits_for,
    run_algorithm,
    sandbox_env,
    system_mounts,
)
from nearline.algorithms._sandbox import Mount, run_sandboxed
from nearline.errors import DeployError
from nearline.units import parse_size

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class DeploySettings:
    """How deploys are done: package size limits and where requirements' wheels come from.

    Parameters
    ----------
    limits
        How large a package may be.
    wheels
        Where requirements' wheels come from.
    """

    limits: PackageLimits = field(default_factory=PackageLimits)
    wheels: WheelSource = field(default_factory=WheelSource)

    @classmethod
    def resolve(
        cls,
        *,
        wheels: str | Path | None = None,
        index_url: str | None = None,
        max_upload: str | int | None = None,
    ) -> DeploySettings:
        """Settings from arguments first, then the environment, then defaults.

        Parameters
        ----------
        wheels
            A folder of wheels, the only source then (else ``NEARLINE_WHEELS``).
        index_url
            A package index (else ``NEARLINE_INDEX_URL``; neither: PyPI).
        max_upload
            The largest package upload, bytes or a size such as ``"1GiB"`` (else
            ``NEARLINE_MAX_UPLOAD``).

        Raises
        ------
        ConfigError
            A size that does not parse, or a wheels folder that is not one.
        """
        upload = max_upload or os.environ.get("NEARLINE_MAX_UPLOAD")
        limits = PackageLimits()
        if upload is not None:
            size = parse_size(upload, what="max_upload")
            limits = PackageLimits(max_upload=size, max_total=max(limits.max_total, size))
        return cls(limits=limits, wheels=WheelSource.resolve(wheels=wheels, index_url=index_url))


def install(manifest: Manifest, version_folder: Path, *, settings: DeploySettings) -> Path:
    """The python the algorithm runs with: its own environment when it has requirements,
    else nearline's interpreter."""
    if not manifest.requirements:
        return Path(sys.executable)
    return create_environment(
        version_folder / "env",
        manifest.requirements,
        source=settings.wheels,
        log_file=version_folder / "install.log",
    )


def build(manifest: Manifest, package: Path, python: Path, *, version_folder: Path) -> None:
    """Run the manifest's ``build`` in the sandbox, the package folder writable (this once)."""
    if manifest.build is None:
        return
    work = version_folder / "build"
    (work / "tmp").mkdir(parents=True, exist_ok=True)
    log = version_folder / "build.log"
    limits = limits_for(manifest.resources)
    env = sandbox_env(python, home=work, cpus=limits.cpus, memory=limits.memory)
    env["NEARLINE_PACKAGE"] = str(package)
    command = command_line(manifest.build, package=package, python=python)
    outcome = run_sandboxed(
        command,
        folder=package,
        mounts=[*system_mounts(python), Mount(work, writable=True)],
        env=env,
        limits=limits,
        log=log,
    )
    if not outcome.ok:
        raise DeployError(
            f"build {' '.join(manifest.build)} failed ({describe(outcome)}); the build log "
            f"ends:\n{log_tail(log)}"
        )


def run_tests(algorithm: Algorithm, *, version_folder: Path, progress: Progress | None) -> None:
    """Run every declared test case as a real run and compare its outputs."""
    manifest = algorithm.manifest
    collections = {spec.name: spec.collection for spec in manifest.inputs}
    for index, case in enumerate(manifest.tests):
        if progress is not None:
            progress("test", index, len(manifest.tests))
        name = f"test case {index + 1}"
        folder = version_folder / "tests" / str(index + 1)
        inputs = {
            input_name: [
                {"path": str(algorithm.package / path),
                 "item": stand_in_item(path, collection=collections[input_name])}
                for path in paths
            ]
            for input_name, paths in case.inputs.items()
        }  # fmt: skip
        result = run_algorithm(
            algorithm,
            job_id=f"test-{index + 1}",
            inputs=inputs,
            parameters=parameters_with_defaults(manifest.parameters, case.parameters),
            folder=folder,
            log=version_folder / "tests" / f"{index + 1}.log",
        )
        if not result.outcome.ok:
            raise DeployError(
                f"{name} failed ({describe(result.outcome)}); its log ends:\n"
                + log_tail(result.log)
            )
        left = sorted(p.relative_to(result.outputs_folder).as_posix() for p in result.output_files)
        for output, expected in case.expect.items():
            got = result.outputs_folder / output
            if output not in left:
                raise DeployError(
                    f"{name}: the run left no output {output!r} (it left: "
                    f"{', '.join(left) or 'nothing'})"
                )
            problem = difference(got, algorithm.package / expected)
            if problem is not None:
                raise DeployError(f"{name}: output {output} {problem} ({expected})")
    if progress is not None:
        progress("test", len(manifest.tests), len(manifest.tests))


def stand_in_item(path: str, *, collection: str) -> dict[str, Any]:
    """The STAC item a test input comes with: an id, a collection, no time or place."""
    stem = Path(path).name
    return {
        "type": "Feature",
        "stac_version": "1.1.0",
        "id": stem,
        "collection": collection,
        "geometry": None,
        "properties": {"datetime": None},
        "assets": {"data": {"href": path, "roles": ["data"]}},
        "links": [],
    }


def hide_paths(text: str, folders: Mapping[Path, str]) -> str:
    """``text`` with the service's own folders named instead of shown (messages go to users)."""
    for folder, name in sorted(folders.items(), key=lambda pair: -len(str(pair[0]))):
        text = text.replace(str(folder), name)
    return text
