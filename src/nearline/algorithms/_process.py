"""A manifest as an OGC API - Processes process description (Part 1, section 7.11).

Each data input becomes one OGC input whose value selects granules, by search
(``{"collections", "bbox", "datetime", "intersects"}``) or by id (``{"ids": [...]}``); each
property of the parameters schema becomes an OGC input of its own, with its JSON Schema; each
output is a file the job leaves, delivered by reference (a link to a catalogue item's asset).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nearline.algorithms._base import InputSpec, Manifest, OutputSpec

JOB_CONTROL = ["sync-execute", "async-execute", "dismiss"]
OUTPUT_TRANSMISSION = ["reference"]


def manifest_to_process(manifest: Manifest) -> dict[str, Any]:
    """The OGC API - Processes description of an algorithm.

    Parameters
    ----------
    manifest
        The algorithm's manifest: its data inputs become inputs that take a search or item
        ids, and each of its parameters an input of its own.

    Returns
    -------
    dict
        The process description, without links (the API adds those).
    """
    inputs = {spec.name: _data_input(spec) for spec in manifest.inputs}
    schema = manifest.parameters
    required = set(schema.get("required", ()))
    for name, prop in schema.get("properties", {}).items():
        prop = prop if isinstance(prop, Mapping) else {}
        inputs[name] = {
            "title": prop.get("title", name),
            "description": prop.get("description", ""),
            "minOccurs": 1 if name in required and "default" not in prop else 0,
            "maxOccurs": 1,
            "schema": dict(prop),
        }
    return {
        "id": manifest.id,
        "version": manifest.version,
        "title": manifest.title,
        "description": manifest.description,
        "keywords": sorted({spec.collection for spec in manifest.inputs}),
        "jobControlOptions": list(JOB_CONTROL),
        "outputTransmission": list(OUTPUT_TRANSMISSION),
        "inputs": inputs,
        "outputs": {spec.name: _output(spec) for spec in manifest.outputs},
        "nearline:collection": manifest.output_collection,
    }


def _data_input(spec: InputSpec) -> dict[str, Any]:
    most = "no maximum" if spec.max_count is None else f"at most {spec.max_count}"
    collections: dict[str, Any] = {
        "type": "array",
        "items": {"type": "string", "enum": [spec.collection]},
        "minItems": 1,
        "maxItems": 1,
        "default": [spec.collection],
    }
    if spec.any_collection:  # granules of whichever collections the order names
        collections = {"type": "array", "items": {"type": "string"}, "minItems": 1}
    by_search = {
        "type": "object",
        "title": "granules found by a search",
        **({"required": ["collections"]} if spec.any_collection else {}),
        "properties": {
            "collections": collections,
            "bbox": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 4,
                "maxItems": 4,
                "description": "west, south, east, north in degrees (west > east crosses 180)",
            },
            "datetime": {
                "type": "string",
                "description": "an RFC 3339 instant or interval 'start/end' ('..' leaves an end "
                "open)",
            },
            "intersects": {"type": "object", "description": "a GeoJSON geometry"},
        },
        "additionalProperties": False,
    }
    by_id = {
        "type": "object",
        "title": "granules named by item id",
        "required": ["collections", "ids"] if spec.any_collection else ["ids"],
        "properties": {
            "collections": collections,
            "ids": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        },
        "additionalProperties": False,
    }
    whose = "any collection the order names" if spec.any_collection else spec.collection
    description = spec.description or f"granules of the collection {whose}"
    return {
        "title": spec.name,
        "description": f"{description} ({spec.min_count} or more per run, {most}; an order over "
        "more is split into several runs)",
        "minOccurs": 1,
        "maxOccurs": 1,
        "schema": {"oneOf": [by_search, by_id]},
        "nearline:collection": spec.collection,
        "nearline:granules": {"min": spec.min_count, "max": spec.max_count},
    }


def _output(spec: OutputSpec) -> dict[str, Any]:
    return {
        "title": spec.name,
        "description": spec.description or f"files matching {spec.pattern}",
        "schema": {
            "type": "string",
            "contentMediaType": spec.media_type,
            "contentEncoding": "binary",
        },
        "nearline:pattern": spec.pattern,
    }
