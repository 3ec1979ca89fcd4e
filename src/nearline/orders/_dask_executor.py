"""Runs on a Dask cluster: ``nearline serve --executor dask://HOST:PORT``.

Only the sandboxed run crosses the wire: the pickled :class:`~nearline.orders.RunTask` goes to
a worker, which calls :func:`~nearline.orders.run_task` there (so the sandbox applies on that
machine), and the :class:`~nearline.algorithms.RunResult` comes back (an outcome, its usage and
paths). Every path names storage the service and the workers share; nearline must be installed
on the workers as on the service.

- **Cancel.** A :class:`threading.Event` cannot cross to a worker, so each run has a
  :class:`distributed.Event`, set when the service cancels; a thread beside the run on the
  worker turns it into the local event the sandbox watches, which kills the run's processes.
  The same thread stops the run when the scheduler no longer wants its result (the service
  closed or was killed), as a local run dies with its service.
- **A worker lost.** The scheduler starts the task again on another worker. A
  :class:`distributed.Variable` per run counts its starts; a run is started at most twice, so
  a third start is refused and the run fails: "the worker running it was lost twice". Should
  the scheduler give up first (its ``allowed-failures`` below 2: ``KilledWorker``), the run is
  submitted again here, within the same bound. :meth:`DaskExecutor.retries` says how many times
  it was started again.
- **Closing.** Every call that waits on the client's event loop (distributed's ``sync``) goes
  through :meth:`DaskExecutor._scheduler`: refused once :meth:`DaskExecutor.close` began, and
  ``close`` waits for the calls already in flight before it closes the client. A call that
  slipped in while the loop stopped would wait for ever: ``sync`` checks the loop is open, then
  queues its coroutine, and a loop that stops or closes in between never runs it (tornado
  drops a callback added to a closed loop without a word).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlparse

import distributed

from nearline.algorithms import Outcome, RunResult, cleanup_stale
from nearline.errors import ConfigError, NearlineError
from nearline.monitor import Usage
from nearline.orders._base import Executor, RunTask
from nearline.orders._executors import run_task

log = logging.getLogger(__name__)

DEFAULT_PORT = 8786
STARTS = 2  # a run starts once, and at most once more after losing its worker
LOST_TWICE = "the worker running it was lost twice"
POLL = 0.05  # how often a waiting station looks at its cancel event (seconds)
RELAY = 1.0  # how often the worker's relay thread checks its run is still wanted (seconds)
GRACE = 15.0  # how long a cancelled run's worker has to answer before it is given up
CALLS_END = 15.0  # how long closing waits for calls to the scheduler already in flight


def scheduler_address(spec: str) -> str:
    """``dask://HOST[:PORT]`` as the scheduler's address, ``tcp://HOST:PORT``."""
    url = urlparse(spec)
    try:
        port = url.port or DEFAULT_PORT
    except ValueError:
        port = None
    if url.scheme != "dask" or not url.hostname or port is None or url.path not in ("", "/"):
        raise ConfigError(
            f"executor {spec!r}: expected dask://HOST:PORT, the address of a Dask scheduler "
            f"(port {DEFAULT_PORT} if left out)"
        )
    return f"tcp://{url.hostname}:{port}"


@dataclass(frozen=True)
class _Names:
    """The names of one run's coordination objects on the scheduler: fresh for every call
    of :meth:`DaskExecutor.run`, so a run ordered again never meets an earlier one's."""

    key: str  # the task's key, naming the run
    cancel: str  # distributed.Event: set to stop the run
    starts: str  # distributed.Variable: how many times it started

    @classmethod
    def of(cls, run: str) -> _Names:
        token = uuid.uuid4().hex[:8]
        return cls(
            key=f"nearline-run-{run}-{token}",
            cancel=f"nearline-cancel-{run}-{token}",
            starts=f"nearline-starts-{run}-{token}",
        )


class _Closed(Exception):
    """A call to the scheduler refused: the executor is closing."""


@dataclass(frozen=True)
class _Refused:
    """What a worker answers for a run already started :data:`STARTS` times."""

    starts: int


class DaskExecutor(Executor):
    """Runs go to the workers of the Dask scheduler ``spec`` names (``dask://HOST:PORT``),
    one task each; connects at once and raises :class:`~nearline.errors.ConfigError` if the
    scheduler does not answer within ``timeout`` seconds."""

    name = "dask"

    def __init__(self, spec: str, *, timeout: float = 5.0) -> None:
        self.spec = spec
        self.address = scheduler_address(spec)
        try:
            self.client = distributed.Client(self.address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as error:
            raise ConfigError(
                f"executor {spec}: no Dask scheduler answered at {self.address} within "
                f"{timeout:g} s ({error}); start one there (`dask scheduler`, and `dask worker "
                f"{self.address}` on each machine) or give --executor another address"
            ) from None
        self._retries: dict[str, int] = {}  # runs started again, until run again
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._calls = threading.Condition()  # guards _in_flight; told when a call ends
        self._in_flight = 0  # calls into the client's event loop going on now
        log.info("runs go to %s", self.describe())

    # -- the contract -----------------------------------------------------------------------
    def run(self, task: RunTask, *, cancel: threading.Event) -> RunResult:
        names = _Names.of(task.run)
        starts = distributed.Variable(names.starts, client=self.client)
        stop = distributed.Event(names.cancel, client=self.client)
        with self._lock:
            self._retries.pop(task.run, None)
        try:
            with self._scheduler():
                starts.set(0)
            result = self._until_done(task, names, cancel=cancel, stop=stop, starts=starts)
        except (OSError, TimeoutError) as error:  # the connection to the scheduler failed
            raise NearlineError(
                f"the Dask scheduler at {self.address} stopped answering: {error}"
            ) from None
        except _Closed:
            raise NearlineError(
                f"the executor was closed while run {task.run} went on; its worker stops it"
            ) from None
        finally:
            started = self._started(starts)
            with contextlib.suppress(Exception), self._scheduler():  # the scheduler forgets both
                starts.delete()
                stop.clear()
        if started > 1:
            log.warning(
                "run %s was started again on another worker: the one running it was lost",
                task.run,
            )
            with self._lock:
                self._retries[task.run] = min(started, STARTS) - 1  # a refused start is none
            self._clean_lost_groups()
        return result

    def retries(self, run: str) -> int:
        with self._lock:
            return self._retries.get(run, 0)

    def describe(self) -> str:
        try:
            with self._scheduler():
                workers = len(self.client.nthreads())
        except Exception as error:  # a description must not fail (closed included)
            return f"dask://{self.address.removeprefix('tcp://')} (not answering: {error})"
        plural = "" if workers == 1 else "s"
        return f"dask://{self.address.removeprefix('tcp://')} ({workers} worker{plural})"

    def close(self) -> None:
        """Close the client: the scheduler forgets its runs, and a worker still running one
        stops it within about a second. Calls to the scheduler already in flight end first;
        none starts after (see the module's "Closing")."""
        with self._calls:
            self._closed.set()
            if not self._calls.wait_for(lambda: self._in_flight == 0, timeout=CALLS_END):
                log.warning("closing with %d calls to the scheduler unanswered", self._in_flight)
        self.client.close()

    @contextlib.contextmanager
    def _scheduler(self) -> Iterator[None]:
        """Around every call that waits on the client's event loop: raises :class:`_Closed`
        once closing began; closing waits until the calls let through have ended."""
        with self._calls:
            if self._closed.is_set():
                raise _Closed
            self._in_flight += 1
        try:
            yield
        finally:
            with self._calls:
                self._in_flight -= 1
                self._calls.notify_all()

    # -- waiting ----------------------------------------------------------------------------
    def _until_done(
        self,
        task: RunTask,
        names: _Names,
        *,
        cancel: threading.Event,
        stop: distributed.Event,
        starts: distributed.Variable,
    ) -> RunResult:
        resubmitted = 0
        while True:
            key = names.key if not resubmitted else f"{names.key}-again{resubmitted}"
            with self._scheduler():
                future = self.client.submit(_on_worker, task, names, key=key, pure=False)
            try:
                answer = self._wait(future, task, cancel=cancel, stop=stop)
            except distributed.KilledWorker:  # the scheduler gave up on it before we did
                if self._started(starts) >= STARTS:
                    return _lost_twice(task)
                resubmitted += 1
                log.warning("run %s: its worker was lost; submitted again", task.run)
                continue
            except distributed.CancelledError:
                raise NearlineError(
                    f"the Dask scheduler at {self.address} dropped the run (restarted, or "
                    "the service's connection to it was closed)"
                ) from None
            finally:
                if not self._closed.is_set():  # a closed client forgot it already
                    future.release()
            if isinstance(answer, _Refused):
                return _lost_twice(task)
            return answer

    def _wait(
        self,
        future: distributed.Future,
        task: RunTask,
        *,
        cancel: threading.Event,
        stop: distributed.Event,
    ) -> RunResult | _Refused:
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        while not done.wait(POLL) and not self._closed.is_set():
            if cancel.is_set():
                return self._cancel(future, task, stop=stop, done=done)
        # closing cancels the future too: run() says why, not "cancelled"
        with self._scheduler():
            return future.result()

    def _cancel(
        self,
        future: distributed.Future,
        task: RunTask,
        *,
        stop: distributed.Event,
        done: threading.Event,
    ) -> RunResult | _Refused:
        """Tell the worker to stop the run and wait for its answer (its processes gone)."""
        try:
            with self._scheduler():
                stop.set()
        except _Closed:  # closing: the worker stops the run itself
            raise
        except Exception as error:  # the scheduler is gone: nothing runs
            log.warning("run %s: could not reach the scheduler to cancel it: %s", task.run, error)
        if done.wait(GRACE):
            with contextlib.suppress(Exception), self._scheduler():  # cancelled, whatever
                return future.result()  # else it became
        else:
            log.warning("run %s: no answer %g s after it was cancelled; given up", task.run, GRACE)
            with contextlib.suppress(_Closed), self._scheduler():
                self.client.cancel(future)
        return RunResult(
            Outcome(exit_code=None, reason="cancelled", usage=Usage()),
            task.folder / "outputs",
            (),
            task.log,
        )

    def _started(self, starts: distributed.Variable) -> int:
        try:
            with self._scheduler():
                return int(starts.get(timeout=5))
        except Exception:  # not counted (or closing): at least the first start
            return 1

    def _clean_lost_groups(self) -> None:
        """Remove the cgroups a lost worker's run left on its machine (its processes died
        with it); groups of workers still running are left alone."""
        try:
            with self._scheduler():
                self.client.run(cleanup_stale)
        except _Closed:  # the next service's start cleans up
            return
        except Exception as error:  # best effort: empty groups, no process in them
            log.warning("could not clean up after a lost worker: %s", error)


def _lost_twice(task: RunTask) -> RunResult:
    with contextlib.suppress(OSError), open(task.log, "a") as text:
        text.write(f"\nnearline: the run was stopped: {LOST_TWICE}\n")
    return RunResult(
        Outcome(exit_code=None, reason=LOST_TWICE, usage=Usage()),
        task.folder / "outputs",
        (),
        task.log,
    )


# -- on the worker ----------------------------------------------------------------------------
def _on_worker(task: RunTask, names: _Names) -> RunResult | _Refused:
    """The task a worker runs: count the start, relay cancellation, run in the sandbox."""
    worker = distributed.get_worker()
    client = distributed.get_client()
    starts = distributed.Variable(names.starts, client=client)
    started = int(starts.get(timeout=30)) + 1
    starts.set(started)
    if started > STARTS:
        return _Refused(started)
    if started > 1:
        with contextlib.suppress(OSError), open(task.log, "a") as text:
            text.write(
                f"\nnearline: started again on {worker.address}: the worker running it was lost\n"
            )
    cancel = threading.Event()
    finished = threading.Event()
    relay = threading.Thread(
        target=_relay,
        args=(distributed.Event(names.cancel, client=client), cancel, finished, worker),
        kwargs={"key": worker.get_current_task()},
        name=f"nearline-cancel-{task.run}",
        daemon=True,
    )
    relay.start()
    try:
        return run_task(task, cancel=cancel)
    finally:
        finished.set()


def _relay(
    stop: distributed.Event,
    cancel: threading.Event,
    finished: threading.Event,
    worker: distributed.Worker,
    *,
    key: str,
) -> None:
    """Beside a run on its worker: set ``cancel`` when ``stop`` is set on the scheduler, or
    when the scheduler no longer wants the run's result; return once ``finished``."""
    while not finished.is_set():
        try:
            if stop.wait(timeout=RELAY):
                cancel.set()
                return
        except Exception as error:  # the scheduler is away: keep watching
            log.debug("%s: cannot ask the scheduler: %s", key, error)
            finished.wait(RELAY)
        if not finished.is_set() and not _wanted(worker, key):
            log.warning("%s: the scheduler no longer wants it; stopping it", key)
            cancel.set()
            return


def _wanted(worker: distributed.Worker, key: str) -> bool:
    """Whether the worker still runs ``key`` for someone: a task whose every client went
    away is "cancelled" (or already forgotten) while its thread runs on."""
    state = worker.state.tasks.get(key)
    return state is not None and state.state in ("executing", "long-running")
