"""What each station does to a run: stage its inputs, allocate its disk, run the algorithm
in its sandbox, ingest its outputs, clean up. Each is safe to repeat from its beginning, which
is what a restarted service does with a run it finds at that station.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from nearline.algorithms import Algorithm, Limits, StageClock, limits_for
from nearline.archive import (
    Asset,
    Catalogue,
    Collection,
    Item,
    ObjectArchive,
    ObjectStores,
    describe_file,
    fetch,
    item_to_stac,
    sha256_of,
    union_footprints,
)
from nearline.errors import CollectionNotFound, Conflict, GranuleError, IngestError, OutputsLost
from nearline.orders._base import Executor, Job, OutputFile, Run, RunTask

log = logging.getLogger(__name__)
SERVICE_OWNER = "nearline"  # owns the built-in algorithms
GRID_PROPERTY = "nearline:grid"
GRIDDED_PROPERTIES = (GRID_PROPERTY, "nearline:bands", "nearline:units", "nearline:long_names",
                      "nearline:reader", "nearline:product")  # fmt: skip
OUTPUTS_OF = "nearline:outputs_of"  # marks a collection as one algorithm's outputs
# built-ins whose runs execute their users' code (openEO's UDFs): their outputs are strangers'
# files, never opened by the service, and their orders may hold them tighter (TIGHTER)
RUNS_USERS_CODE = frozenset({"openeo"})
TIGHTER = "limits"  # a built-in's parameter: memory, disk (bytes), timeout (s), each a minimum


@dataclass(frozen=True)
class Places:
    """Where the service keeps things under its data folder."""

    data: Path
    scratch_name: str = "scratch"  # a server's own, when several share the data folder

    @property
    def runs(self) -> Path:
        return self.data / "runs"

    @property
    def logs(self) -> Path:
        return self.data / "logs"

    @property
    def scratch(self) -> Path:
        """Short-lived copies (downloads restored from bundles), emptied at each start."""
        return self.data / self.scratch_name

    @property
    def references(self) -> Path:
        """Kerchunk references made for downloads, kept by the data's SHA-256."""
        return self.data / "references"

    @property
    def outputs(self) -> Path:
        return self.data / "archive" / "outputs"

    def run_folder(self, run: Run) -> Path:
        return self.runs / run.id

    def staged_inputs(self, run: Run) -> Path:
        """Copies of a run's inputs: beside its working folder, not in it, so they do not
        count against the run's disk (they are shown to it read-only)."""
        return self.runs / f"{run.id}.inputs"

    def log_of(self, run: Run) -> Path:
        return self.logs / run.job[:2] / run.job / f"run-{run.index:04d}.log"

    def output_folder(self, collection: str, run: Run) -> Path:
        """Kept outputs: two levels keyed by job id, so no folder grows past a few thousand
        entries however many jobs the service runs."""
        return self.outputs / output_prefix(collection, run)


def output_prefix(collection: str, run: Run) -> str:
    """Where a run's kept outputs go below the archive's ``outputs``, folder or bucket."""
    return f"{collection}/{run.job[:2]}/{run.job}/run-{run.index:04d}"


def output_item_id(job: str, run: int, name: str) -> str:
    """The catalogue id of output file ``name`` of run ``run`` of job ``job``."""
    return f"{job}-{run}-{name.replace('/', '_')}"


def input_items(run: Run, *, catalogue: Catalogue, owner: str) -> list[Item]:
    return [catalogue.get_item(ref.collection, ref.item, viewer=owner) for ref in run.inputs]


def stage(
    run: Run,
    job: Job,
    *,
    catalogue: Catalogue,
    places: Places,
    base_url: str,
    stores: ObjectStores | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Make every input readable to the run: a local file is shown to the sandbox read-only
    where it lies (no copy); a file in an object store (reached through ``stores``) or a
    layout archive bundle is copied beside the run's folder and verified
    (:func:`nearline.archive.fetch`). Returns job.json's ``inputs``."""
    cleanup(run, places=places)  # a restarted stage starts clean
    folder = places.staged_inputs(run)
    folder.mkdir(parents=True)
    staged: dict[str, list[dict[str, Any]]] = {}
    for ref, item in zip(
        run.inputs, input_items(run, catalogue=catalogue, owner=job.owner), strict=True
    ):
        asset = item.assets.get("data") or next(iter(item.assets.values()))
        path = fetch(asset, folder / ref.input, stores=stores)
        staged.setdefault(ref.input, []).append(
            {"path": str(path), "item": item_to_stac(item, base_url)}
        )
    return staged


def free_disk(places: Places) -> int:
    places.data.mkdir(parents=True, exist_ok=True)
    return shutil.disk_usage(places.data).free


def execute(
    run: Run,
    job: Job,
    algorithm: Algorithm,
    *,
    inputs: Mapping[str, list[dict[str, Any]]],
    places: Places,
    cancel: threading.Event,
    executor: Executor,
    clock: StageClock | None = None,
) -> tuple[Any, tuple[OutputFile, ...]]:
    """Run the algorithm on ``executor``; returns its outcome and, if it succeeded, the files
    it left. ``clock`` is told the run's stages where it ran, and ``outputs`` (hashing them)."""
    clock = clock if clock is not None else StageClock()
    places.log_of(run).parent.mkdir(parents=True, exist_ok=True)
    task = RunTask(
        run=run.id,
        algorithm=algorithm,
        job=job.id,
        inputs=inputs,
        parameters=job.parameters,
        folder=places.run_folder(run),
        limits=limits_of(algorithm, job),
        log=places.log_of(run),
    )
    waited = StageClock()
    with waited.stage("executor"):
        result = executor.run(task, cancel=cancel)
    wall, cpu = waited.stages["executor"]
    # the run's own stages where it ran; the executor's keeps what they do not explain
    clock.merge(result.stages)
    walls = sum(w for w, _ in result.stages.values())
    cpus = sum(c for name, (_, c) in result.stages.items() if name != "algorithm")  # the run's
    clock.add("executor", max(0.0, wall - walls), max(0.0, cpu - cpus))
    if not result.outcome.ok:
        return result.outcome, ()
    with clock.stage("outputs"):
        outputs = tuple(
            _describe_output(path, result.outputs_folder, algorithm) for path in result.output_files
        )
    return result.outcome, outputs


def limits_of(algorithm: Algorithm, job: Job) -> Limits:
    """What a run of ``job`` is held to: its manifest's resources; a built-in's order may ask
    tighter ones (an openEO batch job's ``job_options``), never looser, so admission, which
    holds the manifest's, still holds enough."""
    limits = limits_for(algorithm.manifest.resources)
    tighter = job.parameters.get(TIGHTER) if algorithm.owner == SERVICE_OWNER else None
    if not isinstance(tighter, Mapping):
        return limits
    disk = tighter.get("disk")
    return replace(
        limits,
        memory=min(limits.memory, int(tighter.get("memory", limits.memory))),
        wall_seconds=min(limits.wall_seconds, float(tighter.get("timeout", limits.wall_seconds))),
        disk=limits.disk if disk is None else min(limits.disk or int(disk), int(disk)),
    )


def _describe_output(path: Path, folder: Path, algorithm: Algorithm) -> OutputFile:
    name = path.relative_to(folder).as_posix()
    spec = next(
        (s for s in algorithm.manifest.outputs if fnmatch(name, s.pattern)),
        algorithm.manifest.outputs[0] if algorithm.manifest.outputs else None,
    )
    return OutputFile(
        name=name,
        output=spec.name if spec else "output",
        size=path.stat().st_size,
        sha256=sha256_of(path),
        media_type=spec.media_type if spec else "application/octet-stream",
    )


def ingest(
    run: Run,
    job: Job,
    algorithm: Algorithm,
    *,
    catalogue: Catalogue,
    places: Places,
    archive: ObjectArchive | None = None,
) -> list[Item]:
    """Move the run's outputs into the archive (the data folder's, or ``archive``'s bucket)
    and catalogue them, with provenance. Moving a file already moved is skipped, and items
    are upserted by id, so repeating is safe.

    Raises :class:`~nearline.errors.OutputsLost` if an output is neither in the bucket nor
    in this server's run folder (its run ended on a server that stopped before uploading)."""
    collection = algorithm.manifest.output_collection
    owner = None if algorithm.public else algorithm.owner
    try:
        found = catalogue.get_collection(collection, viewer=owner)
    except CollectionNotFound:
        try:
            catalogue.put_collection(
                Collection(
                    id=collection,
                    title=f"Outputs of {algorithm.manifest.title or algorithm.id}",
                    description=f"Files made by the algorithm {algorithm.id} for nearline's users.",
                    owner=owner,
                    properties={OUTPUTS_OF: algorithm.id},
                )
            )
        except Conflict:
            raise IngestError(
                f"the output collection {collection!r} is taken; give {algorithm.id} an output "
                "collection of its own in algorithm.yaml"
            ) from None
    else:
        if found.properties.get(OUTPUTS_OF) != algorithm.id:
            raise IngestError(
                f"the output collection {collection!r} holds other data (archive granules or "
                f"another algorithm's outputs); give {algorithm.id} an output collection of "
                "its own in algorithm.yaml"
            )
    sources = input_items(run, catalogue=catalogue, owner=job.owner)
    start = min(item.start for item in sources)
    end = max(item.end for item in sources)
    geometry, bbox = _union_footprint(sources)
    gridded = [_gridded_fields(run, output, algorithm, places) for output in run.outputs]
    locations = (
        _keep_in_bucket(run, collection, places, archive)
        if archive is not None
        else _keep_in_folder(run, collection, places)
    )
    items = []
    for output, location, grid in zip(run.outputs, locations, gridded, strict=True):
        items.append(
            Item(
                id=output_item_id(job.id, run.index, output.name),
                collection=collection,
                start=grid["start"] if grid else start,
                end=grid["end"] if grid else end,
                geometry=grid["geometry"] if grid else geometry,
                bbox=grid["bbox"] if grid else bbox,
                owner=job.owner,
                properties={
                    **(grid["properties"] if grid else {}),
                    "nearline:job": job.id,
                    "nearline:run": run.index,
                    "nearline:output": output.output,
                    "nearline:algorithm": {"id": algorithm.id, "version": algorithm.version},
                    "nearline:inputs": [f"{ref.collection}/{ref.item}" for ref in run.inputs],
                    "nearline:parameters": dict(job.parameters),
                    "nearline:usage": run.usage.to_dict() if run.usage else None,
                },
                assets={
                    "data": Asset(
                        location=location,
                        media_type=output.media_type,
                        size=output.size,
                        sha256=output.sha256,
                        title=output.name,
                    )
                },
            )
        )
    items.sort(key=lambda item: GRID_PROPERTY not in item.properties)  # composites first, so
    catalogue.add_items(items)  # they come before their quicklooks at the same time
    for item in items:
        log.info("output kept as item %s/%s", collection, item.id)
    return items


def _gridded_fields(
    run: Run, output: OutputFile, algorithm: Algorithm, places: Places
) -> dict | None:
    """A built-in algorithm's gridded output (a Pathfinder composite) as the catalogue
    describes a composite it ingests: its period, the grid's extent, ``nearline:grid`` and
    ``nearline:bands``, so the output collection offers coverages, EDR queries and map tiles.
    None for any other output. Only nearline's own algorithms' files are opened here, in the
    service: a stranger's file is never handed to the HDF5 library outside the sandbox."""
    if algorithm.owner != SERVICE_OWNER or algorithm.id in RUNS_USERS_CODE:
        return None
    path = places.run_folder(run) / "outputs" / output.name
    try:  # its SHA-256 was taken when the run ended: not read again
        fields = describe_file(path, sha256=output.sha256)
    except (GranuleError, OSError):
        return None  # not a granule nearline reads (a quicklook PNG)
    properties = fields["properties"]
    if GRID_PROPERTY not in properties:
        return None
    kept = {key: properties[key] for key in GRIDDED_PROPERTIES if key in properties}
    return {**{key: fields[key] for key in ("start", "end", "geometry", "bbox")},
            "properties": kept}  # fmt: skip


def _keep_in_folder(run: Run, collection: str, places: Places) -> list[str]:
    kept = places.output_folder(collection, run)
    kept.mkdir(parents=True, exist_ok=True)
    locations = []
    for output in run.outputs:
        source = places.run_folder(run) / "outputs" / output.name
        target = kept / output.name
        if source.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(source, target)
        locations.append(str(target))
    return locations


def _keep_in_bucket(run: Run, collection: str, places: Places, archive: ObjectArchive) -> list[str]:
    """Upload each output not already published whole; their URLs."""
    locations = []
    for output in run.outputs:
        source = places.run_folder(run) / "outputs" / output.name
        name = f"outputs/{output_prefix(collection, run)}/{output.name}"
        if not archive.holds(name, output.size):
            if not source.is_file():
                raise OutputsLost(
                    f"output {output.name} of run {run.index} is not in {archive.url} and "
                    "its run folder is on another server"
                )
            archive.keep(source, name)
        locations.append(archive.location(name))
    return locations


def _union_footprint(items: list[Item]) -> tuple[dict[str, Any] | None, Any]:
    """The footprint of a run's outputs: the union of its inputs' footprints."""
    union = union_footprints([item.geometry for item in items if item.geometry is not None])
    return union if union is not None else (None, None)


def cleanup(run: Run, *, places: Places) -> None:
    """Remove the run's working folder and its staged inputs (its outputs, if it had any,
    were moved to the archive or are not kept)."""
    shutil.rmtree(places.run_folder(run), ignore_errors=True)
    shutil.rmtree(places.staged_inputs(run), ignore_errors=True)
