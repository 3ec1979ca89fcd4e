"""The built-in openEO batch job's program: ``python -m nearline.openeo.job``.

It follows the runtime contract of every deployed algorithm (docs/algorithms.md): the
``job.json`` that ``NEARLINE_JOB`` names holds the process graph (``parameters``) and the
staged files of the items its ``load_collection`` calls read (``inputs.items``, each with its
STAC item: collection, grid, period). It runs the graph with :func:`~nearline.openeo.run_graph`,
UDFs in this very process (the run is the sandbox), and leaves what ``save_result`` wrote in
the outputs folder. Each line it logs starts with its level, which the openEO face's
``/jobs/{id}/logs`` reads back.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from nearline.coverage import Layer
from nearline.errors import OpenEOError
from nearline.openeo._graph import check_graph
from nearline.openeo._load import Stack
from nearline.openeo._run import Run, run_graph
from nearline.openeo._save import Saved
from nearline.openeo._udf import run_udf_in_process

log = logging.getLogger("nearline.openeo.job")
INPUT = "items"
GRID = "nearline:grid"
LOG_FORMAT = "%(levelname)s %(message)s"  # the level first: /jobs/{id}/logs reads it back
BYTES_PER_VALUE = 16  # a float32 value read, with what the processes make of it


def stacks_of(entries: Sequence[Mapping[str, Any]]) -> dict[str, Stack]:
    """The staged files as each collection's stack, in time order.

    Parameters
    ----------
    entries
        ``job.json``'s ``inputs.items``: each a ``path`` and its STAC ``item``.
    """
    layers: dict[tuple[str, str], list[Layer]] = {}
    for entry in entries:
        item = entry["item"]
        properties = item.get("properties") or {}
        key = (str(item["collection"]), str(properties[GRID]))
        start = _moment(properties.get("start_datetime") or properties["datetime"])
        end = _moment(properties.get("end_datetime") or properties.get("datetime")) or start
        path = str(entry["path"])
        layers.setdefault(key, []).append(
            Layer(str(item["id"]), start, end, partial(open, path, "rb"))
        )
    return {
        collection: Stack(collection, grid, tuple(sorted(found, key=lambda layer: layer.start)))
        for (collection, grid), found in layers.items()
    }


def _moment(text: str | None) -> datetime:
    moment = datetime.fromisoformat(str(text))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def run_job(job: Mapping[str, Any], *, env: Mapping[str, str] | None = None) -> list[Saved]:
    """Run the job's graph on its staged items into its outputs folder.

    Parameters
    ----------
    job
        ``job.json``.
    env
        The run's environment (``NEARLINE_MEMORY`` bounds the values a read may hold).

    Returns
    -------
    list of Saved
        The files written.

    Raises
    ------
    OpenEOError
        The graph refused, or a process (a UDF among them) failed.
    """
    env = os.environ if env is None else env
    graph = job["parameters"]["process_graph"]
    check_graph(graph)
    memory = int(env.get("NEARLINE_MEMORY", str(2 * 1024**3)))
    run = Run(stacks=stacks_of(job["inputs"].get(INPUT, [])), folder=Path(job["outputs"]),
              max_values=max(1, memory // BYTES_PER_VALUE), udf=run_udf_in_process)  # fmt: skip
    return run_graph(graph, run)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job ``NEARLINE_JOB`` names (or the job file given as the one argument)."""
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    args = list(sys.argv[1:] if argv is None else argv)
    path = args[0] if args else os.environ.get("NEARLINE_JOB")
    if not path:
        log.error("nearline.openeo.job: set NEARLINE_JOB to the job.json to run")
        return 2
    try:
        saved = run_job(json.loads(Path(path).read_text()))
    except OpenEOError as error:
        log.error("%s: %s", error.openeo_code, error)
        return 1
    except MemoryError:
        log.error("ProcessGraphComplexity: the job ran out of memory; ask for less (a smaller "
                  "box, fewer times or bands) or more memory in the job's options")  # fmt: skip
        return 1
    for file in saved:
        log.info("saved %s (%s, %d bytes)", file.path.name, file.format, file.path.stat().st_size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
