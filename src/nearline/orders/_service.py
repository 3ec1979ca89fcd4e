"""The service as one object: catalogue, algorithms, users, orders and the station manager,
all under one data folder. The web API and the CLI both drive this; neither knows SQL.

Embedded defaults need nothing installed: SQLite files and an archive folder under
``./nearline-data`` (``--data``, or ``NEARLINE_DATA``), runs as local sandboxed processes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from nearline.algorithms import (
    ECHO_ID,
    Algorithm,
    AlgorithmRegistry,
    DeploySettings,
    Manifest,
    builtin_algorithms,
    cleanup_stale,
    keep_run_disks,
)
from nearline.archive import Item, ObjectArchive, ObjectStores, is_object_url, open_catalogue
from nearline.closing import Closing
from nearline.db import database_url, open_database
from nearline.errors import (
    AlgorithmNotFound,
    CollectionNotFound,
    ConfigError,
    ItemNotFound,
    JobNotFound,
    ManifestError,
    ServiceError,
)
from nearline.identity import OidcSettings, UserStore, Verifier
from nearline.monitor import SystemSampler
from nearline.orders._admission import Capacity
from nearline.orders._base import Executor, Job, JobFilter, JobStatus, Run, Station
from nearline.orders._dispatcher import Dispatcher
from nearline.orders._echo_jobs import EchoJobs
from nearline.orders._executors import LocalExecutor, open_executor
from nearline.orders._memory import service_lending
from nearline.orders._metrics import ServiceMetrics, StateCollector
from nearline.orders._planning import plan_order
from nearline.orders._secrets import ServiceKeys
from nearline.orders._stations import OUTPUTS_OF, SERVICE_OWNER, Places, output_item_id
from nearline.orders._store import JobStore
from nearline.orders.subscriptions import (
    Subscription,
    SubscriptionRun,
    Subscriptions,
    SubscriptionStore,
    SubscriptionWatch,
)
from nearline.units import format_size, parse_size

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServiceSettings:
    """How a service runs. Arguments first, then ``NEARLINE_*`` variables, then defaults."""

    data: Path = Path("nearline-data")
    base_url: str = "http://127.0.0.1:8000"
    cpus: float | None = None  # lent to runs at once (default: every CPU)
    memory: int | None = None  # lent to runs at once (default: orders/_memory.py)
    max_upload: int = 512 * 1024**2
    executor: str = "local"  # where runs execute: local, or dask://HOST:PORT
    db: str | None = None  # the PostgreSQL state shared by several servers (None: SQLite files)
    poll: float = 2.0
    admission: bool = True  # False: every queued run starts at once (comparisons only)
    record: Path | None = None  # sample the machine into this run folder while serving
    archive: str | None = None  # s3://bucket/prefix: outputs kept there (None: under data)
    storage_options: Mapping[str, Any] = field(default_factory=dict)  # endpoint_url, profile
    oidc: OidcSettings | None = None  # signing in through an OpenID Connect provider
    echo: bool = False  # serve the echo test process (for conformance suites and clients)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def resolve(
        cls,
        *,
        data: str | Path | None = None,
        base_url: str | None = None,
        cpus: float | None = None,
        memory: str | int | None = None,
        max_upload: str | int | None = None,
        executor: str | None = None,
        db: str | None = None,
        admission: str | bool | None = None,
        record: str | Path | None = None,
        archive: str | None = None,
        storage_options: Mapping[str, Any] | None = None,
        oidc: str | Path | None = None,
        echo: str | bool | None = None,
    ) -> ServiceSettings:
        env = os.environ
        record = record or env.get("NEARLINE_RECORD") or None
        data = data or env.get("NEARLINE_DATA") or "nearline-data"
        memory = memory or env.get("NEARLINE_MEMORY")
        max_upload = max_upload or env.get("NEARLINE_MAX_UPLOAD")
        cpus_text = cpus if cpus is not None else env.get("NEARLINE_CPUS")
        try:
            cpus_value = float(cpus_text) if cpus_text is not None else None
        except ValueError:
            raise ConfigError(f"cpus: expected a number such as 2, got {cpus_text!r}") from None
        if cpus_value is not None and cpus_value <= 0:
            raise ConfigError(f"cpus: must be more than 0, got {cpus_value:g}")
        return cls(
            data=Path(data).absolute(),
            base_url=(base_url or env.get("NEARLINE_BASE_URL") or cls.base_url).rstrip("/"),
            cpus=cpus_value,
            memory=parse_size(memory, what="memory") if memory is not None else None,
            max_upload=(
                parse_size(max_upload, what="max upload")
                if max_upload is not None
                else cls.max_upload
            ),
            executor=executor or env.get("NEARLINE_EXECUTOR") or cls.executor,
            db=database_url(db),
            admission=parse_admission(
                admission if admission is not None else env.get("NEARLINE_ADMISSION", "on")
            ),
            record=Path(record).absolute() if record is not None else None,
            archive=archive or env.get("NEARLINE_ARCHIVE") or None,
            storage_options=dict(storage_options or {}),
            oidc=OidcSettings.resolve(oidc),
            echo=parse_switch(
                echo if echo is not None else env.get("NEARLINE_ECHO", "off"), "echo"
            ),
        )


def parse_admission(value: str | bool) -> bool:
    """``on`` (runs start as their declared resources fit) or ``off`` (every queued run
    starts at once: the 2005 behaviour, for comparisons)."""
    return parse_switch(value, "admission")


def parse_switch(value: str | bool, what: str) -> bool:
    """``on`` or ``off`` (a bool passes as it is); :class:`ConfigError` names ``what``."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("on", "off"):
        raise ConfigError(f"{what}: expected on or off, got {value!r}")
    return text == "on"


class Service(Closing):
    """Everything the web API and the CLI need, opened on one data folder."""

    def __init__(
        self,
        settings: ServiceSettings | None = None,
        *,
        wake_primary: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings or ServiceSettings.resolve()
        data = self.settings.data
        data.mkdir(parents=True, exist_ok=True)
        shared = self.settings.db is not None  # several servers may share the data folder
        # this server's own downloads; a front's (a worker process of `nearline serve
        # --workers`) inside its primary's, which answers requests only: the primary runs
        # the dispatcher, and each order a front takes wakes it
        scratch = f"scratch/{socket.gethostname()}-{os.getpid()}" if shared else "scratch"
        if wake_primary is not None:
            scratch += f"/front-{os.getpid()}"
        self.places = Places(data, scratch)
        self.wake_primary = wake_primary
        self.stores = ObjectStores(self.settings.storage_options)  # s3:// assets
        self.archive = (  # where outputs are kept, if not under the data folder
            ObjectArchive(self.settings.archive, self.stores) if self.settings.archive else None
        )
        self.database = open_database(self.settings.db, data / "service.db")
        self.users = UserStore(self.database)
        oidc = self.settings.oidc
        self.verifier = Verifier(oidc) if oidc else None  # provider tokens, when configured
        self.keys = ServiceKeys(self.database)  # e.g. the one paging tokens are signed with
        self.jobs = JobStore(self.database)
        self.echo = EchoJobs(self.jobs)  # the echo test process, answered in-process
        self.catalogue = open_catalogue(
            self.settings.db, data / "catalogue.db", database=self.database
        )
        self.algorithms = AlgorithmRegistry(
            data,
            settings=DeploySettings.resolve(max_upload=self.settings.max_upload),
            accept=self._check_output_collection,
            database=self.database if shared else None,
        )
        capacity = Capacity()
        if self.settings.cpus is not None:
            capacity.cpus = self.settings.cpus
        if self.settings.memory is not None:
            capacity.memory = self.settings.memory
        self._sampler: SystemSampler | None = None  # the load recording, while serving
        self.metrics = ServiceMetrics(  # what `nearline serve --metrics` serves
            StateCollector(
                self.database, self.catalogue, held=lambda: self.dispatcher.held.by_user.copy()
            )
        )
        self.dispatcher = Dispatcher(
            store=self.jobs,
            find_algorithm=self._algorithm_of,
            context={
                "catalogue": self.catalogue,
                "places": self.places,
                "base_url": self.settings.base_url,
                "stores": self.stores,
                "archive": self.archive,
            },
            executor=_elsewhere(self.settings.executor),  # None: here, readying runs ahead
            capacity=capacity,
            allotment=self.users.allotment,
            disk_used=self.jobs.disk_used,
            poll=self.settings.poll,
            admission=self.settings.admission,
            mark=self._mark if self.settings.record is not None else None,
            slot_overhead=self.metrics.slot_overhead.observe,
        )
        subscriptions = SubscriptionStore(self.database)
        self.subscriptions = Subscriptions(
            store=subscriptions, algorithms=self.algorithms, catalogue=self.catalogue
        )
        self._watch = SubscriptionWatch(
            store=subscriptions,
            catalogue=self.catalogue,
            jobs=self.jobs,
            submit=self._submit_subscribed,
            version_of=self._version_subscribed,
            base_url=self.settings.base_url,
        )
        self._started = False

    # -- life -------------------------------------------------------------------------------
    def start(self) -> None:
        """Deploy the built-in algorithms if missing, resume unfinished runs, start."""
        if self.archive is not None:  # a wrong key or a read-only bucket: one line, now
            self.archive.check()
        cleanup_stale()  # runs of a killed service: their groups and any process left
        shutil.rmtree(self.places.scratch, ignore_errors=True)  # a killed service's downloads
        if self.settings.db is not None:  # and those of this host's servers that are gone
            for folder in self.places.scratch.parent.glob(f"{socket.gethostname()}-*"):
                pid = folder.name.rsplit("-", 1)[1]
                if pid.isdigit() and not psutil.pid_exists(int(pid)):
                    shutil.rmtree(folder, ignore_errors=True)
        self.places.scratch.mkdir(parents=True)
        executor = self.dispatcher.executor
        if isinstance(executor, LocalExecutor):  # runs here: keep their disks for the next
            executor.disks = keep_run_disks(self.places.scratch / "disks")  # (_disk_pool.py)
        for package in builtin_algorithms():
            self.algorithms.ensure_builtin(package, owner=SERVICE_OWNER)
        self._say_lending()
        if self.settings.record is not None:
            self._sampler = SystemSampler(self.settings.record)
            log.info("recording the machine into %s", self.settings.record)
        self.dispatcher.start()
        self._watch.start()  # subscriptions: triggered by ingest, after the dispatcher
        self._started = True

    def start_front(self) -> None:
        """Start as a front: its own scratch folder, nothing else (the primary started)."""
        self.places.scratch.mkdir(parents=True, exist_ok=True)

    def close(self) -> None:
        if self.wake_primary is not None:
            shutil.rmtree(self.places.scratch, ignore_errors=True)
        if self._started:
            self._watch.close()
            self.dispatcher.close()
            executor = self.dispatcher.executor
            if isinstance(executor, LocalExecutor) and executor.disks is not None:
                executor.disks.close()  # the disks kept for runs: unmounted and gone
                executor.disks = None
        if self._sampler is not None:  # after the dispatcher: its runs' ends are marked
            self._sampler.close()
        self.catalogue.close()
        self.algorithms.close()
        self.database.close()
        if self.archive is not None:
            self.archive.close()
        self.stores.close()

    def _say_lending(self) -> None:
        """Log what runs may hold at once, and from what that follows."""
        capacity = self.dispatcher.capacity
        if not self.settings.admission:
            log.warning(
                "admission is off: every queued run starts at once, held only by its own "
                "limits (for comparisons; never for a service people use)"
            )
            return
        lending = service_lending()
        why = "--memory" if self.settings.memory is not None else lending.why
        log.info(
            "runs may hold %g CPUs and %s at once (%s)",
            capacity.cpus,
            format_size(capacity.memory),
            why,
        )
        if self.settings.memory is not None and capacity.memory > lending.memory:
            log.warning(
                "--memory %s is more than this service can lend (%s: %s); runs wait for "
                "memory free now as well",
                format_size(capacity.memory),
                lending.why,
                format_size(lending.memory),
            )

    def _mark(self, event: str, name: str) -> None:
        if self._sampler is not None:
            self._sampler.mark(event, name)

    # -- orders -----------------------------------------------------------------------------
    def submit(
        self,
        process: str,
        body: Mapping[str, Any],
        *,
        owner: str,
        version: str | None = None,
        job_id: str | None = None,
        message: str | None = None,
    ) -> Job:
        """Accept an order for ``process`` (an OGC execute request body) from ``owner``;
        ``version`` (default the newest), ``job_id`` (chosen beforehand, as a subscription's
        are) and ``message`` (the job's, until a run fails) for jobs the service makes. The
        echo process, when the operator turned it on, is answered in-process."""
        if process == ECHO_ID and self.settings.echo:
            return self.echo.submit(body, owner=owner, job_id=job_id)
        job = self._order(process, body, owner=owner, version=version, job_id=job_id,
                          message=message)  # fmt: skip
        self.jobs.create(job)
        self._wake_dispatcher()
        return job

    def _wake_dispatcher(self) -> None:
        """New work: this process's dispatcher, or a front's primary's."""
        (self.wake_primary or self.dispatcher.wake)()

    def _order(
        self,
        process: str,
        body: Mapping[str, Any],
        *,
        owner: str,
        version: str | None,
        job_id: str | None,
        message: str | None,
    ) -> Job:
        """The job an order makes, planned and not yet recorded."""
        algorithm = self.algorithms.get(process, viewer=owner, version=version)
        plan = plan_order(algorithm, body, catalogue=self.catalogue, owner=owner)
        job_id = job_id or uuid.uuid4().hex
        stamp = datetime.now(UTC)
        runs = tuple(
            Run(
                id=f"{job_id}-{index}",
                job=job_id,
                index=index,
                station=Station.QUEUED,
                inputs=refs,
                waiting="queued",
            )
            for index, refs in enumerate(plan.runs)
        )
        data_inputs = {spec.name for spec in algorithm.manifest.inputs}
        return Job(
            id=job_id,
            owner=owner,
            process=algorithm.id,
            version=algorithm.version,
            status=JobStatus.ACCEPTED,
            created=stamp,
            updated=stamp,
            inputs={k: v for k, v in body.get("inputs", {}).items() if k in data_inputs},
            parameters=plan.parameters,
            message=message,
            runs=runs,
        )

    def _submit_subscribed(
        self, subscription: Subscription, orders: Sequence[tuple[SubscriptionRun, dict]]
    ) -> dict[str, ServiceError]:
        """A subscription's jobs: its owner's orders, each with the id and version it
        planned, recorded in one transaction and one wake of the dispatcher. The orders
        refused, by job id."""
        echo = subscription.process == ECHO_ID and self.settings.echo
        refused: dict[str, ServiceError] = {}
        jobs = []
        for run, body in orders:
            try:
                if echo:  # answered in-process, as submit does
                    self.echo.submit(body, owner=subscription.owner, job_id=run.job)
                    continue
                jobs.append(self._order(subscription.process, body, owner=subscription.owner,
                                        version=run.version, job_id=run.job,
                                        message=run.note))  # fmt: skip
            except ServiceError as error:
                refused[run.job] = error
        if jobs:
            self.jobs.create_all(jobs)
            self._wake_dispatcher()
        return refused

    def _version_subscribed(self, subscription: Subscription) -> str:
        """The version a subscription's next job runs: its pinned one, or the newest."""
        return self.algorithms.get(
            subscription.process, viewer=subscription.owner, version=subscription.version
        ).version

    def job(self, job_id: str, *, viewer: str) -> Job:
        return self.echo.settle(self.jobs.get(job_id, viewer=viewer))

    def job_list(
        self, *, viewer: str, limit: int = 100, offset: int = 0, only: JobFilter | None = None
    ) -> list[Job]:
        """``viewer``'s jobs, newest first, those ``only`` keeps (None: all)."""
        if only is not None and only.statuses:  # a due echo is settled first: filtered as is
            self.echo.settle_all(viewer)
        jobs = self.jobs.list(viewer=viewer, limit=limit, offset=offset, only=only)
        return [self.echo.settle(job) for job in jobs]

    def results(self, job_id: str, *, viewer: str) -> list[Item]:
        """The catalogue items a successful job made."""
        job = self.jobs.get(job_id, viewer=viewer)
        algorithm = self._algorithm_of(job)
        collection = algorithm.manifest.output_collection
        return [
            self.catalogue.get_item(
                collection, output_item_id(job.id, run.index, out.name), viewer=viewer
            )
            for run in job.runs
            if run.station == Station.DONE
            for out in run.outputs
        ]

    def log_text(self, job_id: str, *, viewer: str, limit: int = 1_000_000) -> str:
        """Every run's log, each under a heading, the last ``limit`` bytes of each."""
        job = self.jobs.get(job_id, viewer=viewer)
        parts = []
        for run in job.runs:
            path = self.places.log_of(run)
            text = ""
            if path.exists():
                with open(path, "rb") as handle:
                    size = path.stat().st_size
                    handle.seek(max(0, size - limit))
                    text = handle.read().decode("utf-8", "replace")
            parts.append(f"== run {run.index} ({run.station.value}) ==\n{text}")
        return "\n".join(parts)

    def dismiss(self, job_id: str, *, viewer: str) -> Job:
        """Stop a job: running runs are killed and their working folders removed. A finished
        job's results are deleted (files and items), freeing its owner's disk quota."""
        job = self.job(job_id, viewer=viewer)
        if job.status == JobStatus.DISMISSED:
            return job
        if job.status in (JobStatus.SUCCESSFUL, JobStatus.FAILED):
            self._delete_results(job)
            self.jobs.forget_results(job_id, viewer=viewer, message="results deleted by its owner")
            return self.jobs.get(job_id, viewer=viewer)
        open_runs = self.jobs.dismiss(job_id, viewer=viewer, message="dismissed by its owner")
        if self.wake_primary is None:
            self.dispatcher.cancel(open_runs)
        else:  # its runs are the primary's: it stops them, and this front waits as cancel does
            self.wake_primary()
            self._until_cleaned(open_runs, wait=30.0)
        return self.jobs.get(job_id, viewer=viewer)

    def _until_cleaned(self, runs: Sequence[Run], *, wait: float) -> None:
        """Wait until the runs' working folders are gone (the primary removes them once
        their processes are)."""
        deadline = time.monotonic() + wait
        places = self.places
        folders = [f(run) for run in runs for f in (places.run_folder, places.staged_inputs)]
        while any(folder.exists() for folder in folders) and time.monotonic() < deadline:
            time.sleep(0.02)

    def _delete_results(self, job: Job) -> None:
        if not job.runs:  # answered in-process (echo): no files, no items
            return
        collection = self._algorithm_of(job).manifest.output_collection
        items = [
            output_item_id(job.id, run.index, out.name) for run in job.runs for out in run.outputs
        ]
        for item_id in items:  # kept in a bucket: removed there
            with contextlib.suppress(ItemNotFound):
                item = self.catalogue.get_item(collection, item_id, viewer=job.owner)
                location = item.assets["data"].location
                if is_object_url(location):
                    self.stores.remove(location)
        self.catalogue.delete_items(collection, items)
        for run in job.runs:
            shutil.rmtree(self.places.output_folder(collection, run), ignore_errors=True)
        if job.runs:  # the job's own folder, now empty
            shutil.rmtree(self.places.output_folder(collection, job.runs[0]).parent, True)

    def authenticate(self, token: str | None) -> str:
        """The user a bearer token names: one of nearline's own tokens, or (when a provider
        is configured) the provider's access token of a person the policy admits."""
        if self.verifier is not None and token and token.count(".") == 2:
            return self.sign_in(self.verifier.access_claims(token))
        return self.users.authenticate(token)

    def sign_in(self, claims: dict[str, Any]) -> str:
        """The user verified ``claims`` sign in as (made on first sign-in)."""
        assert self.verifier is not None
        issuer, subject, wanted, operator = self.verifier.admit(claims)
        return self.users.signed_in(issuer, subject, wanted=wanted, operator=operator)

    def user(self, name: str) -> dict[str, Any]:
        """``name``'s string and what they use of it now (GET /users/me)."""
        allotment = self.users.allotment(name)
        cpus, memory = self.dispatcher.held.of(name)
        return {
            "name": name,
            "quota": {"cpus": allotment.cpus, "memory": allotment.memory, "disk": allotment.disk},
            "usage": {
                "cpus": cpus,
                "memory": memory,
                "disk": self.jobs.disk_used(name),
                "runs_queued": self.jobs.queued_count(name),
            },
        }

    def _check_output_collection(self, manifest: Manifest, owner: str) -> None:
        """Refuse, before it is built, a package whose outputs would land in a collection
        that holds other data (archive granules, or another algorithm's outputs), and one
        named as the built-in echo process is (whether or not it is on)."""
        if manifest.id == ECHO_ID:
            raise ManifestError(
                f"the id {ECHO_ID!r} is the service's built-in test process; choose another",
                field="id",
            )
        try:
            found = self.catalogue.get_collection(manifest.output_collection, viewer=owner)
        except CollectionNotFound:
            return
        if found.properties.get(OUTPUTS_OF) != manifest.id:
            raise ManifestError(
                f"the output collection {manifest.output_collection!r} holds other data; give "
                "the algorithm an output collection of its own",
                field="collection",
            )

    def _algorithm_of(self, job: Job) -> Algorithm:
        try:
            return self.algorithms.get(job.process, viewer=job.owner, version=job.version)
        except AlgorithmNotFound:
            raise JobNotFound(f"job {job.id}'s algorithm {job.process} is gone") from None


def _elsewhere(spec: str | None) -> Executor | None:
    """The executor ``spec`` names if runs go elsewhere; None for this machine's own, which
    the dispatcher makes (it gives it the CPUs' gate)."""
    executor = open_executor(spec)
    return None if executor.name == LocalExecutor.name else executor
