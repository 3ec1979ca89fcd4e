"""``nearline subscriptions add|list|remove``: subscriptions managed on the service's data
folder directly (no server needed; a running one picks them up within a second), as the web
API's POST/GET/DELETE /subscriptions do.

``--data`` (or ``NEARLINE_DATA``, default ./nearline-data) is the service's data folder;
``--user`` (or ``NEARLINE_USER``, default the login name) is whose subscriptions they are.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nearline.cli._options import data_folder, state_options, user_of
from nearline.errors import InvalidRequest


def add_subscriptions_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``subscriptions {add,list,remove}`` to ``subparsers``."""
    options = state_options("whose subscriptions")
    parser = options.family(
        subparsers,
        "subscriptions",
        description="Manage the subscriptions of a nearline service's data folder: each runs "
        "a process on the granules a saved search finds as they are ingested (and, for a "
        "datetime reaching into the past, on those the archive holds already).",
    )
    actions = parser.add_subparsers(dest="action", required=True)

    add = options.verb(actions, "add", help="subscribe a process")
    add.add_argument("process", help="the process (algorithm) id")
    add.add_argument("--input", default=None, help="its data input the granules go to "
                     "(default: its only one)")  # fmt: skip
    add.add_argument("--collections", default=None, help="the search's collection")
    add.add_argument("--bbox", default=None, help="west,south,east,north")
    add.add_argument("--intersects", default=None, help="a GeoJSON geometry")
    add.add_argument("--datetime", default=None, help="an instant or interval (RFC 3339); "
                     "one starting in the past also runs over what the archive holds")  # fmt: skip
    add.add_argument("--property", action="append", default=[], metavar="NAME=VALUE",
                     help="only items whose property NAME equals VALUE (repeatable)")  # fmt: skip
    add.add_argument("--parameters", default=None, help="the other inputs, as a JSON object")
    policy = add.add_mutually_exclusive_group(required=True)
    policy.add_argument("--each", action="store_true", help="run each granule alone")
    policy.add_argument("--batch", type=int, default=None, help="run N granules at a time")
    policy.add_argument("--period", default=None, help="run once per period, such as P1D")
    add.add_argument("--deadline", default=None, help="with --period: run a period still "
                     "incomplete this long after its end, such as PT6H")  # fmt: skip
    add.add_argument("--version", default=None, help="pin a version (default: the newest)")
    add.add_argument("--success-uri", default=None, help="POST each successful job's status")
    add.add_argument("--failed-uri", default=None, help="POST each failed job's status")
    add.set_defaults(func=_add)

    listing = options.verb(actions, "list", help="list your subscriptions")
    listing.set_defaults(func=_list)

    remove = options.verb(actions, "remove", help="unsubscribe")
    remove.add_argument("id", help="the subscription id")
    remove.set_defaults(func=_remove)
    return parser


@contextmanager
def _subscriptions(args: argparse.Namespace) -> Iterator[Any]:
    from nearline.algorithms import AlgorithmRegistry
    from nearline.archive import open_catalogue
    from nearline.db import database_url, open_database
    from nearline.orders import Subscriptions, SubscriptionStore

    data = data_folder(args)
    data.mkdir(parents=True, exist_ok=True)
    url = database_url(args.db)
    with (
        open_database(url, data / "service.db") as database,
        open_catalogue(url, data / "catalogue.db", database=database) as catalogue,
        AlgorithmRegistry(data, database=database if url else None) as algorithms,
    ):
        yield Subscriptions(
            store=SubscriptionStore(database), algorithms=algorithms, catalogue=catalogue
        )


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise InvalidRequest(f"{what}: expected JSON, got {text!r}") from None


def body_of(args: argparse.Namespace) -> dict[str, Any]:
    """The POST /subscriptions body the options stand for."""
    search: dict[str, Any] = {}
    if args.collections:
        search["collections"] = args.collections.split(",")
    if args.bbox:
        from nearline.archive import query_values  # the catalogue's room: only when asked

        search["bbox"] = query_values({"bbox": args.bbox})["bbox"]
    if args.intersects:
        search["intersects"] = _json(args.intersects, "--intersects")
    if args.datetime:
        search["datetime"] = args.datetime
    for text in args.property:
        name, sep, value = text.partition("=")
        if not sep or not name:
            raise InvalidRequest(f"--property: expected NAME=VALUE, got {text!r}")
        try:
            search.setdefault("properties", {})[name] = json.loads(value)
        except json.JSONDecodeError:
            search.setdefault("properties", {})[name] = value
    if args.each:
        policy: dict[str, Any] = {"each": 1}
    elif args.batch is not None:
        policy = {"batch": args.batch}
    else:
        policy = {"period": args.period}
        if args.deadline:
            policy["deadline"] = args.deadline
    if args.deadline and args.period is None:
        raise InvalidRequest("--deadline: goes with --period")
    body: dict[str, Any] = {"process": args.process, "search": search, "policy": policy}
    for key, value in (("input", args.input), ("version", args.version)):
        if value is not None:
            body[key] = value
    if args.parameters:
        body["parameters"] = _json(args.parameters, "--parameters")
    subscriber = {
        key: url
        for key, url in (("successUri", args.success_uri), ("failedUri", args.failed_uri))
        if url
    }
    if subscriber:
        body["subscriber"] = subscriber
    return body


def _add(args: argparse.Namespace) -> int:
    body = body_of(args)
    with _subscriptions(args) as subscriptions:
        subscription = subscriptions.create(body, owner=user_of(args))
    print(subscription.id)  # alone on stdout, for scripts
    also = ", and those the archive holds" if subscription.backfill == "reading" else ""
    print(f"subscribed {subscription.process} to new granules{also}", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace) -> int:
    user = user_of(args)
    with _subscriptions(args) as subscriptions:
        rows = [("ID", "PROCESS", "VERSION", "POLICY", "JOBS", "WAITING", "SEARCH")]
        for s in subscriptions.list(viewer=user):
            waiting = sum(len(w.granules) for w in subscriptions.waiting(s.id, viewer=user))
            rows.append(
                (
                    s.id,
                    s.process,
                    s.version or "newest",
                    json.dumps(s.policy.to_dict()),
                    str(len(subscriptions.runs(s.id, viewer=user))),
                    str(waiting),
                    json.dumps(s.search.to_dict()),
                )
            )
    if len(rows) == 1:
        print(f"{user} has no subscriptions")
        return 0
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False))
              + "  " + row[6])  # fmt: skip
    return 0


def _remove(args: argparse.Namespace) -> int:
    with _subscriptions(args) as subscriptions:
        subscriptions.delete(args.id, viewer=user_of(args))
    print(f"removed subscription {args.id}")
    return 0
