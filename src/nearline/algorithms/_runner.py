"""Running a deployed algorithm on staged files, in its sandbox: the one way a run, a
deploy's test case and (with :func:`sandbox_env`) a build are run.

A run's folder holds ``job.json``, ``outputs/`` and ``tmp/``; the command runs there with
``NEARLINE_JOB`` naming ``job.json``. It sees, read-only: the package folder, its Python
environment, nearline's own environment and source, and each staged input file; it may write
to its folder only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nearline.algorithms._base import JOB_VARIABLE, Algorithm, Resources
from nearline.algorithms._cpu_gate import Turn
from nearline.algorithms._disk_pool import DiskPool
from nearline.algorithms._kernels import kernel_links
from nearline.algorithms._sandbox import Limits, Mount, Outcome, run_sandboxed
from nearline.algorithms._stages import StageClock

JOB_FILE = "job.json"
JOB_TEXT = "job.txt"
JOB_TEXT_VARIABLE = "NEARLINE_JOB_TEXT"
PYTHON_WORDS = ("python", "python3")
SOURCE = Path(__file__).resolve().parents[2]  # the folder holding the nearline package


@dataclass(frozen=True)
class RunResult:
    """How a run ended and the files it left.

    Parameters
    ----------
    outcome
        How the run ended, and what it used.
    outputs_folder
        The run's outputs folder.
    output_files
        The regular files it left there (none unless the run succeeded).
    log
        The file holding its output and error streams.
    stages
        Wall and CPU seconds of each stage of the run where it ran: ``job files``, then the
        sandbox's (:func:`~nearline.algorithms.run_sandboxed`'s ``clock``).
    """

    outcome: Outcome
    outputs_folder: Path
    output_files: tuple[Path, ...]
    log: Path
    stages: Mapping[str, tuple[float, float]] = field(default_factory=dict)


def limits_for(resources: Resources) -> Limits:
    """The sandbox limits a manifest's resources ask for.

    Parameters
    ----------
    resources
        The manifest's ``resources``.

    Returns
    -------
    Limits
        CPUs, memory, wall-clock time and disk as declared; the rest at their defaults.
    """
    return Limits(
        cpus=resources.cpus,
        memory=resources.memory,
        wall_seconds=resources.timeout,
        disk=resources.disk,
    )


def prepare_job(
    folder: Path,
    *,
    job_id: str,
    inputs: Mapping[str, Sequence[Mapping[str, Any]]],
    parameters: Mapping[str, Any],
) -> Path:
    """Write a run's ``job.json`` and make its empty ``outputs/`` and ``tmp/`` folders.

    A run started again starts clean: what an earlier attempt left in them goes.

    Parameters
    ----------
    folder
        The run's working folder (created if missing).
    job_id
        The job's id, as ``job.json`` gives it.
    inputs
        The staged files: ``{NAME: [{"path": FILE, "item": STAC_ITEM}, ...]}``.
    parameters
        The parameters object, defaults applied.

    Returns
    -------
    pathlib.Path
        The ``job.json`` (a tab-separated ``job.txt`` beside it serves C and Fortran).
    """
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("outputs", "tmp"):
        if (folder / name).exists():
            shutil.rmtree(folder / name)
        (folder / name).mkdir()
    staged = {
        name: [{"path": str(Path(entry["path"]).absolute()), "item": dict(entry.get("item") or {})}
               for entry in entries]
        for name, entries in inputs.items()
    }  # fmt: skip
    job = {
        "job": job_id,
        "inputs": staged,
        "parameters": dict(parameters),
        "outputs": str((folder / "outputs").absolute()),
    }
    _write(folder / JOB_TEXT, job_text(job))
    path = folder / JOB_FILE
    _write(path, json.dumps(job, indent=1))
    return path


def job_text(job: Mapping[str, Any]) -> str:
    """job.json as lines of tab-separated words, for programs without a JSON parser (C,
    Fortran): ``outputs PATH``, ``input NAME PATH`` per file, ``parameter NAME VALUE`` (text
    as it is, anything else as JSON). A backslash, tab or newline in a word is written as
    ``\\``, ``\\t`` or ``\\n``."""
    lines = [("job", job["job"]), ("outputs", job["outputs"])]
    for name, entries in job["inputs"].items():
        lines += [("input", name, entry["path"]) for entry in entries]
    for name, value in job["parameters"].items():
        text = value if isinstance(value, str) else json.dumps(value)
        lines.append(("parameter", name, text))
    return "".join("\t".join(map(_escape, words)) + "\n" for words in lines)


def _escape(word: str) -> str:
    return str(word).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def _write(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text)
    os.replace(partial, path)


def run_algorithm(
    algorithm: Algorithm,
    *,
    job_id: str,
    inputs: Mapping[str, Sequence[Mapping[str, Any]]],
    parameters: Mapping[str, Any],
    folder: Path,
    limits: Limits | None = None,
    cancel: threading.Event | None = None,
    log: Path | None = None,
    turn: Callable[[], Turn | None] | None = None,
    disks: DiskPool | None = None,
) -> RunResult:
    """Run a deployed algorithm on staged inputs, in the sandbox: the one way one runs.

    A run that fails, or leaves a link or special file among its outputs, is an unsuccessful
    outcome, not an exception.

    Parameters
    ----------
    algorithm
        The deployed version to run.
    job_id
        The job's id.
    inputs
        The staged files, as for [`prepare_job`][nearline.algorithms.prepare_job].
    parameters
        The parameters object.
    folder
        The run's working folder.
    limits
        What the run is held to (default: what its manifest's resources ask for).
    cancel
        Setting it stops the run.
    log
        Where its output and error streams go (default ``folder/run.log``).
    turn
        Waits, once the run's sandbox is made, for its turn at the CPUs' gate (None: it
        starts at once); as for [`run_sandboxed`][nearline.algorithms.run_sandboxed].
    disks
        Run disks kept for reuse, as for [`run_sandboxed`][nearline.algorithms.run_sandboxed].

    Returns
    -------
    RunResult
        How it ended, what it used, and its output files.

    Raises
    ------
    SandboxError
        The command could not be started at all.
    """
    folder = folder.absolute()
    limits = limits or limits_for(algorithm.manifest.resources)
    clock = StageClock()
    with clock.stage("job files"):
        job = prepare_job(folder, job_id=job_id, inputs=inputs, parameters=parameters)
        log = log or folder / "run.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        files = [Path(e["path"]).absolute() for entries in inputs.values() for e in entries]
        mounts = [
            *system_mounts(algorithm.python),
            Mount(algorithm.package),
            *(Mount(path) for path in dict.fromkeys(files) if not path.is_relative_to(folder)),
        ]
        env = sandbox_env(algorithm.python, home=folder, cpus=limits.cpus, memory=limits.memory)
        env.update({
            JOB_VARIABLE: str(job),
            JOB_TEXT_VARIABLE: str(folder / JOB_TEXT),
            "NEARLINE_PACKAGE": str(algorithm.package),
        })  # fmt: skip
    outcome = run_sandboxed(
        command_line(
            algorithm.manifest.command, package=algorithm.package, python=algorithm.python
        ),
        folder=folder,
        mounts=mounts,
        env=env,
        limits=limits,
        log=log,
        cancel=cancel,
        keep=("outputs",),
        clock=clock,
        turn=turn,
        furnish={"tmp/numba": kernel_links()},  # links to nearline's kernels, made once
        disks=disks,
    )
    outputs = folder / "outputs"
    with clock.stage("teardown"):
        found, problem = output_files(outputs)
    if problem is not None and outcome.ok:
        outcome = dataclasses.replace(outcome, reason=problem)
    return RunResult(outcome, outputs, found if outcome.ok else (), log, dict(clock.stages))


def command_line(command: Sequence[str], *, package: Path, python: Path) -> list[str]:
    """The argv to run: ``python`` is the algorithm's interpreter, and each word naming a
    file of the package becomes that file's absolute path (the run's folder is elsewhere)."""
    argv = []
    for index, word in enumerate(command):
        if index == 0 and word in PYTHON_WORDS:
            argv.append(str(python))
        elif not word.startswith("-") and not os.path.isabs(word) and _in_package(package, word):
            argv.append(str(package / word))
        else:
            argv.append(word)
    return argv


def _in_package(package: Path, word: str) -> bool:
    path = package / word
    try:
        return path.is_file() and path.resolve().is_relative_to(package.resolve())
    except (OSError, ValueError):
        return False


def system_mounts(python: Path) -> list[Mount]:
    """What every sandboxed command of an algorithm needs to see, read-only: nearline's
    interpreter, environment and source, and the algorithm's own environment."""
    paths = [Path(sys.base_prefix), Path(sys.prefix), SOURCE]
    environment = python.parent.parent
    if environment != Path(sys.prefix):
        paths.append(environment)
    unique: list[Path] = []
    for path in paths:
        if not any(path.is_relative_to(seen) for seen in unique):
            unique.append(path)
    return [Mount(path) for path in unique]


def sandbox_env(python: Path, *, home: Path, cpus: float, memory: int) -> dict[str, str]:
    """The environment a sandboxed command starts with: nothing of the service's own."""
    threads = str(max(1, int(cpus)))
    return {
        "PATH": f"{python.parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLCONFIGDIR": str(home / "tmp"),
        "NUMBA_CACHE_DIR": str(home / "tmp" / "numba"),
        "OMP_NUM_THREADS": threads,
        "OPENBLAS_NUM_THREADS": threads,
        "NEARLINE_CPUS": f"{cpus:g}",
        "NEARLINE_MEMORY": str(memory),
    }


def output_files(outputs: Path) -> tuple[tuple[Path, ...], str | None]:
    """The regular files under ``outputs``, and why the outputs are unusable if they are (a
    symbolic link or a special file would let a run hand the service something not its own)."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(outputs):
        for name in sorted(files) + sorted(subfolders):
            path = Path(folder) / name
            mode = path.lstat().st_mode
            shown = path.relative_to(outputs).as_posix()
            if stat.S_ISLNK(mode):
                return (), f"the run left a symbolic link among its outputs ({shown})"
            if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
                return (), f"the run left a special file among its outputs ({shown})"
            if stat.S_ISREG(mode):
                found.append(path)
    return tuple(sorted(found)), None


def describe(outcome: Outcome) -> str:
    """How a command ended, in words."""
    if outcome.reason is not None:
        return f"stopped: {outcome.reason}"
    if outcome.exit_code is None:
        return "killed by a signal"
    return f"exit code {outcome.exit_code}"
