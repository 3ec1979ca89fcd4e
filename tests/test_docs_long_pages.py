"""The longest pages' blocks run as written, as tests/test_docs.py runs every other page's, but
one test per section (``## Title``) rather than one per page.

A whole page was a single test of a minute or more (docs/service.md: 104 s alone on two cores,
past pytest-timeout's 300 s on a busy machine). Its blocks still run in one folder, in page
order, as a reader following the page runs them: a later section reads what an earlier one
made (the day of orbits, the tokens, the server started in *Start*). So the page's folder and
where it has got to are kept for the whole module (:class:`PageRun`), and each section's test
runs the page up to the end of its section: in the usual order that is its own blocks only,
and a section run on its own (``-k``) runs the sections above it first, as its set-up. After a
section fails, the later ones of its page fail at once, naming it, rather than each failing in
its own confusing way. The page's last section stops whatever the page left running.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from .markdown_blocks import LONG_PAGES, ROOT, Block, blocks, sections
from .test_docs import PagePorts, run_blocks, stop_left_behind


class PageRun:
    """One page run section by section in one folder.

    Parameters
    ----------
    page : Path
        The Markdown page.
    folder : Path
        The folder its blocks run in, as a reader's working folder.
    """

    def __init__(self, page: Path, folder: Path) -> None:
        self.page = page
        self.folder = folder
        self.parts = sections(page)
        self.done = 0  # sections run, from the top
        self.failed: str | None = None  # the section that failed, if one did
        self.buckets: set[str] = set()  # the S3 buckets the page has named so far
        self.ports = PagePorts(page)  # held from the first section until stop()

    def run_through(self, index: int, request: pytest.FixtureRequest) -> None:
        """Run the page's sections up to and including section ``index``, those not run yet.

        Parameters
        ----------
        index : int
            The section, counted from 0 in page order.
        request : pytest.FixtureRequest
            The running test's request, for the S3 server of a block marked ``s3``.
        """
        if self.failed is not None:
            pytest.fail(f"{self.page.name}: section {self.failed!r} failed, and this one needs it")
        if self.done == 0 and self.done <= index:
            self.ports.hold()
        while self.done <= index:
            title, found = self.parts[self.done]
            try:
                run_blocks(found, self.folder, request, self.buckets)
            except BaseException:
                self.failed = title
                self.stop()
                raise
            self.done += 1
        if self.done == len(self.parts):
            self.stop()

    def stop(self) -> None:
        """Stop what the page started in the background and left running (a server)."""
        stop_left_behind(self.folder)
        self.ports.release()


def anchor(title: str) -> str:
    """A section's title as its page's anchor: ``Start`` -> ``start``."""
    words = re.sub(r"[^\w\s-]", "", title.lower()).split()
    return "-".join(words)


PARTS = [
    pytest.param(name, index, id=f"{name}#{anchor(title)}")
    for name in LONG_PAGES
    for index, (title, _) in enumerate(sections(ROOT / name))
]


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, PageRun]]:
    """Each long page's run, made when its first section runs; stopped at the end."""
    runs: dict[str, PageRun] = {}
    yield runs
    for run in runs.values():
        run.stop()


def test_the_long_pages_are_pages() -> None:
    assert all((ROOT / name).is_file() for name in LONG_PAGES)


def test_the_sections_hold_every_block_of_the_page_once_in_order() -> None:
    for name in LONG_PAGES:
        page = ROOT / name
        in_sections: list[Block] = [block for _, found in sections(page) for block in found]
        assert [block.line for block in in_sections] == [block.line for block in blocks(page)]


def test_sections_are_found_outside_fences_only(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n```sh\ntrue\n```\n## First\ntext\n## Empty\n## Second\n"
        "```sh\n## not a heading\n```\n```sh\nfalse\n```\n"
    )
    found = sections(page)
    assert [(title, [block.line for block in part]) for title, part in found] == [
        ("A page", [2]),
        ("Second", [9, 12]),
    ]
    assert anchor("Users' strings: quotas and fair share") == "users-strings-quotas-and-fair-share"


def test_a_section_run_alone_runs_the_sections_above_it_first(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# P\n```sh\necho top > top.txt\n```\n## One\n```sh\necho one >> top.txt\n```\n"
        "## Two\n```sh\ncp top.txt two.txt\n```\n"
    )
    folder = tmp_path / "run"
    folder.mkdir()
    run = PageRun(page, folder)
    run.run_through(2, request)
    assert (folder / "two.txt").read_text() == "top\none\n"
    assert run.done == 3


def test_after_a_section_fails_the_later_ones_fail_naming_it(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    page = tmp_path / "page.md"
    page.write_text("# P\n## One\n```sh\nexit 3\n```\n## Two\n```sh\ntouch two\n```\n")
    folder = tmp_path / "run"
    folder.mkdir()
    run = PageRun(page, folder)
    with pytest.raises(pytest.fail.Exception, match=r"page.md:3 \(sh\) failed \(exit 3\)"):
        run.run_through(0, request)
    with pytest.raises(pytest.fail.Exception, match="section 'One' failed, and this one needs it"):
        run.run_through(1, request)
    assert not (folder / "two").exists()
    assert (run.done, run.failed) == (0, "One")


@pytest.mark.parametrize(("name", "index"), PARTS)
def test_every_block_of_the_section_runs(
    name: str,
    index: int,
    page_runs: dict[str, PageRun],
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> None:
    if name not in page_runs:
        page_runs[name] = PageRun(ROOT / name, tmp_path_factory.mktemp(Path(name).stem))
    page_runs[name].run_through(index, request)
