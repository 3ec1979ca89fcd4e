"""The fenced code blocks of nearline's Markdown pages, with what the page says about running
them.

A page steers its blocks with HTML comments on the lines just above a fence, invisible when
the page is rendered:

- ``<!-- docs: excerpt NAME: why -->`` the block is part of something larger and is not run;
  a Python excerpt is still compiled and every ``nearline`` command in a shell excerpt is
  still parsed by the real CLI, so neither can rot.
- ``<!-- docs: before COMMAND -->`` a shell command run first, in the page's folder (to make
  the small input files the block reads).
- ``<!-- docs: replace OLD => NEW -->`` run the block with OLD replaced by NEW (to run a
  full-size example on a small input).
- ``<!-- docs: s3 BUCKET -->`` run the block against the tests' real S3 server: its admin's
  keys and its address are in the environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
  ``AWS_ENDPOINT_URL``, ``AWS_DEFAULT_REGION``) and BUCKET exists there, empty when the page
  first names it (later blocks of the page see what earlier ones stored).

A Python block whose first comment says ``run with: COMMAND`` (``# model.py — run with:
mpiexec -n 5 python model.py``) is saved under the file name it starts with and run by that
command; ``mpiexec`` is the one from nearline's environment. A C or Fortran block whose first
line is a comment starting with a file name (``/* model.c — ... */``, ``! model.f90 — ...``)
is saved under that name for the page's later shell blocks to build and run.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = {"python", "sh", "bash", "console"}  # blocks that are executed
CHECKED = {"toml", "json"}  # parsed, not run
SOURCES = {"c", "fortran"}  # saved under the file name they start with, for later blocks
SHOWN = {"text", "c", "fortran", "yaml", "ini", "nginx"}  # read by people only

_FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_DIRECTIVE = re.compile(r"^<!--\s*docs:\s*(\w+)\s*(.*?)\s*-->\s*$")
_RUN_WITH = re.compile(r"^#\s*(\S+\.py)\b.*?run with:\s*(.+?)\s*(?:\(|$)")
_SOURCE_NAME = re.compile(r"^(?:/\*|!|//)\s*([\w.-]+\.(?:c|h|f90|F90))\b")


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    excerpt: str | None = None  # "name: why"
    before: list[str] = field(default_factory=list)
    replace: list[tuple[str, str]] = field(default_factory=list)
    s3_buckets: list[str] = field(default_factory=list)  # run against the tests' S3 server

    @property
    def where(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line} ({self.language or 'no language'})"

    def runnable_code(self) -> str:
        code = self.code
        for old, new in self.replace:
            if old not in code:
                raise ValueError(f"{self.where}: `replace {old} => {new}` finds no {old!r}")
            code = code.replace(old, new)
        return code

    def run_with(self) -> tuple[str, list[str]] | None:
        """(file name, command) for a Python program meant to be run by a launcher."""
        for line in self.code.splitlines()[:3]:
            match = _RUN_WITH.match(line.strip())
            if match:
                return match.group(1), shlex.split(match.group(2))
        return None

    def source_name(self) -> str | None:
        """The file a C or Fortran block is saved as, from its first line's comment."""
        if self.language not in SOURCES:
            return None
        match = _SOURCE_NAME.match(self.code.lstrip().splitlines()[0] if self.code else "")
        return match.group(1) if match else None

    def shell_commands(self) -> list[str]:
        """The commands of a shell block: for ``console``, the ``$`` lines (with their
        continuations); otherwise the whole script."""
        code = self.runnable_code()
        if self.language != "console":
            return [code]
        commands, current = [], None
        for line in code.splitlines():
            if current is not None:
                current += "\n" + line
            elif line.startswith("$ "):
                current = line[2:]
            else:
                continue
            if not current.endswith("\\"):
                commands.append(current)
                current = None
        return commands


# the pages of half a minute or more of real work each (a day of orbits composited, a service
# ordered, models built and run on MPI ranks, synthetic days made), run section by section by
# a test file of their own (tests/test_docs_long_pages.py), so that no one test holds a whole
# page's minutes
LONG_PAGES = ("docs/service.md", "docs/burst.md", "docs/composite.md", "docs/swath.md")

_SECTION = re.compile(r"^## +(.+?)\s*$", re.M)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        block = Block(page, line, match.group(1), match.group(2))
        above = text[: match.start()].splitlines()
        while above and (directive := _DIRECTIVE.match(above[-1].strip())):
            above.pop()
            _apply(block, directive.group(1), directive.group(2))
        found.append(block)
    return found


def sections(page: Path) -> list[tuple[str, list[Block]]]:
    """``page``'s blocks grouped by the second-level section (``## Title``) they stand in, in
    page order, each with its title: the blocks above the first such heading under the
    page's own (``# Title``). A heading inside a fence is code, not a section; a section
    without blocks is left out."""
    text = page.read_text()
    fences = [(match.start(), match.end()) for match in _FENCE.finditer(text)]
    headings = [
        (text.count("\n", 0, match.start()) + 1, match.group(1))
        for match in _SECTION.finditer(text)
        if not any(start <= match.start() < end for start, end in fences)
    ]
    title = text.splitlines()[0].lstrip("# ").strip() if text else page.stem
    found: list[tuple[str, list[Block]]] = []
    for block in blocks(page):
        above = [name for line, name in headings if line < block.line]
        name = above[-1] if above else title
        if not found or found[-1][0] != name:
            found.append((name, []))
        found[-1][1].append(block)
    return found


def _apply(block: Block, key: str, value: str) -> None:
    if key == "excerpt":
        block.excerpt = value
    elif key == "before":
        block.before.insert(0, value)
    elif key == "s3":
        block.s3_buckets.append(value)
    elif key == "replace":
        old, sep, new = value.partition(" => ")
        if not sep:
            raise ValueError(f"{block.where}: `replace` wants `OLD => NEW`, got {value!r}")
        block.replace.insert(0, (old, new))
    else:
        raise ValueError(f"{block.where}: unknown docs directive {key!r}")


def nearline_commands(script: str) -> list[list[str]]:
    """Each ``nearline ...`` command line of a shell script, split into its arguments."""
    found = []
    for line in script.replace("\\\n", " ").splitlines():
        for part in re.split(r"[;&|]+", line.split(" #")[0]):
            words = shlex.split(part, comments=True)
            if words and words[0] == "nearline":
                found.append(words[1:])
    return found
