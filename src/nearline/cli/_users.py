"""``nearline users``: who may use the service, their API tokens, and their strings (S4PM-DM:
"a full configuration of S4PM stations with disk and CPU resources allocated to that user").
"""

from __future__ import annotations

import argparse
from typing import Any

from nearline.cli._options import DATA_OPTIONS, data_folder


def add_users_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``users {add,set,token,revoke,list,tokens,revoke-token}`` to ``subparsers``."""
    users = DATA_OPTIONS.family(subparsers, "users")
    actions = users.add_subparsers(dest="action", required=True)
    add = DATA_OPTIONS.verb(
        actions, "add", help="add a user and print their API token (shown once)"
    )
    change = DATA_OPTIONS.verb(actions, "set", help="change a user's quotas (runs not started yet)")
    for action in (add, change):
        action.add_argument("name")
        action.add_argument("--disk", default=None, help="their kept results, e.g. 50GiB")
        action.add_argument("--cpus", type=float, default=None, help="CPUs their runs hold at once")
        action.add_argument(
            "--memory", default=None, help="memory their runs hold at once, e.g. 8GiB"
        )
    for name, helptext in (
        ("token", "issue a new token for a user (the old one stops working)"),
        ("revoke", "revoke a user's token"),
    ):
        DATA_OPTIONS.verb(actions, name, help=helptext).add_argument("name")
    DATA_OPTIONS.verb(actions, "list", help="list users and their quotas")
    DATA_OPTIONS.verb(
        actions, "tokens", help="list personal tokens (everyone's, or one user's), never secrets"
    ).add_argument("name", nargs="?", default=None)
    DATA_OPTIONS.verb(
        actions, "revoke-token", help="revoke anyone's personal token by its id (tok_...)"
    ).add_argument("id")
    users.set_defaults(func=run_users)
    return users


def _allotment(args: argparse.Namespace) -> Any:
    from nearline.errors import ConfigError
    from nearline.identity import Allotment
    from nearline.units import parse_size

    if args.cpus is not None and args.cpus <= 0:
        raise ConfigError(f"--cpus: must be more than 0, got {args.cpus:g}")
    return Allotment(
        cpus=args.cpus,
        memory=parse_size(args.memory, what="--memory") if args.memory else None,
        disk=parse_size(args.disk, what="--disk") if args.disk else None,
    )


def _quota(value: float | None, *, size: bool) -> str:
    from nearline.units import format_size

    if value is None:
        return "-"
    return format_size(value) if size else f"{value:g}"


def run_users(args: argparse.Namespace) -> int:
    from nearline.db import database_url, open_database
    from nearline.identity import UserStore

    data = data_folder(args)
    data.mkdir(parents=True, exist_ok=True)
    with open_database(database_url(args.db), data / "service.db") as database:
        users = UserStore(database)
        if args.action == "add":
            print(users.add(args.name, _allotment(args)))
        elif args.action == "set":
            users.set_allotment(args.name, _allotment(args))
            print(f"{args.name}'s quotas are set")
        elif args.action == "token":
            print(users.new_token(args.name))
        elif args.action == "revoke":
            users.revoke(args.name)
            print(f"revoked {args.name}'s token")
        elif args.action == "tokens":
            print("id\tuser\tname\tstate")
            for token in users.tokens.of(args.name):
                state = f"revoked {token.revoked:%Y-%m-%d}" if token.revoked else "active"
                until = f"until {token.expires:%Y-%m-%d}"
                print(f"{token.id}\t{token.owner}\t{token.name}\t{state}, {until}")
        elif args.action == "revoke-token":
            gone = users.tokens.revoke(args.id, owner=None)
            print(f"revoked {gone.owner}'s token {gone.id} ({gone.name})")
        else:
            print("user\tstate\tsince\tcpus\tmemory\tdisk")
            for user in users.list():
                state = f"revoked {user.revoked:%Y-%m-%d}" if user.revoked else "active"
                quota = user.allotment
                print(
                    f"{user.name}\t{state}\t{user.created:%Y-%m-%d}\t"
                    f"{_quota(quota.cpus, size=False)}\t{_quota(quota.memory, size=True)}\t"
                    f"{_quota(quota.disk, size=True)}"
                )
    return 0
