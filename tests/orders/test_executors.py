"""The executors: local processes and a real Dask cluster (a LocalCluster of 2 worker
processes) pass the shared conformance suite; then what only a cluster shows: a worker killed
mid-run, once and twice, and a scheduler that gives up on the task first."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from distributed import Client, LocalCluster

from nearline.algorithms import Algorithm
from nearline.errors import ConfigError, NearlineError
from nearline.orders import LocalExecutor, open_executor
from nearline.orders._dask_executor import LOST_TWICE, DaskExecutor, scheduler_address
from nearline.testing.executor import ExecutorTests, deploy_probe, run_processes, wait_for

from ..dask_cluster import local_cluster


class TestLocalExecutor(ExecutorTests):
    def make_executor(self) -> LocalExecutor:
        return LocalExecutor()


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with local_cluster() as started:
        yield started


@pytest.fixture(scope="module")
def dask_executor(cluster: LocalCluster) -> Iterator[DaskExecutor]:
    executor = open_executor(f"dask://{cluster.scheduler_address.removeprefix('tcp://')}")
    assert isinstance(executor, DaskExecutor)
    try:
        yield executor
    finally:
        executor.close()


@pytest.fixture
def client(dask_executor: DaskExecutor) -> Client:
    """The executor's client, once both workers answer (a killed one is restarted)."""
    dask_executor.client.wait_for_workers(2, timeout=60)
    return dask_executor.client


class TestDaskExecutor(ExecutorTests):
    @pytest.fixture
    def executor(self, dask_executor: DaskExecutor, client: Client) -> DaskExecutor:
        return dask_executor


def kill_worker_running(client: Client, run: str) -> str:
    """SIGKILL the worker process running ``run``; its address."""
    for address, keys in client.processing().items():
        if any(run in str(key) for key in keys):
            pid = client.run(os.getpid, workers=[address])[address]
            os.kill(pid, signal.SIGKILL)
            return address
    raise AssertionError(f"no worker is running {run}: {client.processing()}")


def starts(task) -> int:
    return task.log.read_text().count("sleeping") if task.log.exists() else 0


def test_the_spec_names_a_scheduler():
    assert scheduler_address("dask://10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    assert scheduler_address("dask://scheduler") == "tcp://scheduler:8786"
    for bad in ("dask://", "dask://host:port", "dask://host:8786/path", "tcp://host:8786"):
        with pytest.raises(ConfigError, match="expected dask://HOST:PORT"):
            scheduler_address(bad)


def test_a_scheduler_that_does_not_answer_is_a_config_error_naming_it():
    began = time.monotonic()
    with pytest.raises(ConfigError, match=r"no Dask scheduler answered at tcp://127\.0\.0\.1:9"):
        DaskExecutor("dask://127.0.0.1:9", timeout=1)
    assert time.monotonic() - began < 10


def test_it_describes_the_cluster(dask_executor, client):
    assert dask_executor.describe() == (
        f"dask://{client.scheduler.address.removeprefix('tcp://')} (2 workers)"
    )


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Algorithm:
    return deploy_probe(tmp_path_factory.mktemp("probe"))


def test_closing_the_executor_stops_its_runs_on_the_workers(cluster, client, probe, tmp_path):
    """As a local run dies with its service, a run on a worker stops when the service's
    client goes away (closed, or the service killed)."""
    task = ExecutorTests.task(probe, tmp_path, mode="sleep", seconds=120)
    executor = DaskExecutor(f"dask://{cluster.scheduler_address.removeprefix('tcp://')}")
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(executor.run, task, cancel=threading.Event())
        wait_for(lambda: starts(task) == 1, timeout=60, what="the run starting")
        executor.close()
        wait_for(lambda: run_processes(task) == [], timeout=5, what="the run's processes ending")
        with pytest.raises(NearlineError, match="closed"):
            running.result(timeout=30)


class LateCallers:
    """The client's event loop, with a run's thread held up on purpose where load can hold
    it: inside distributed's ``sync``, past its check that the loop is open and before its
    coroutine is queued. Such a late call waits there until the loop has closed, and closing
    the loop waits (at most ``patience`` seconds) for one to arrive, so a call to the
    scheduler made after closing began always lands on a closed loop, whatever the load."""

    def __init__(self, executor: DaskExecutor, *, runs: str, patience: float = 5.0) -> None:
        self.client = executor.client
        self.loop = executor.client.loop
        self.runs = runs  # the name prefix of the threads that call executor.run
        self.patience = patience
        self.arrived = threading.Event()
        self._add = self.loop.add_callback

    def __enter__(self) -> LateCallers:
        self.loop.add_callback = self._add_callback
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.add_callback = self._add

    def _add_callback(self, callback, *args, **kwargs) -> None:
        late = self.client.status != "running"
        main = threading.current_thread() is threading.main_thread()  # the one closing
        synced = getattr(callback, "__qualname__", "").startswith("sync.")
        if late and synced and threading.current_thread().name.startswith(self.runs):
            self.arrived.set()  # a run's thread calls the scheduler while the client closes
            deadline = time.monotonic() + 30
            while not self.loop.asyncio_loop.is_closed() and time.monotonic() < deadline:
                time.sleep(0.01)
        elif self.client.status == "closed" and main:
            self.arrived.wait(self.patience)  # stopping the loop: after any late call
        self._add(callback, *args, **kwargs)


def test_a_run_calling_the_scheduler_as_the_executor_closes_is_not_left_waiting(
    cluster, probe, tmp_path
):
    """Closing never leaves executor.run waiting for ever, however late its thread calls the
    scheduler (under load it called while the client's loop stopped, and waited for ever)."""
    task = ExecutorTests.task(probe, tmp_path, mode="sleep", seconds=120)
    executor = DaskExecutor(f"dask://{cluster.scheduler_address.removeprefix('tcp://')}")
    ended: list[BaseException | object] = []

    def run() -> None:
        try:
            ended.append(executor.run(task, cancel=threading.Event()))
        except BaseException as error:  # what the test looks at
            ended.append(error)

    # a daemon thread: a run left waiting for ever must fail the test, not hang pytest's exit
    thread = threading.Thread(target=run, name="late-run", daemon=True)
    thread.start()
    wait_for(lambda: starts(task) == 1, timeout=60, what="the run starting")
    with LateCallers(executor, runs="late-run"):
        executor.close()
        thread.join(timeout=30)
    assert not thread.is_alive(), "executor.run still waits 30 s after the executor closed"
    (error,) = ended
    assert isinstance(error, NearlineError), error
    assert "the executor was closed while run" in str(error)
    wait_for(lambda: run_processes(task) == [], timeout=10, what="the run's processes ending")


def test_a_worker_killed_mid_run_is_replaced_once_and_the_run_succeeds(
    dask_executor, client, probe, tmp_path
):
    task = ExecutorTests.task(probe, tmp_path, mode="sleep", seconds=3)
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(dask_executor.run, task, cancel=threading.Event())
        wait_for(lambda: starts(task) == 1, timeout=60, what="the run starting")
        killed = kill_worker_running(client, task.run)
        result = running.result(timeout=120)
    assert result.outcome.ok, result.outcome
    assert dask_executor.retries(task.run) == 1
    (path,) = result.output_files
    assert path.name == "slept.json"
    log = task.log.read_text()
    assert starts(task) == 2
    assert "started again on tcp://" in log
    assert killed not in log.split("started again on ")[1]  # on the other worker
    assert run_processes(task) == []


def test_a_second_loss_fails_the_run_with_the_reason(dask_executor, client, probe, tmp_path):
    task = ExecutorTests.task(probe, tmp_path, mode="sleep", seconds=60)
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(dask_executor.run, task, cancel=threading.Event())
        wait_for(lambda: starts(task) == 1, timeout=60, what="the first start")
        kill_worker_running(client, task.run)
        wait_for(lambda: starts(task) == 2, timeout=60, what="the second start")
        kill_worker_running(client, task.run)
        result = running.result(timeout=120)
    assert result.outcome.reason == LOST_TWICE
    assert not result.outcome.ok
    assert result.output_files == ()
    assert dask_executor.retries(task.run) == 1
    assert f"nearline: the run was stopped: {LOST_TWICE}" in task.log.read_text()
    assert run_processes(task) == []


def test_a_scheduler_giving_up_first_is_submitted_again(dask_executor, client, probe, tmp_path):
    def allow(dask_scheduler, failures):
        previous, dask_scheduler.allowed_failures = dask_scheduler.allowed_failures, failures
        return previous

    previous = client.run_on_scheduler(allow, failures=0)  # KilledWorker at the first loss
    try:
        task = ExecutorTests.task(probe, tmp_path, mode="sleep", seconds=2)
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(dask_executor.run, task, cancel=threading.Event())
            wait_for(lambda: starts(task) == 1, timeout=60, what="the run starting")
            kill_worker_running(client, task.run)
            result = running.result(timeout=120)
    finally:
        client.run_on_scheduler(allow, failures=previous)
    assert result.outcome.ok, result.outcome
    assert dask_executor.retries(task.run) == 1
    assert starts(task) == 2
