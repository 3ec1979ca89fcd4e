"""The options that several command families share: the service's data folder (--data), its
state database (--db) and the user (--user), taken before a family's verb and after it alike."""

from __future__ import annotations

import argparse
import getpass
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DB_HELP = (
    "the PostgreSQL database holding the catalogue and the jobs, shared by several servers: "
    "postgresql://USER@HOST:PORT/DB (default: $NEARLINE_DB; none: SQLite files under --data)"
)


def data_folder(args: argparse.Namespace) -> Path:
    """The service's data folder: --data, else $NEARLINE_DATA, else ./nearline-data (as
    ServiceSettings.resolve says, without importing the service)."""
    return Path(args.data or os.environ.get("NEARLINE_DATA") or "nearline-data").absolute()


def add_data_option(parser: argparse.ArgumentParser) -> None:
    """--data (the service's folder) and --db (its PostgreSQL state, if not SQLite).

    No explicit defaults: argparse's own (None) here, and none at all where
    :func:`shared_options` adds them after a verb."""
    parser.add_argument(
        "--data", help="the service's data folder (default: $NEARLINE_DATA or ./nearline-data)"
    )
    parser.add_argument("--db", help=DB_HELP)


@dataclass(frozen=True)
class SharedOptions:
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
    return args.user or os.environ.get("NEARLINE_USER") or getpass.getuser()


def add_s3_options(parser: argparse.ArgumentParser) -> None:
    """--endpoint-url and --profile, for commands that may reach an S3 bucket (credentials
    come from boto's usual chain: the environment, ~/.aws, the profile)."""
    parser.add_argument(
        "--endpoint-url",
        default=None,
        help="the S3 endpoint of s3:// URLs, for a store other than AWS "
        "(default: $AWS_ENDPOINT_URL, else AWS)",
    )
    parser.add_argument(
        "--profile", default=None, help="the AWS profile (of ~/.aws) whose credentials to use"
    )


def s3_options(args: argparse.Namespace) -> dict[str, str]:
    """The storage options --endpoint-url and --profile give (only those given)."""
    named = {"endpoint_url": args.endpoint_url, "profile": args.profile}
    return {key: value for key, value in named.items() if value}
