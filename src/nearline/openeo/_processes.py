"""The predefined processes the openEO face lists: exactly the set a typical openEO script
uses and nearline will run (issue 41), each with its official specification, shipped beside
this module (``specs/``, see its NOTICE) and served unchanged, as clients and the openEO test
suite's process-metadata checks expect."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

# In the order /processes lists them: loading and cutting, reducing, mapping, writing.
PROCESS_IDS = (
    "load_collection",
    "filter_bbox",
    "filter_temporal",
    "filter_bands",
    "reduce_dimension",
    "mean",
    "median",
    "max",
    "min",
    "sum",
    "count",
    "aggregate_temporal_period",
    "apply",
    "ndvi",
    "linear_scale_range",
    "resample_spatial",
    "merge_cubes",
    "mask",
    "save_result",
    "run_udf",
)


@cache
def _spec(process_id: str) -> str:
    return (files("nearline.openeo") / "specs" / f"{process_id}.json").read_text()


def process_spec(process_id: str) -> dict[str, Any]:
    """The official specification of ``process_id`` (a fresh copy: callers may change it).

    Parameters
    ----------
    process_id
        One of :data:`PROCESS_IDS`.

    Returns
    -------
    dict
        The process's JSON document as openeo-processes publishes it.
    """
    return json.loads(_spec(process_id))


def process_list(base: str) -> dict[str, Any]:
    """The body of ``GET /processes``: every listed process and a link to itself.

    Parameters
    ----------
    base
        The openEO face's root URL (``.../openeo/1.2``).
    """
    return {
        "processes": [process_spec(process_id) for process_id in PROCESS_IDS],
        "links": [{"rel": "self", "type": "application/json", "href": f"{base}/processes"}],
    }
