"""The options that several command families share: the service's data folder (--data), its
state database (--db) and the user (--user), taken before a family's verb and after it alike;
and the object store's (--endpoint-url, --profile, --storage-option)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from nearline.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

# getpass, json and pathlib are imported where they are used, and SharedOptions is a
# NamedTuple, not a dataclass (dataclasses imports inspect): every command and its --help
# import this module

DB_HELP = (
    "the PostgreSQL database holding the catalogue and the jobs, shared by several servers: "
    "postgresql://USER@HOST:PORT/DB (default: $NEARLINE_DB; none: SQLite files under --data)"
)


def data_folder(args: argparse.Namespace) -> Path:
    """The service's data folder: --data, else $NEARLINE_DATA, else ./nearline-data (as
    ServiceSettings.resolve says, without importing the service)."""
    from pathlib import Path

    return Path(args.data or os.environ.get("NEARLINE_DATA") or "nearline-data").absolute()


def add_data_option(parser: argparse.ArgumentParser) -> None:
    """--data (the service's folder) and --db (its PostgreSQL state, if not SQLite).

    No explicit defaults: argparse's own (None) here, and none at all where
    :func:`shared_options` adds them after a verb."""
    parser.add_argument(
        "--data", help="the service's data folder (default: $NEARLINE_DATA or ./nearline-data)"
    )
    parser.add_argument("--db", help=DB_HELP)


class SharedOptions(NamedTuple):
    """A command family's shared options, taken before its verb and after it alike:
    ``nearline users --data D add erin`` and ``nearline users add erin --data D``.

    The copy after the verb has no defaults (``SUPPRESS``), so when an option is not given
    there it does not overwrite what was given before the verb; given in both places, the
    one after the verb wins."""

    before: argparse.ArgumentParser
    after: argparse.ArgumentParser

    def family(self, commands: Any, name: str, **settings: Any) -> argparse.ArgumentParser:
        """The family's parser ``name`` in ``commands``, taking the options before its verb."""
        return commands.add_parser(name, parents=[self.before], **settings)

    def verb(self, actions: Any, name: str, **settings: Any) -> argparse.ArgumentParser:
        """The verb ``name`` in the family's ``actions``, taking the options after it too."""
        return actions.add_parser(name, parents=[self.after], **settings)


def shared_options(add: Callable[[argparse.ArgumentParser], None]) -> SharedOptions:
    """The options that ``add`` puts on a parser, shared by a family and each of its verbs."""
    before = argparse.ArgumentParser(add_help=False)
    after = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    add(before)
    add(after)
    return SharedOptions(before, after)


DATA_OPTIONS = shared_options(add_data_option)


def state_options(whose: str) -> SharedOptions:
    """--data, --db and --user (help: ``whose`` things they are), for the command families
    that work on the service's state directly, without a server."""

    def add(parser: argparse.ArgumentParser) -> None:
        add_data_option(parser)
        parser.add_argument("--user", help=f"{whose} (default: $NEARLINE_USER or your login name)")

    return shared_options(add)


def user_of(args: argparse.Namespace) -> str:
    """--user, else $NEARLINE_USER, else the login name."""
    import getpass

    return args.user or os.environ.get("NEARLINE_USER") or getpass.getuser()


def add_s3_options(parser: argparse.ArgumentParser) -> None:
    """--endpoint-url, --profile and --storage-option, for every command that may reach an
    object store (ingest, serve, migrate, restore). Credentials are never options: they come
    from boto's usual chain (the AWS_* environment, ~/.aws, the profile)."""
    store = parser.add_argument_group("object storage (s3:// URLs)")
    store.add_argument(
        "--endpoint-url",
        default=None,
        help="the S3 store's address, e.g. http://127.0.0.1:8333 (default: $AWS_ENDPOINT_URL, "
        "else AWS)",
    )
    store.add_argument(
        "--profile",
        default=None,
        help="a profile of ~/.aws/credentials to take the credentials from (default: the "
        "AWS_* environment, then the default profile)",
    )
    store.add_argument(
        "--storage-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the store (repeatable): for s3:// part_size, max_concurrency, "
        "retry_attempts, retry_seconds, region_name; for another fsspec URL (migrate, "
        'restore) an fsspec option, e.g. \'client_kwargs={"endpoint_url": "http://localhost:9000"}\'',
    )


def s3_options(args: argparse.Namespace) -> dict[str, Any]:
    """The storage options the command line gives: ``--storage-option`` pairs (VALUE read as
    JSON when it parses), then --endpoint-url and --profile (only those given)."""
    import json

    options: dict[str, Any] = {}
    for pair in args.storage_option:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--storage-option takes KEY=VALUE, got {pair!r}")
        try:
            options[key] = json.loads(text)
        except ValueError:
            options[key] = text  # a plain string such as a profile name
    for key in ("endpoint_url", "profile"):
        if getattr(args, key) is not None:
            options[key] = getattr(args, key)
    return options


def listen_address(text: str) -> tuple[str, int]:
    """HOST:PORT (``[::1]:9464`` for IPv6; port 0: any free one), as argparse's type."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT such as 127.0.0.1:9464, got {text!r}")
    return host, int(port)


def add_operator_options(parser: argparse.ArgumentParser) -> None:
    """What an operator watches a server by: --metrics (Prometheus' address to scrape) and
    --log-format (text for people, json for machines); docs/operations.md."""
    watch = parser.add_argument_group("operating the service (docs/operations.md)")
    watch.add_argument(
        "--metrics",
        type=listen_address,  # applied to the default too: a bad $NEARLINE_METRICS is refused
        default=os.environ.get("NEARLINE_METRICS") or None,
        metavar="HOST:PORT",
        help="serve GET /metrics for Prometheus on this address of its own, apart from the "
        "API (port 0: any free one; default: $NEARLINE_METRICS, else not served)",
    )
    watch.add_argument(
        "--log-format",
        choices=("text", "json"),
        default=os.environ.get("NEARLINE_LOG_FORMAT") or "text",
        help="text (default, or $NEARLINE_LOG_FORMAT) or json: one JSON object a line, with "
        "the request id, user, job and run of each line",
    )


def add_door_options(parser: argparse.ArgumentParser) -> None:
    """--guest and --anonymous-read: what `nearline serve` lets requests without a token do
    (nothing by default; docs/service.md, "Without a token")."""
    doors = parser.add_argument_group("requests without a token (default: refused, 401)")
    doors.add_argument(
        "--guest",
        default=None,
        metavar="USER",
        help="DANGER, for conformance runs only: every request without a token acts as this "
        "existing user, ordering and deploying in their name (default: $NEARLINE_GUEST)",
    )
    doors.add_argument(
        "--anonymous-read",
        default=None,
        metavar="all|ID,ID",
        help="let requests without a token read these archive collections ('all': every one "
        "but users' own), the public processes, the landing page and conformance; nothing "
        "else (default: $NEARLINE_ANONYMOUS_READ)",
    )


def door_options(args: argparse.Namespace) -> dict[str, str | None]:
    """--guest and --anonymous-read, else $NEARLINE_GUEST and $NEARLINE_ANONYMOUS_READ
    (empty: off)."""
    guest = args.guest or os.environ.get("NEARLINE_GUEST") or None
    public = args.anonymous_read or os.environ.get("NEARLINE_ANONYMOUS_READ") or None
    return {"guest": guest, "public": public}
