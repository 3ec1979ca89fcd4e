"""A command family's shared options (--data, --db, --user) work before its verb and after it."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from nearline.cli import build_parser

from .test_cli import nearline

# each family's verbs, with the arguments each needs besides the shared options
VERBS = {
    "users": {"add": ["erin"], "set": ["erin"], "token": ["erin"], "revoke": ["erin"], "list": []},
    "db": {"migrate": []},
    "algorithms": {"deploy": ["pkg"], "list": [], "undeploy": ["sum"]},
    "subscriptions": {"add": ["sum", "--each"], "list": [], "remove": ["7"]},
}
WITH_USER = {"algorithms", "subscriptions"}
CASES = [(family, verb) for family, verbs in VERBS.items() for verb in verbs]


def shared(family: str, value: str) -> list[str]:
    options = ["--data", f"{value}-data", "--db", f"postgresql://{value}/db"]
    return [*options, "--user", f"{value}-user"] if family in WITH_USER else options


def expect(namespace: argparse.Namespace, family: str, value: str | None) -> None:
    assert namespace.data == (value and f"{value}-data")
    assert namespace.db == (value and f"postgresql://{value}/db")
    if family in WITH_USER:
        assert namespace.user == (value and f"{value}-user")


@pytest.mark.parametrize(("family", "verb"), CASES)
def test_shared_options_are_taken_after_the_verb(family, verb):
    args = [family, verb, *VERBS[family][verb], *shared(family, "after")]
    expect(build_parser().parse_args(args), family, "after")


@pytest.mark.parametrize(("family", "verb"), CASES)
def test_shared_options_are_taken_before_the_verb(family, verb):
    args = [family, *shared(family, "before"), verb, *VERBS[family][verb]]
    expect(build_parser().parse_args(args), family, "before")


@pytest.mark.parametrize(("family", "verb"), CASES)
def test_after_the_verb_wins_and_none_given_leaves_the_defaults(family, verb):
    both = [family, *shared(family, "before"), verb, *VERBS[family][verb], *shared(family, "x")]
    expect(build_parser().parse_args(both), family, "x")
    expect(build_parser().parse_args([family, verb, *VERBS[family][verb]]), family, None)


def test_a_user_added_with_data_after_the_verb_is_listed_from_that_folder(tmp_path):
    added = nearline("users", "add", "erin", "--data", "srv", "--disk", "1GiB", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert (tmp_path / "srv" / "service.db").is_file()
    assert not (tmp_path / "nearline-data").exists()
    for listing in (["users", "list", "--data", "srv"], ["users", "--data", "srv", "list"]):
        listed = nearline(*listing, cwd=tmp_path)
        assert listed.returncode == 0, listed.stderr
        rows = [line.split("\t") for line in listed.stdout.splitlines()[1:]]
        assert [(row[0], row[1], row[-1]) for row in rows] == [("erin", "active", "1.0 GiB")]


def test_building_the_parser_leaves_the_service_and_the_catalogue_unimported():
    """Every `nearline` command builds the whole parser, and the suite runs the command
    hundreds of times: the service's rooms (1.5 s of imports here) wait for the commands
    that use them."""
    probe = (
        "import sys; from nearline.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('nearline.orders', 'nearline.archive', 'nearline.api', "
        "'nearline.algorithms') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
