"""Subscriptions: a saved catalogue search, an algorithm and a policy, so that every newly
ingested granule the search matches runs the algorithm, as S4PM-DM's subscriptions "initiate
the algorithm whenever the appropriate inputs are available".

This module holds the nouns and how a subscription's body (``POST /subscriptions``, or
``nearline subscriptions add``) is read; _store.py keeps them, _operations.py is what
the API and the CLI call, _trigger_loop.py is the loop that triggers them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from nearline.algorithms import Algorithm
from nearline.archive import BBox, Item, Search, parse_datetime, parse_search
from nearline.errors import InvalidRequest, SearchError
from nearline.orders._planning import check_parameters, split_body
from nearline.orders.subscriptions._policies import Policy, parse_policy
from nearline.orders.subscriptions._schema import SUBSCRIPTION, URL

FIELDS = ("process", "input", "search", "parameters", "policy", "subscriber", "version")
SEARCH_KEYS = ("collections", "bbox", "intersects", "datetime", "properties")
SCALARS = (str, int, float, bool)
_SCHEMA = Draft202012Validator(SUBSCRIPTION)


class RunKind(StrEnum):
    """Why a subscription's job was made."""

    NEW = "new"  # granules ingested after the subscription was made
    BACKFILL = "backfill"  # granules the archive held already
    REPROCESS = "reprocess"  # an older version's inputs, run again with a newer version


class RunState(StrEnum):
    """Where a subscription's job is. PLANNED: its granules are claimed and its job id chosen,
    but the job is not made yet (made at the next turn of the loop, also after a restart)."""

    PLANNED = "planned"
    SUBMITTED = "submitted"
    REFUSED = "refused"  # the order was refused (message says why); its granules stay claimed
    ENDED = "ended"


@dataclass(frozen=True)
class SavedSearch:
    """A STAC search kept with a subscription: ``collections``, ``bbox`` or ``intersects``,
    ``datetime``, and ``properties``, a filter of item properties by equality: each named
    property equals the value given (or, given a list, one of its values)."""

    collections: tuple[str, ...]
    bbox: BBox | None = None
    intersects: Mapping[str, Any] | None = None
    datetime: str | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, value: Any, *, collection: str, what: str = "search") -> SavedSearch:
        """``value`` from a body, for an input that takes granules of ``collection``."""
        if not isinstance(value, Mapping):
            raise InvalidRequest(
                f'{what}: expected an object such as {{"collections": ["{collection}"], '
                '"bbox": [...], "datetime": "..."}'
            )
        unknown = sorted(set(value) - set(SEARCH_KEYS))
        if unknown:
            raise InvalidRequest(
                f"{what}: unknown key {unknown[0]!r}; use {', '.join(SEARCH_KEYS)}"
            )
        collections = value.get("collections", [collection])
        if collections != [collection]:
            raise InvalidRequest(
                f"{what}.collections: the input takes granules of collection {collection!r}; "
                f"got {collections!r}"
            )
        given = {key: value[key] for key in ("bbox", "intersects", "datetime") if key in value}
        try:
            checked = parse_search(given, viewer=None, dates=True)
        except SearchError as error:
            raise InvalidRequest(f"{what}.{error}") from None
        properties = value.get("properties", {})
        if not isinstance(properties, Mapping) or not all(
            isinstance(v, SCALARS)
            or (isinstance(v, list) and all(isinstance(x, SCALARS) for x in v))
            for v in properties.values()
        ):
            raise InvalidRequest(
                f"{what}.properties: expected an object of property names to values, such as "
                '{"platform": "noaa19"} (a list of values: any of them)'
            )
        return cls(
            collections=(collection,),
            bbox=checked.bbox,
            intersects=checked.intersects,
            datetime=value.get("datetime") or None,
            properties=dict(properties),
        )

    def interval(self) -> tuple[datetime | None, datetime | None]:
        """The datetime's (start, end); None where it is open."""
        given = self.datetime is not None
        return parse_datetime(self.datetime, dates=True) if given else (None, None)

    def reaches_past(self, now: datetime) -> bool:
        """Whether the search's datetime starts before ``now``: the archive may hold granules
        it matches already (a backfill). Without a datetime, only new granules count."""
        if self.datetime is None:
            return False
        start, _ = self.interval()
        return start is None or start < now

    def to_search(
        self,
        *,
        viewer: str,
        ids: tuple[str, ...] | None = None,
        token: str | None = None,
        limit: int = 10_000,
    ) -> Search:
        start, end = self.interval()
        return Search(
            collections=self.collections,
            ids=ids,
            bbox=self.bbox,
            intersects=self.intersects,
            start=start,
            end=end,
            limit=limit,
            token=token,
            viewer=viewer,
        )

    def accepts(self, item: Item) -> bool:
        """Whether ``item``'s properties pass the property filter."""
        for name, wanted in self.properties.items():
            have = item.properties.get(name)
            if not (have in wanted if isinstance(wanted, list) else have == wanted):
                return False
        return True

    def to_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"collections": list(self.collections)}
        if self.bbox is not None:
            shown["bbox"] = list(self.bbox)
        if self.intersects is not None:
            shown["intersects"] = dict(self.intersects)
        if self.datetime is not None:
            shown["datetime"] = self.datetime
        if self.properties:
            shown["properties"] = dict(self.properties)
        return shown


@dataclass(frozen=True)
class Subscriber:
    """OGC API - Processes' subscriber: where to POST a job's statusInfo when it ends."""

    success_uri: str | None = None
    failed_uri: str | None = None

    @classmethod
    def parse(cls, value: Any) -> Subscriber:
        if not isinstance(value, Mapping) or not value:
            raise InvalidRequest(
                'subscriber: expected {"successUri": URL, "failedUri": URL} (either or both)'
            )
        for key in value:
            if key == "inProgressUri":
                raise InvalidRequest(
                    "subscriber.inProgressUri: not supported; nearline calls successUri and "
                    "failedUri when a job ends"
                )
            if key not in ("successUri", "failedUri"):
                raise InvalidRequest(f"subscriber: unknown key {key!r}; use successUri, failedUri")
            url = value[key]
            if not isinstance(url, str) or not re.fullmatch(URL.strip("^$"), url):
                raise InvalidRequest(f"subscriber.{key}: expected an http(s) URL, got {url!r}")
        return cls(success_uri=value.get("successUri"), failed_uri=value.get("failedUri"))

    def to_dict(self) -> dict[str, str]:
        shown = {"successUri": self.success_uri, "failedUri": self.failed_uri}
        return {key: url for key, url in shown.items() if url is not None}


@dataclass(frozen=True)
class Subscription:
    """A subscription, as kept: what it runs, on what, when; and how far it has read the
    catalogue's changes (``read_to``), its backfill and the latest granule start it saw."""

    id: str
    owner: str
    process: str
    input: str
    search: SavedSearch
    policy: Policy
    created: datetime
    parameters: Mapping[str, Any] = field(default_factory=dict)
    version: str | None = None  # pinned; None: the latest version at trigger time
    subscriber: Subscriber | None = None
    read_to: int = 0  # the catalogue position its changes were read up to
    backfill: str = "none"  # none | reading | done
    backfill_token: str | None = None  # the next page of the backfill's search
    backfill_until: datetime | None = None  # the latest start the backfill has read
    latest: datetime | None = None  # the latest start of a granule it matched

    def to_dict(self) -> dict[str, Any]:
        """The subscription as the API shows it (without its runs)."""
        shown: dict[str, Any] = {
            "id": self.id,
            "process": self.process,
            "version": self.version,
            "input": self.input,
            "search": self.search.to_dict(),
            "parameters": dict(self.parameters),
            "policy": self.policy.to_dict(),
            "created": self.created.isoformat().replace("+00:00", "Z"),
            "backfill": self.backfill,
        }
        if self.subscriber is not None:
            shown["subscriber"] = self.subscriber.to_dict()
        return shown


@dataclass(frozen=True)
class SubscriptionRun:
    """One job a subscription made (or is about to make), with the granules it runs on."""

    job: str
    subscription: str
    version: str
    kind: RunKind
    state: RunState
    granules: tuple[str, ...]  # collection/item
    created: datetime
    note: str | None = None  # what the job's message says (a partial period ...)
    message: str | None = None  # why the order was refused
    status: str | None = None  # the job's status once it ended
    callback: str | None = None  # how its callback went


def parse_subscription(
    body: Any, *, owner: str, find: Callable[[str, str | None], Algorithm]
) -> Subscription:
    """A new subscription of ``owner`` from a body; every refusal names the field.
    ``find(process, version)`` is the algorithm ``owner`` may order (AlgorithmNotFound)."""
    if not isinstance(body, Mapping):
        raise InvalidRequest("the body must be a JSON object: a subscription")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise InvalidRequest(
            f"unknown field {unknown[0]!r}; a subscription has {', '.join(FIELDS)}"
        )
    process, version = body.get("process"), body.get("version")
    if not isinstance(process, str) or not process:
        raise InvalidRequest("process: required, the id of a process you may order")
    if version is not None and (not isinstance(version, str) or not version):
        raise InvalidRequest("version: expected a version of the process, such as '1.0'")
    algorithm = find(process, version)  # AlgorithmNotFound: a 404, as the process's own URL
    names = [spec.name for spec in algorithm.manifest.inputs]
    name = body.get("input", names[0] if len(names) == 1 else None)
    if name not in names:
        raise InvalidRequest(
            f"input: expected the name of one of {process}'s data inputs ({', '.join(names)}), "
            f"got {name!r}"
        )
    spec = next(spec for spec in algorithm.manifest.inputs if spec.name == name)
    search = SavedSearch.parse(body.get("search", {}), collection=spec.collection)
    if "policy" not in body:
        raise InvalidRequest('policy: required, such as {"each": 1}')
    policy = parse_policy(body["policy"])
    parameters = _parameters(algorithm, name, body.get("parameters", {}))
    subscriber = Subscriber.parse(body["subscriber"]) if "subscriber" in body else None
    _check(body)
    return Subscription(
        id=uuid.uuid4().hex,
        owner=owner,
        process=algorithm.id,
        version=version,
        input=name,
        search=search,
        policy=policy,
        created=datetime.now(UTC),
        parameters=parameters,
        subscriber=subscriber,
    )


def _check(body: Mapping[str, Any]) -> None:
    """Whatever the checks above let through is held to the published schema as well."""
    error = best_match(_SCHEMA.iter_errors(body))
    if error is not None:
        where = ".".join(str(part) for part in error.absolute_path) or "the body"
        raise InvalidRequest(f"{where}: {error.message[:300]}")


def _parameters(algorithm: Algorithm, input_name: str, value: Any) -> dict[str, Any]:
    """The order's other inputs: parameters, and any other data input (as ids or a search),
    checked against the algorithm as an order's would be."""
    if not isinstance(value, Mapping):
        raise InvalidRequest("parameters: expected an object of input names to values")
    if input_name in value:
        raise InvalidRequest(
            f"parameters.{input_name}: the subscription fills this input with the granules "
            "it matches; leave it out"
        )
    data, plain = split_body(algorithm, {"inputs": dict(value)})
    for spec in algorithm.manifest.inputs:
        if spec.name != input_name and spec.name not in data:
            raise InvalidRequest(
                f"parameters.{spec.name}: required, the granules of {spec.collection!r} every "
                'job takes beside the matched ones, as {"ids": [...]} or a search'
            )
    try:
        check_parameters(algorithm, plain)
    except InvalidRequest as error:
        raise InvalidRequest(f"parameters: {error}") from None
    return dict(value)
