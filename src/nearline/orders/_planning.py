"""From an execute request to runs: find each data input's granules, check the parameters,
and split the granules into runs of at most the algorithm's maximum input count.

NADM took one input file and gave one output file per run, the deficiency the S4PM-DM paper
names; here every data input takes between its ``min_count`` and ``max_count`` granules, and
an order over more than ``max_count`` becomes several runs of the same algorithm.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema

from nearline.algorithms import Algorithm, InputSpec
from nearline.archive import Catalogue, Item, Search, parse_search
from nearline.errors import InvalidRequest, OrderError
from nearline.orders._base import InputRef

MAX_GRANULES = 100_000  # per order: past this, order by period or narrow the search


@dataclass(frozen=True)
class OrderPlan:
    """What an order will do: its checked parameters and each run's input granules."""

    parameters: Mapping[str, Any]
    runs: tuple[tuple[InputRef, ...], ...]
    items: Mapping[tuple[str, str], Item]  # (collection, id) -> item, for every input


def split_body(
    algorithm: Algorithm, body: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The execute body's ``inputs`` split into (data inputs, parameters)."""
    if not isinstance(body, Mapping):
        raise OrderError("the execute request must be a JSON object with an `inputs` object")
    given = body.get("inputs", {})
    if not isinstance(given, Mapping):
        raise OrderError("`inputs` must be an object of input names to values")
    data_names = {spec.name for spec in algorithm.manifest.inputs}
    data = {name: value for name, value in given.items() if name in data_names}
    parameters = {name: value for name, value in given.items() if name not in data_names}
    return data, parameters


def check_parameters(algorithm: Algorithm, parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` validated against the algorithm's schema, defaults filled in."""
    schema = dict(algorithm.manifest.parameters)
    known = set(schema.get("properties", {}))
    unknown = sorted(set(parameters) - known)
    if unknown:  # a misspelt parameter silently ignored would run the wrong science
        names = sorted(known | {spec.name for spec in algorithm.manifest.inputs})
        raise OrderError(
            f"process {algorithm.id} has no input {unknown[0]!r}; its inputs are {', '.join(names)}"
        )
    filled = {
        name: prop["default"]
        for name, prop in schema.get("properties", {}).items()
        if isinstance(prop, Mapping) and "default" in prop
    }
    filled.update(parameters)
    try:
        jsonschema.validate(filled, schema)
    except jsonschema.ValidationError as error:
        where = ".".join(str(p) for p in error.absolute_path) or "inputs"
        raise OrderError(f"input {where}: {error.message}") from None
    return filled


def find_inputs(spec: InputSpec, value: Any, *, catalogue: Catalogue, owner: str) -> list[Item]:
    """The granules a data input names: ``{"ids": [...]}`` or a search
    ``{"collections": [...], "bbox": [...], "datetime": "...", "intersects": {...}}``."""
    if not isinstance(value, Mapping):
        raise OrderError(
            f"input {spec.name}: expected an object such as "
            f'{{"collections": ["{spec.collection}"], "bbox": [...], "datetime": "..."}} '
            'or {"ids": [...]}'
        )
    collections = _collections(spec, value)
    if not spec.any_collection and collections != [spec.collection]:
        raise OrderError(
            f"input {spec.name} takes granules of collection {spec.collection!r}; "
            f"got collections {collections!r}"
        )
    if "ids" in value and value["ids"] == []:
        return []  # no granules named: the minimum count says whether that will do
    query = {key: item for key, item in value.items() if key != "collections"}
    unknown = sorted(set(query) - {"ids", "bbox", "datetime", "intersects"})
    if unknown:
        raise OrderError(
            f"input {spec.name}: unknown key {unknown[0]!r}; use ids, bbox, datetime, intersects"
        )
    try:
        search = parse_search({**query, "collections": collections}, viewer=owner, dates=True)
    except InvalidRequest as error:
        raise OrderError(f"input {spec.name}: {error}") from None
    return list(_all_pages(catalogue, search, spec.name))


def _collections(spec: InputSpec, value: Mapping[str, Any]) -> list[Any]:
    """The collections a data input searches: its own, or for an input of any collection
    (``"*"``) those the order names, which it must."""
    if not spec.any_collection:
        return list(value.get("collections", [spec.collection]))
    named = value.get("collections")
    if (
        not isinstance(named, list)
        or not named
        or not all(isinstance(name, str) and name for name in named)
    ):
        raise OrderError(
            f"input {spec.name} takes granules of any collection: name them, as "
            '{"collections": ["avhrr-gac"], "bbox": [...], "datetime": "..."} or '
            '{"collections": ["avhrr-gac"], "ids": [...]}'
        )
    return named


def _all_pages(catalogue: Catalogue, search: Search, name: str) -> list[Item]:
    items: list[Item] = []
    token = None
    while True:
        page = catalogue.search(Search(**{**search.__dict__, "limit": 10_000, "token": token}))
        items += page.items
        if len(items) > MAX_GRANULES:
            raise OrderError(
                f"input {name}: the search finds more than {MAX_GRANULES:,} granules; "
                "narrow its bbox or datetime and order in parts"
            )
        token = page.next_token
        if token is None:
            return items


def plan_order(
    algorithm: Algorithm,
    body: Mapping[str, Any],
    *,
    catalogue: Catalogue,
    owner: str,
    find: Callable[..., list[Item]] = find_inputs,
) -> OrderPlan:
    """Check an execute request against ``algorithm`` and cut it into runs."""
    data, parameters = split_body(algorithm, body)
    checked = check_parameters(algorithm, parameters)
    found: dict[str, list[Item]] = {}
    for spec in algorithm.manifest.inputs:
        if spec.name not in data:
            raise OrderError(
                f"input {spec.name} is required: granules of collection {spec.collection!r}, "
                'as {"collections": [...], "bbox": [...], "datetime": "..."} or {"ids": [...]}'
            )
        items = find(spec, data[spec.name], catalogue=catalogue, owner=owner)
        if len(items) < spec.min_count:
            raise OrderError(
                f"input {spec.name} needs at least {spec.min_count} granule(s) of "
                f"{spec.collection!r}; the order names {len(items)}"
            )
        found[spec.name] = sorted(items, key=lambda item: (item.start, item.id))
    runs = _split(algorithm.manifest.inputs, found)
    every = {(item.collection, item.id): item for items in found.values() for item in items}
    return OrderPlan(parameters=checked, runs=runs, items=every)


def _split(
    specs: tuple[InputSpec, ...], found: Mapping[str, list[Item]]
) -> tuple[tuple[InputRef, ...], ...]:
    """Runs: the one input over its maximum is cut into pieces (in time order, as even as
    the maximum allows); every other input goes whole to every run."""
    over = [s for s in specs if s.max_count is not None and len(found[s.name]) > s.max_count]
    if len(over) > 1:
        raise OrderError(
            f"inputs {over[0].name} and {over[1].name} both hold more granules than one run "
            "takes; order them in separate parts"
        )
    pieces: list[dict[str, list[Item]]] = [dict(found)]
    if over:
        spec = over[0]
        items = found[spec.name]
        count = -(-len(items) // spec.max_count)
        sizes = [len(items) // count + (index < len(items) % count) for index in range(count)]
        edges = [sum(sizes[:index]) for index in range(count + 1)]
        pieces = [
            {**found, spec.name: items[edges[index] : edges[index + 1]]} for index in range(count)
        ]
    return tuple(
        tuple(
            InputRef(input=name, collection=item.collection, item=item.id)
            for name, items in piece.items()
            for item in items
        )
        for piece in pieces
    )
