"""The `nearline` command starts at once: importing it imports no command's module and none of
the heavy libraries, `nearline --help` lists every command from the table without importing
one, and a command imports its own module alone. (How fast that is lives in
benchmarks/cli_start.py, not in a timed test.)"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from nearline.cli import COMMANDS, build_parser, command_named, main
from nearline.errors import ConfigError

from .test_cli import nearline

HEAVY = ("numpy", "h5py", "boto3", "httpx", "fastapi")
COMMAND_MODULES = sorted({f"nearline.cli.{module}" for module, _ in COMMANDS.values()})


def imported_by(code: str) -> list[str]:
    """The modules of HEAVY or of nearline.cli's commands that a fresh interpreter has
    imported after running ``code``."""
    probe = (
        f"import sys\n{code}\n"
        f"watched = {[*HEAVY, *COMMAND_MODULES]!r}\n"
        "print('imported:', *sorted(m for m in watched if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1].split()[1:]  # after what ``code`` printed


def listed_summaries(help_text: str) -> list[str]:
    """The commands that ``help_text`` does not list with their one-line summary."""
    listed = " ".join(help_text.split())  # a long summary wraps onto a second line
    return [name for name, (_, summary) in COMMANDS.items() if f" {name} {summary} " not in listed]


def test_the_table_names_the_modules_of_the_commands():
    # a module a command's row names but the package lacks would fail at that command alone
    assert [name for name in COMMAND_MODULES if importlib.util.find_spec(name) is None] == []
    assert COMMANDS["jobs"] == ("_jobs", "jobs and the stations' queues")
    assert [name for name, (module, _) in COMMANDS.items() if module == "_login"] == [
        "login",
        "token",
        "tokens",
    ]


def test_importing_the_command_imports_no_command_and_no_heavy_library():
    assert imported_by("import nearline.cli") == []


def test_help_imports_no_command_and_a_command_its_own_module_alone():
    run = "from nearline.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    assert imported_by(run.format(argv=["--help"])) == []
    assert imported_by(run.format(argv=["jobs", "--help"])) == ["nearline.cli._jobs"]
    assert imported_by(run.format(argv=["--debug", "token", "--help"])) == ["nearline.cli._login"]
    assert imported_by(run.format(argv=["ls", "--help"])) == ["nearline.cli._ls"]


def test_help_lists_every_command_with_its_one_line_summary(tmp_path):
    shown = nearline("--help", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert listed_summaries(shown.stdout) == []
    choices = re.search(r"\{([a-z,-]+)\}", shown.stdout).group(1)
    assert choices.split(",") == list(COMMANDS)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_builds_its_parser_alone_with_the_tables_summary(name, capsys):
    parser = build_parser([name])
    with pytest.raises(SystemExit) as leaving:
        parser.parse_args([name, "--help"])
    assert leaving.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: nearline {name} ")
    assert listed_summaries(parser.format_help()) == []


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["jobs", "--limit", "3"], "jobs"),
        (["--debug", "users", "--data", "d", "list"], "users"),
        (["--help", "burst-config"], "burst-config"),
        (["--help"], None),
        ([], None),
        (["job"], None),  # a typo: argparse names it and lists the commands
    ],
)
def test_the_command_is_the_first_word_that_is_no_option(argv, named):
    assert command_named(argv) == named


def test_a_misspelt_command_is_named_and_every_command_offered(capsys):
    with pytest.raises(SystemExit) as leaving:
        main(["job"])
    assert leaving.value.code == 2
    said = capsys.readouterr().err.splitlines()[-1]
    offered = ", ".join(f"'{name}'" for name in COMMANDS)
    assert (
        said == f"nearline: error: argument command: invalid choice: 'job' (choose from {offered})"
    )


def test_building_an_unknown_command_names_it_and_the_commands():
    with pytest.raises(ConfigError, match=r"no nearline command jbos; name one of demo, bench"):
        build_parser(["jbos"])
