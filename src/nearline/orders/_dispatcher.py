"""The station manager: admits queued runs (_admission.py decides which, by their declared
resources, the users' strings and fair share) and walks each one through its stations.

One thread decides (what runs next, and why the others wait); the stations' work runs on a
pool of threads that mostly wait, and each run's algorithm on the executor. A run is admitted
only when its declared CPUs and memory fit beside the runs already going and in the memory
free now, so a heavy load queues instead of driving the machine out of memory.

Several servers may share one database (``--db``): each admits against its own capacity, a
run belongs to the server whose admission moved it out of the queue (compare-and-set, so never
two), and a server takes over only the runs of servers that are gone (_server_roster.py).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
import traceback
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from nearline import logs
from nearline.algorithms import Algorithm, CpuGate, StageClock
from nearline.closing import Closing
from nearline.errors import DiskQuotaExceeded, NearlineError, OutputsLost
from nearline.identity import Allotment
from nearline.orders import _stations as stations
from nearline.orders._admission import Candidate, Capacity, Holdings, Ledger, admit, admit_all
from nearline.orders._base import Executor, Job, Run, Station
from nearline.orders._executors import LocalExecutor
from nearline.orders._memory import MemoryNow, read_memory_now
from nearline.orders._server_roster import Servers
from nearline.orders._store import JobStore
from nearline.units import format_size

log = logging.getLogger(__name__)

READIED = "readied: its sandbox is made; waiting for a CPU to free"
PASS_SPACING = 0.05  # seconds: the least time between two admission passes


class Dispatcher(Closing):
    """Moves runs through the stations. ``wake()`` after new work arrives."""

    def __init__(
        self,
        *,
        store: JobStore,
        find_algorithm: Callable[[Job], Algorithm],
        context: dict[str, Any],
        executor: Executor | None = None,
        capacity: Capacity | None = None,
        allotment: Callable[[str], Allotment] = lambda owner: Allotment(),
        disk_used: Callable[[str], int] = lambda owner: 0,
        poll: float = 2.0,
        servers: Servers | None = None,
        admission: bool = True,
        memory_now: Callable[[], MemoryNow] | None = None,
        mark: Callable[[str, str], object] | None = None,
        slot_overhead: Callable[[float], object] | None = None,
    ) -> None:
        """``executor`` None runs here, readying up to ``capacity.cpus`` more CPUs' worth of
        runs ahead while others run (admission on; :class:`Capacity`); ``admission`` False
        starts every queued run at once (comparisons only);
        ``memory_now`` reads the memory free now (default: this machine's, for local runs;
        none for runs that go elsewhere); ``mark(event, name)`` is told each run's "start"
        and "end" (the service's load recording); ``slot_overhead(seconds)`` how much longer
        each run held its slot than its algorithm ran (the service's metrics)."""
        self.store = store
        self.servers = servers or Servers(store.database)
        self.me: str | None = None  # this server's id, once started
        self.find_algorithm = find_algorithm
        self.context = context  # catalogue, places, base_url, and S3 stores and archive
        self._pool = ThreadPoolExecutor(64, thread_name_prefix="nearline-run")  # stations wait
        self.capacity = capacity or Capacity()
        self.admission = admission
        self.held = Holdings()
        self.ledger = Ledger()
        if executor is None and admission:  # here: a run readied waits at the CPUs' gate
            gate = CpuGate(self.capacity.cpus, recent=self.ledger.recent)
            executor = LocalExecutor(gate, owner_of=self._owner_of, waiting=self._readied)
            self.capacity = dataclasses.replace(self.capacity, ahead=self.capacity.cpus)
        self.executor = executor or LocalExecutor()
        local = self.executor.name == LocalExecutor.name  # elsewhere, this machine's memory
        self.memory_now = memory_now or (read_memory_now if local else None)  # is not theirs
        self.mark = mark
        self.slot_overhead = slot_overhead
        self.allotment = allotment
        self.disk_used = disk_used
        self.poll = poll
        self._wake = threading.Condition()
        self._pending = False
        self._stop = False
        self._cancels: dict[str, threading.Event] = {}
        self._futures: dict[str, Future[None]] = {}
        self._sizes: dict[str, tuple[str, float, int]] = {}  # run: (owner, cpus, memory)
        self._began: dict[str, float] = {}  # run: when it was admitted (monotonic)
        self._clocks: dict[str, StageClock] = {}  # run: its stages' timings so far
        self._queued_jobs: dict[str, Job] = {}  # the jobs of queued runs, as last read
        self._queued_runs: dict[str, Run] = {}  # the queued runs, as last read
        self._backlog = False  # whether the last pass left runs waiting
        self._versions: dict[tuple[str, str, str], Algorithm | None] = {}  # algorithms found
        self._versions_read = 0.0  # when those were first looked up (monotonic)
        self._woken: float | None = None  # when work (or a freed slot) first woke the loop
        self._taken: set[str] = set()  # runs another server took over (this one was late)
        self._tended = {"beat": 0.0, "adopt": 0.0}  # when the loop last did each (monotonic)
        self._thread: threading.Thread | None = None

    # -- control ----------------------------------------------------------------------------
    def start(self) -> None:
        """Register this server, resume what a gone one left, then start admitting runs."""
        self.me = self.servers.register()
        self.resume()
        self._thread = threading.Thread(target=self._loop, name="nearline-dispatcher", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        with self._wake:
            self._pending = True
            if self._woken is None:
                self._woken = time.monotonic()
            self._wake.notify()

    def cancel(self, runs: list[Run], *, wait: float = 30.0) -> None:
        """Stop these runs (their job was dismissed) and wait up to ``wait`` seconds until
        their processes are gone and their working folders removed."""
        for run in runs:
            event = self._cancels.get(run.id)
            if event is not None:
                event.set()
        self.wake()
        pending = [self._futures[run.id] for run in runs if run.id in self._futures]
        futures.wait(pending, timeout=wait)

    def close(self) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify()
        for event in list(self._cancels.values()):
            event.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        futures.wait(list(self._futures.values()), timeout=10)  # stopped before others adopt
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.executor.close()
        if self.me is not None:
            try:
                self.servers.leave()
            except Exception:  # a database gone first: others find this server gone later
                log.exception("dispatcher: could not say this server stops")

    def resume(self) -> None:
        """Take over the runs of servers that are gone (at a restart, this server's former
        self): runs caught staging, allocating or running start again from the queue (none
        had finished its algorithm); runs caught ingesting or cleaning up finish those
        stations here (their algorithm had finished: it is not run again). Runs held by a
        live server are left to it."""
        alive = self.servers.alive()
        for run in self.store.at(Station.STAGE, Station.ALLOCATE, Station.RUN):
            if run.server not in alive:
                self.store.move(
                    run,
                    Station.QUEUED,
                    server=None,
                    attempts=run.attempts + 1,
                    waiting="queued again: the service restarted while this run was at "
                    f"station {run.station.value}",
                )
        for run in self.store.at(Station.INGEST, Station.CLEANUP):
            if run.server not in alive:
                moved = self.store.move(run, run.station, server=self.me)
                if moved is not None:
                    self._pool.submit(self._pipeline, moved)
        self.servers.forget({server.id for server in self.servers.others()} - alive)

    # -- the loop ---------------------------------------------------------------------------
    def _loop(self) -> None:
        last = 0.0  # when the last pass began (monotonic)
        while True:
            with self._wake:
                if not self._pending and not self._stop:
                    self._wake.wait(timeout=self.poll)
                # with runs left waiting, passes at most PASS_SPACING apart: a busy server's
                # wakes (every order, every run's end) then share a pass, and readied runs hide
                # the wait; with none, a new order is taken at once
                while (
                    self._backlog
                    and not self._stop
                    and (rest := last + PASS_SPACING - time.monotonic()) > 0
                ):
                    self._wake.wait(timeout=rest)
                last = time.monotonic()
                self._pending = False
                woken, self._woken = self._woken, None
                if self._stop:
                    return
            try:
                self._admit(woken if woken is not None else time.monotonic(), time.thread_time())
                self._tend()
            except Exception:  # the loop must outlive any one bad run
                log.exception("dispatcher: admitting runs failed")

    def _tend(self) -> None:
        """Beat (once a poll); stop runs of this server that were dismissed through another
        or taken over; take over the runs of gone servers (a few times a lease)."""
        now = time.monotonic()
        if now - self._tended["beat"] < self.poll:
            return
        self._tended["beat"] = now
        self.servers.beat()
        self._stop_dismissed()
        if now - self._tended["adopt"] >= self.servers.lease / 3:
            self._tended["adopt"] = now
            self.resume()

    def _stop_dismissed(self) -> None:
        """Stop this server's runs that were dismissed, or taken over, elsewhere."""
        for run_id, event in list(self._cancels.items()):
            current = self.store.run(run_id)
            if current.server != self.me:
                self._taken.add(run_id)
                event.set()
            elif current.station == Station.DISMISSED:
                event.set()

    def wake_from_front(self) -> None:
        """A front of this server (`nearline serve --workers`) took an order or a dismissal:
        stop what was dismissed at once, and look at the queue."""
        try:
            self._stop_dismissed()
        except NearlineError:  # a run gone meanwhile: the next beat looks again
            log.debug("dispatcher: dismissals looked at again at the next beat")
        self.wake()

    def _admit(self, woken: float, cpu: float) -> None:
        """One pass: start what fits, say why the rest waits. ``woken`` (monotonic) and
        ``cpu`` (this thread's) are when the pass was asked for and the CPU it began at: a
        run it starts counts from there to its move as its ``admit`` stage."""
        queued: list[Candidate] = []
        jobs: dict[str, tuple[Job, Algorithm | None]] = {}
        if time.monotonic() - self._versions_read > self.poll:  # looked up once a poll
            self._versions, self._versions_read = {}, time.monotonic()
        versions = self._versions
        known, self._queued_jobs = self._queued_jobs, {}
        self._queued_runs = {run.id: run for run in self.store.queued(self._queued_runs)}
        for run in self._queued_runs.values():
            if run.job not in jobs:
                # a job's owner, algorithm and creation never change: read once while queued
                job = known.get(run.job) or self.store.get(run.job, viewer=None)
                self._queued_jobs[run.job] = job
                version = (job.process, job.version, job.owner)
                if version not in versions:
                    try:
                        versions[version] = self.find_algorithm(job)
                    except Exception as error:  # retired and gone: the run cannot happen
                        log.warning("job %s: %s", job.id, error)
                        versions[version] = None
                jobs[run.job] = (job, versions[version])
            job, algorithm = jobs[run.job]
            if algorithm is None:
                self._fail(run, f"the algorithm {job.process} {job.version} is gone")
                continue
            resources = algorithm.manifest.resources
            queued.append(
                Candidate(
                    run, job.owner, job.created, resources.cpus, resources.memory, resources.disk
                )
            )
        if not queued:
            self._backlog = False
            return
        if not self.admission:
            decision = admit_all(queued, held=self.held)
        else:  # a user's string and disk are read once a pass, not once a decision
            decision = admit(
                queued,
                capacity=self.capacity,
                held=self.held,
                allotment=functools.cache(self.allotment),
                disk_used=functools.cache(self.disk_used),
                ledger=self.ledger,
                memory_now=self.memory_now,  # read only if a run gets that far
            )
        for candidate in queued:
            if candidate.run.id in decision.refuse:
                self._fail(candidate.run, decision.refuse[candidate.run.id])
        said = [(c.run, decision.wait[c.run.id]) for c in queued if c.run.id in decision.wait]
        self.store.set_waiting_all(said)  # one write for the pass, not one a waiting run
        for run, waiting in said:  # as the queue now reads, so the next pass reuses it
            if run.waiting != waiting:
                self._queued_runs[run.id] = dataclasses.replace(run, waiting=waiting)
        self._backlog = bool(decision.wait)
        for candidate in decision.start:
            self._start(candidate, woken, cpu)

    def _start(self, candidate: Candidate, woken: float, cpu: float) -> None:
        run = candidate.run
        moved = self.store.move(
            run, Station.STAGE, waiting=None, started=datetime.now(UTC), server=self.me
        )
        if moved is None:  # dismissed meanwhile, or started by another server
            self.held.give_back(candidate.owner, candidate.cpus, candidate.memory)
            return
        clock = self._clocks[run.id] = StageClock()
        clock.add("admit", time.monotonic() - woken, time.thread_time() - cpu)
        self._sizes[run.id] = (candidate.owner, candidate.cpus, candidate.memory)
        self._began[run.id] = time.monotonic()
        self._cancels[run.id] = threading.Event()  # before it starts: a dismissal may come
        self._futures[run.id] = self._pool.submit(self._pipeline, moved)
        log.info("run admitted", extra={"job": run.job, "run": run.id, "user": candidate.owner})

    # -- one run ----------------------------------------------------------------------------
    def _pipeline(self, run: Run) -> None:
        with logs.bound(job=run.job, run=run.id):  # every line about it says which it is
            self._pipeline_of(run)

    def _pipeline_of(self, run: Run) -> None:
        cancel = self._cancels.setdefault(run.id, threading.Event())
        clock = self._clocks.setdefault(run.id, StageClock())
        if run.id in self._began:  # admitted here: from its move to a thread taking it up
            clock.add("dispatch", time.monotonic() - self._began[run.id])
        try:
            with clock.stage("dispatch"):
                job = self.store.get(run.job, viewer=None)
                algorithm = self.find_algorithm(job)
            self._walk(run, job, algorithm, cancel, clock)
        except _Dismissed:
            if not self._taken_over(run):
                stations.cleanup(run, places=self.context["places"])
        except OutputsLost as lost:  # taken over from a stopped server before its upload
            current = self.store.run(run.id)
            log.warning("run %s is queued again: %s", run.id, lost)
            self.store.move(
                current,
                Station.QUEUED,
                server=None,
                outputs=(),
                attempts=current.attempts + 1,
                waiting=f"queued again: {lost}",
            )
        except Exception as error:
            log.error("run %s failed: %s", run.id, traceback.format_exc())
            current = self.store.run(run.id)
            if not current.station.ended and current.server == self.me:
                why = str(error) if isinstance(error, NearlineError) else repr(error)
                self._fail(current, f"the run failed at station {current.station.value}: {why}")
        finally:
            self._release(run.id)  # (its clock still there: the slot's overhead is told)
            self._clocks.pop(run.id, None)
            self._cancels.pop(run.id, None)
            self._futures.pop(run.id, None)
            self._taken.discard(run.id)

    def _release(self, run_id: str) -> None:
        """Give back what a run held, once its algorithm has exited (what is left, ingest and
        clean-up, is the service's own work), and let the next run start; safe twice."""
        if run_id in self._sizes:
            owner, cpus, memory = self._sizes.pop(run_id)
            self.held.give_back(owner, cpus, memory)
            began = self._began.pop(run_id, time.monotonic())
            stages = self._clocks[run_id].stages if run_id in self._clocks else {}
            readied = stages.get("ready", (0.0, 0.0))[0]  # it waited for its CPUs, readied
            held = time.monotonic() - began - readied
            self.ledger.credit(owner, cpus * held)
            if "algorithm" in stages and self.slot_overhead is not None:  # it ran (its wall)
                self.slot_overhead(max(0.0, held - stages["algorithm"][0]))
        self.wake()

    def _owner_of(self, run_id: str) -> str:
        """Whose run it is (fair share at the CPUs' gate)."""
        return self._sizes.get(run_id, ("", 0.0, 0))[0]

    def _readied(self, run_id: str, waiting: bool) -> None:
        """Say (or stop saying) that a run waits for its CPUs with its sandbox made; a store
        that cannot be told costs the run nothing (it is only said)."""
        try:
            run = self.store.run(run_id)
            self.store.set_waiting(run, READIED if waiting else None)
        except Exception:  # dismissed and gone meanwhile, or the database busy
            log.warning("run %s: could not say it is readied", run_id, exc_info=True)

    def _walk(
        self, run: Run, job: Job, algorithm: Algorithm, cancel: threading.Event, clock: StageClock
    ) -> None:
        ctx = self.context
        places: stations.Places = ctx["places"]
        logs.bind(user=job.owner)
        if run.station == Station.STAGE:
            with clock.stage("stage"):
                inputs = stations.stage(
                    run,
                    job,
                    catalogue=ctx["catalogue"],
                    places=places,
                    base_url=ctx["base_url"],
                    stores=ctx.get("stores"),
                )
                run = self._next(run, Station.ALLOCATE)
            with clock.stage("allocate"):
                disk = algorithm.manifest.resources.disk
                while (free := stations.free_disk(places)) < disk and not cancel.is_set():
                    self.store.set_waiting(
                        run,
                        f"waiting for disk: needs {format_size(disk)}, {format_size(free)} free",
                    )
                    cancel.wait(self.poll)
                run = self._next(run, Station.RUN)
            name = f"{job.process} job {job.id[:8]} #{run.index}"
            self._mark("start", name)
            try:
                outcome, outputs = stations.execute(
                    run, job, algorithm, inputs=inputs, places=places, cancel=cancel,
                    executor=self.executor, clock=clock,
                )  # fmt: skip
            finally:
                self._mark("end", name)
            retried = self.executor.retries(run.id)
            if retried:
                run = self._note_retries(run, retried)
            if not outcome.ok:
                if cancel.is_set():  # dismissed (the store says so already), or taken over
                    if not self._taken_over(run):
                        stations.cleanup(run, places=places)
                    return
                why = outcome.reason or f"the algorithm exited with code {outcome.exit_code}"
                self._fail(run, f"{why}; see GET /jobs/{job.id}/logs", usage=outcome.usage)
                stations.cleanup(run, places=places)
                return
            try:
                with clock.stage("outputs"):
                    moved = self.store.move_within_quota(
                        run, Station.INGEST, owner=job.owner,
                        quota=self.allotment(job.owner).disk, usage=outcome.usage,
                        outputs=outputs,
                    )  # fmt: skip
            except DiskQuotaExceeded as refused:  # its outputs are kept nowhere
                self._fail(run, f"{refused}; see GET /users/me", usage=outcome.usage)
                stations.cleanup(run, places=places)
                return
            if moved is None:  # dismissed meanwhile
                raise _Dismissed(run.id)
            log.info("run at station %s", moved.station.value)
            run = moved
            self._release(run.id)  # from here on it is the service's work, not the run's
        if run.station == Station.INGEST:
            with clock.stage("ingest"):
                stations.ingest(
                    run,
                    job,
                    algorithm,
                    catalogue=ctx["catalogue"],
                    places=places,
                    archive=ctx.get("archive"),
                )
                run = self._next(run, Station.CLEANUP)
        if run.station == Station.CLEANUP:
            with clock.stage("cleanup"):
                stations.cleanup(run, places=places)
            self._next(run, Station.DONE, finished=datetime.now(UTC), timings=dict(clock.stages))

    def _mark(self, event: str, name: str) -> None:
        """Tell the recording a run started or ended; a recording that fails costs the run
        nothing."""
        if self.mark is None:
            return
        try:
            self.mark(event, name)
        except Exception:
            log.exception("dispatcher: could not mark %s of %s", event, name)

    def _taken_over(self, run: Run) -> bool:
        """Whether another server holds ``run`` now (its folder is that server's to clean)."""
        if run.id in self._taken:
            return True
        try:
            return self.store.run(run.id).server != self.me
        except NearlineError:
            return False

    def _next(self, run: Run, to: Station, **changes: Any) -> Run:
        moved = self.store.move(run, to, **changes)
        if moved is None:  # dismissed meanwhile
            raise _Dismissed(run.id)
        log.info("run at station %s", to.value)
        return moved

    def _note_retries(self, run: Run, retried: int) -> Run:
        """A run the executor started again elsewhere (its machine was lost) says so."""
        return self._next(
            run,
            Station.RUN,
            attempts=run.attempts + retried,
            waiting=f"started again on another machine {retried} time(s): a worker was lost",
        )

    def _fail(self, run: Run, message: str, **changes: Any) -> None:
        log.warning("run failed: %s", message, extra={"job": run.job, "run": run.id})
        self.store.move(run, Station.FAILED, message=message, finished=datetime.now(UTC), **changes)


class _Dismissed(Exception):
    """The run's job was dismissed while it was at a station."""
