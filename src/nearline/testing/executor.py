"""Conformance tests every :class:`~nearline.orders.Executor` should pass.

Subclass :class:`ExecutorTests` in a pytest module as ``class TestMyExecutor(ExecutorTests)``
and supply :meth:`~ExecutorTests.make_executor`, or override the ``executor`` fixture to share
one executor (and its cluster) between tests. The runs are of a tiny real algorithm package,
deployed through :class:`~nearline.algorithms.AlgorithmRegistry` into a folder the executor's
machines share with this process; the tests look for a run's processes on this machine, so
the executor's workers must run here too (a local cluster). Needs pytest (the ``dev`` extra);
nothing in nearline imports this module.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from nearline.algorithms import (
    Algorithm,
    AlgorithmRegistry,
    DeploySettings,
    Limits,
    RunResult,
    isolation,
)
from nearline.orders import Executor, RunTask

MiB = 1024**2

# one program, told what to do by its "mode" parameter
PROGRAM = """\
import json, os, pathlib, socket, subprocess, sys, time
job = json.loads(pathlib.Path(os.environ["NEARLINE_JOB"]).read_text())
p = job["parameters"]
out = pathlib.Path(job["outputs"])
mode = p["mode"]
if mode == "copy":
    text = "".join(pathlib.Path(e["path"]).read_text() for e in job["inputs"]["text"])
    (out / "copy.txt").write_text(text * p["times"])
    print("copied", len(text), "characters", flush=True)
elif mode == "fail":
    print("failing on purpose", flush=True)
    sys.exit(p["code"])
elif mode == "memory":
    hog = b"x" * (p["mib"] * 2**20)
    time.sleep(5)
elif mode == "sleep":
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    start = time.time()
    print("sleeping", flush=True)
    time.sleep(p["seconds"])
    child.kill()
    (out / "slept.json").write_text(json.dumps({"start": start, "end": time.time()}))
elif mode == "probe":
    try:
        socket.create_connection(("127.0.0.1", p["port"]), timeout=2).close()
        network = True
    except OSError:
        network = False
    seen = {"uid": os.getuid(), "network": network, "service": os.path.exists(p["secret"])}
    (out / "probe.json").write_text(json.dumps(seen))
"""

MANIFEST = {
    "id": "executor-probe",
    "version": "1.0",
    "title": "Executor probe",
    "description": "Copies, fails, sleeps or hogs memory, as its parameters say.",
    "command": ["python", "probe.py"],
    "inputs": [{"name": "text", "collection": "executor-texts", "min": 1, "max": 4}],
    "outputs": [{"name": "result", "media_type": "text/plain", "pattern": "*"}],
    "parameters": {"type": "object", "properties": {"mode": {"type": "string"}}},
    "resources": {"cpus": 1, "memory": "256MiB", "timeout": "1m"},
}

LIMITS = Limits(cpus=1, memory=256 * MiB, wall_seconds=60)


def deploy_probe(folder: Path) -> Algorithm:
    """The probe package, written under ``folder`` and deployed (as alice's) into
    ``folder/data``."""
    package = folder / "package"
    package.mkdir(parents=True)
    (package / "algorithm.yaml").write_text(yaml.safe_dump(MANIFEST, sort_keys=False))
    (package / "probe.py").write_text(PROGRAM)
    with AlgorithmRegistry(folder / "data", settings=DeploySettings()) as registry:
        return registry.deploy(package, owner="alice")


def run_processes(task: RunTask) -> list[psutil.Process]:
    """The processes of ``task``'s run on this machine (the sandbox's wrapper included): the
    ones whose environment names the run's job file."""
    job = str(task.folder / "job.json")
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("NEARLINE_JOB") == job:
                found.append(process)
        except (psutil.Error, OSError):
            continue
    return found


def wait_for(condition: Any, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(0.05)


class ExecutorTests:
    """Generic tests of the :class:`~nearline.orders.Executor` contract."""

    def make_executor(self) -> Executor:
        raise NotImplementedError

    @pytest.fixture
    def executor(self) -> Iterator[Executor]:
        executor = self.make_executor()
        try:
            yield executor
        finally:
            executor.close()

    @pytest.fixture(scope="class")
    @classmethod
    def algorithm(cls, tmp_path_factory: pytest.TempPathFactory) -> Algorithm:
        return deploy_probe(tmp_path_factory.mktemp("executor-probe"))

    # -- helpers ----------------------------------------------------------------------------
    @staticmethod
    def task(
        algorithm: Algorithm,
        folder: Path,
        *,
        limits: Limits = LIMITS,
        texts: tuple[str, ...] = ("hello\n",),
        name: str = "run",
        **parameters: Any,
    ) -> RunTask:
        """A run of the probe in ``folder/name`` on input files holding ``texts``."""
        inputs = folder / f"{name}-inputs"
        inputs.mkdir(parents=True)
        staged: Mapping[str, list[dict[str, Any]]] = {"text": []}
        for index, text in enumerate(texts):
            path = inputs / f"{index}.txt"
            path.write_text(text)
            staged["text"].append({"path": str(path), "item": {"id": f"text-{index}"}})
        return RunTask(
            run=f"{name}-{uuid.uuid4().hex[:8]}",
            algorithm=algorithm,
            job="job-1",
            inputs=staged,
            parameters=parameters,
            folder=folder / name,
            limits=limits,
            log=folder / f"{name}.log",
        )

    @staticmethod
    def started(task: RunTask, word: str = "sleeping") -> bool:
        return task.log.exists() and word in task.log.read_text()

    # -- the contract -----------------------------------------------------------------------
    def test_a_runs_outputs_come_back(self, executor, algorithm, tmp_path):
        task = self.task(algorithm, tmp_path, mode="copy", times=2, texts=("ab\n", "cd\n"))
        result = executor.run(task, cancel=threading.Event())
        assert isinstance(result, RunResult)
        assert result.outcome.ok, result.outcome
        assert result.outcome.exit_code == 0
        assert result.outputs_folder == task.folder / "outputs"
        assert result.output_files == (task.folder / "outputs" / "copy.txt",)
        assert result.output_files[0].read_text() == "ab\ncd\n" * 2
        assert result.outcome.usage.wall_seconds > 0
        assert result.outcome.usage.cpu_seconds > 0
        assert result.log == task.log
        assert "copied 6 characters" in task.log.read_text()
        assert executor.retries(task.run) == 0

    def test_a_failing_command_says_its_exit_code(self, executor, algorithm, tmp_path):
        task = self.task(algorithm, tmp_path, mode="fail", code=3)
        result = executor.run(task, cancel=threading.Event())
        assert not result.outcome.ok
        assert (result.outcome.exit_code, result.outcome.reason) == (3, None)
        assert result.output_files == ()
        assert "failing on purpose" in task.log.read_text()

    def test_a_memory_hog_is_stopped_by_its_limit(self, executor, algorithm, tmp_path):
        limits = Limits(cpus=1, memory=64 * MiB, wall_seconds=60)
        task = self.task(algorithm, tmp_path, limits=limits, mode="memory", mib=256)
        result = executor.run(task, cancel=threading.Event())
        assert result.outcome.reason == "memory limit of 64 MiB exceeded", result.outcome
        assert result.outcome.exit_code is None
        assert result.output_files == ()

    def test_a_run_past_its_wall_clock_is_stopped(self, executor, algorithm, tmp_path):
        limits = Limits(cpus=1, memory=256 * MiB, wall_seconds=1)
        task = self.task(algorithm, tmp_path, limits=limits, mode="sleep", seconds=60)
        began = time.monotonic()
        result = executor.run(task, cancel=threading.Event())
        assert result.outcome.reason == "wall-clock limit of 1 s", result.outcome
        assert time.monotonic() - began < 15
        assert run_processes(task) == []

    def test_cancel_stops_a_long_run_and_leaves_no_process(self, executor, algorithm, tmp_path):
        task = self.task(algorithm, tmp_path, mode="sleep", seconds=120)
        cancel = threading.Event()
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(executor.run, task, cancel=cancel)
            wait_for(lambda: self.started(task), timeout=60, what="the run starting")
            assert len(run_processes(task)) >= 2  # the program and its child, at least
            cancel.set()
            began = time.monotonic()
            result = running.result(timeout=30)
        assert time.monotonic() - began < 5
        assert result.outcome.reason == "cancelled"
        assert not result.outcome.ok
        assert result.output_files == ()
        assert run_processes(task) == []

    def test_a_run_cancelled_before_it_starts_ends_at_once(self, executor, algorithm, tmp_path):
        task = self.task(algorithm, tmp_path, mode="sleep", seconds=120)
        cancel = threading.Event()
        cancel.set()
        began = time.monotonic()
        result = executor.run(task, cancel=cancel)
        assert time.monotonic() - began < 5
        assert result.outcome.reason == "cancelled"
        assert run_processes(task) == []

    def test_two_runs_at_once_both_finish(self, executor, algorithm, tmp_path):
        tasks = [
            self.task(algorithm, tmp_path, name=name, mode="sleep", seconds=1.5)
            for name in ("first", "second")
        ]
        with ThreadPoolExecutor(2) as pool:
            running = [pool.submit(executor.run, task, cancel=threading.Event()) for task in tasks]
            results = [future.result(timeout=60) for future in running]
        spans = []
        for task, result in zip(tasks, results, strict=True):
            assert result.outcome.ok, result.outcome
            (path,) = result.output_files
            assert path == task.folder / "outputs" / "slept.json"
            slept = json.loads(path.read_text())
            spans.append((slept["start"], slept["end"]))
        (start_a, end_a), (start_b, end_b) = spans
        assert start_a < end_b, "the two runs did not overlap"
        assert start_b < end_a, "the two runs did not overlap"

    def test_the_sandbox_holds_where_the_run_runs(self, executor, algorithm, tmp_path):
        level = isolation()
        secret = tmp_path / "service-only" / "secret.txt"
        secret.parent.mkdir()
        secret.write_text("not for runs")
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            port = listener.getsockname()[1]
            task = self.task(algorithm, tmp_path, mode="probe", port=port, secret=str(secret))
            result = executor.run(task, cancel=threading.Event())
        assert result.outcome.ok, result.outcome
        seen = json.loads(result.output_files[0].read_text())
        if level.namespaces != "none":
            assert seen["network"] is False  # its own network namespace
            assert seen["uid"] == 65534  # nobody
        if level.namespaces == "bwrap":
            assert seen["service"] is False  # a private file system
