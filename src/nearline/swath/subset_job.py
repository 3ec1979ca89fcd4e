"""The built-in ``subset`` process's program: ``python -m nearline.swath.subset_job``.

It follows the runtime contract of every deployed algorithm (docs/algorithms.md): read the
``job.json`` that ``NEARLINE_JOB`` names, cut each staged ``granules`` file with
:func:`~nearline.swath.subset_granule` to the job's ``variables``, ``bbox`` and ``datetime``,
and leave the cut files in the outputs folder. A granule none of whose lines lie in the box
and window gives no file and a line in the log (a search by footprint finds granules whose
pixels only come near the box); a run none of whose granules gives one fails, as does any
request the granules cannot answer (a reversed box, an unknown variable).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nearline.errors import NearlineError, SubsetEmpty, SubsetError
from nearline.swath._subset import SubsetRequest, SubsetResult, subset_granule

log = logging.getLogger("nearline.swath.subset_job")
INPUT = "granules"


def run_job(job: Mapping[str, Any]) -> list[SubsetResult]:
    """Cut the job's granules into its outputs folder; the cuts made, in input order.

    Raises
    ------
    SubsetError
        The request is wrong for these granules, or none of them holds a line in it.
    """
    request = SubsetRequest.from_dict(job.get("parameters") or {})
    outputs = Path(job["outputs"])
    made, empty = [], []
    for entry in job["inputs"].get(INPUT, []):
        source = Path(entry["path"])
        try:
            made.append(subset_granule(source, outputs, request))
        except SubsetEmpty as error:
            log.warning("%s", error)
            empty.append(str(error))
    if not made:
        raise SubsetEmpty(
            "no granule of the run holds a line in the box and window: "
            + ("; ".join(empty) or f"job.json has no {INPUT!r} input")
        )
    return made


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job ``NEARLINE_JOB`` names (or the job file given as the one argument)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    args = list(sys.argv[1:] if argv is None else argv)
    path = args[0] if args else os.environ.get("NEARLINE_JOB")
    if not path:
        print("nearline.swath.subset_job: set NEARLINE_JOB to the job.json to run", file=sys.stderr)
        return 2
    try:
        made = run_job(json.loads(Path(path).read_text()))
    except (SubsetError, NearlineError, OSError, KeyError, ValueError) as error:
        print(f"nearline.swath.subset_job: error: {error}", file=sys.stderr)
        return 1
    for result in made:
        log.info("%s: lines %d to %d of %d", result.path.name, result.first, result.stop - 1,
                 result.source_rows)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
