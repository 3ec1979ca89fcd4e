"""The documentation site's promise: `make test` builds it with ``mkdocs build --strict``, so a
renamed public function, or a docstring whose Parameters no longer match its signature, fails
the build rather than a reader. Each test builds a one-page site with the Makefile's own
command on the project's own mkdocs.yml (``INHERIT``) and reads what the build said.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import griffe
import pytest

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).parent / "mkdocs"
REFERENCE = ROOT / "docs" / "reference"
DOCUMENTED_PACKAGES = ("nearline.burst", "nearline.archive", "nearline.algorithms")


def strict_build_command() -> list[str]:
    """The site's build command in `make test`'s recipe (``--quiet`` there would hide, and so
    pass, every warning: mkdocs counts only the warnings it logs)."""
    recipe = (ROOT / "Makefile").read_text().split("\ntest:", 1)[1].split("\n\n", 1)[0]
    line = next(line for line in recipe.splitlines() if "mkdocs build" in line)
    return line.strip().replace("$(BIN)/", f"{MKDOCS.parent}/").split()


def build_one_page(tmp_path: Path, page: str) -> str:
    """Build a site of ``page`` alone with the project's settings; fail unless it fails.
    Modules in ``tmp_path`` are importable by the page."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text(page)
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        f"INHERIT: {ROOT / 'mkdocs.yml'}\n"
        f"docs_dir: {docs}\nsite_dir: {tmp_path / 'site'}\n"
        "hooks: []\nwatch: []\nextra_css: []\nnav:\n  - page.md\n"
    )
    result = subprocess.run(
        [*strict_build_command(), "--config-file", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, "the strict build passed a broken page"
    assert "configuration error" not in output, output  # failed for the page, not the setup
    return output


def test_make_test_builds_the_site_strictly() -> None:
    assert strict_build_command() == [str(MKDOCS), "build", "--strict"]


def test_a_reference_to_a_missing_name_fails_the_build(tmp_path: Path) -> None:
    output = build_one_page(tmp_path, "# x\n\n::: nearline.burst.no_such_name\n")
    assert "nearline.burst.no_such_name" in output


def test_a_parameter_the_signature_lacks_fails_the_build(tmp_path: Path) -> None:
    # a renamed parameter whose docstring was not updated
    (tmp_path / "renamed.py").write_text(
        "def scale(values: list[float], *, factor: float) -> list[float]:\n"
        '    """Multiply every value.\n\n'
        "    Parameters\n    ----------\n"
        "    values\n        The numbers.\n"
        "    multiplier\n        What to multiply them by.\n"
        '    """\n'
        "    return [value * factor for value in values]\n"
    )
    output = build_one_page(tmp_path, "# x\n\n::: renamed.scale\n")
    assert "multiplier" in output
    assert "does not appear in the function signature" in output


def test_a_broken_cross_reference_fails_the_build(tmp_path: Path) -> None:
    output = build_one_page(tmp_path, "# x\n\nSee [the client][nearline.burst.NoClient].\n")
    assert "nearline.burst.NoClient" in output


def documented_names() -> set[str]:
    """Every object the reference pages render (``::: name`` lines)."""
    directive = re.compile(r"^::: (\S+)\s*$", re.M)
    return {name for page in REFERENCE.glob("*.md") for name in directive.findall(page.read_text())}


@pytest.mark.parametrize("package", DOCUMENTED_PACKAGES)
def test_every_export_has_a_reference_entry(package: str) -> None:
    """A new export without an entry fails here; a renamed one fails the strict build."""
    exported = {f"{package}.{name}" for name in importlib.import_module(package).__all__}
    missing = sorted(exported - documented_names())
    assert missing == []


def test_the_reference_pages_hold_no_code_blocks() -> None:
    # tests/test_docs.py runs docs/*.md's blocks, not docs/reference/'s: keep none there
    assert [page.name for page in REFERENCE.glob("*.md") if "```" in page.read_text()] == []


PLUGIN_INTERFACES = (
    "nearline.burst.Sink",
    "nearline.burst.SinkFile",
    "nearline.swath.Reader",
    "nearline.swath.Granule",
    "nearline.orders.Executor",
    "nearline.orders.RunTask",
    "nearline.grid.Grid",
    "nearline.layout.ArchiveTier",
    "nearline.archive.Catalogue",
    "nearline.composite.Reducer",
)


def public_callables() -> list[griffe.Object]:
    """The reference's functions and its classes' documented constructors and methods, as
    griffe reads them from the source (statically, as the site does)."""
    nearline = griffe.load("nearline", search_paths=[str(ROOT / "src")], resolve_aliases=True)
    roots = [
        nearline[f"{package[len('nearline.') :]}.{name}"]
        for package in DOCUMENTED_PACKAGES
        for name in importlib.import_module(package).__all__
    ] + [nearline[path[len("nearline.") :]] for path in PLUGIN_INTERFACES]
    found = []
    for root in roots:
        target = root.final_target if root.is_alias else root
        if target.is_function:
            found.append(target)
        elif target.is_class:
            members = [target, *(m for n, m in target.members.items() if not n.startswith("_"))]
            found += [m for m in members if (m.is_class or m.is_function) and m.docstring]
    return found


def parameters_of(target: griffe.Object) -> tuple[list[str], list[str]]:
    """(the signature's parameters, those its docstring's Parameters sections name)."""
    # a class's are its __init__'s, a dataclass's generated one included
    signature = [p.name for p in target.parameters if p.name not in ("self", "cls")]
    documented = [
        parameter.name
        for section in target.docstring.parse(griffe.Parser.numpy, warnings=False)
        if section.kind is griffe.DocstringSectionKind.parameters
        for parameter in section.value
    ]
    init = target.members.get("__init__") if target.is_class else None
    if init is not None and init.docstring is not None:  # shown merged into the class's
        documented += parameters_of(init)[1]
    return signature, documented


def test_every_public_callable_documents_each_parameter_by_name() -> None:
    """numpydoc's Parameters, checked both ways: griffe warns (and the strict build fails) on
    a documented parameter the signature lacks; this fails on one the docstring leaves out."""
    undocumented = []
    for target in public_callables():
        signature, documented = parameters_of(target)
        missing = [name for name in signature if name not in documented]
        if missing:
            undocumented.append(f"{target.path}: {', '.join(missing)}")
    assert undocumented == []
