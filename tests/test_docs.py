"""Every code block in README.md and docs/*.md runs as written (see markdown_blocks.py for how
a page marks an excerpt or makes a small input).

A page's blocks run in order in one folder of their own, so a later block can read what an
earlier one wrote, as a reader following the page would. The pages of
``markdown_blocks.LONG_PAGES`` run in tests/test_docs_long_pages.py, a section a test, every
other page here, a page a test: ``--dist loadfile`` gives a file to one worker, and all the
pages in one file made the suite's longest file by far, left running alone at the end while
the other workers idled; and a whole long page as one test took minutes on a busy machine.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import tomllib
from pathlib import Path
from typing import IO

import psutil
import pytest

from nearline.cli import build_parser
from nearline.mpirun import MPI_ENV

from .markdown_blocks import (
    CHECKED,
    LONG_PAGES,
    ROOT,
    RUN,
    SHOWN,
    Block,
    blocks,
    nearline_commands,
    pages,
)

BIN = Path(sys.executable).parent
TIMEOUT = 300


def environment() -> dict[str, str]:
    path = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    # PYTHONPATH: a page's `before` may make its inputs with `python -m tests.docs_fixtures`
    return {**os.environ, **MPI_ENV, "PATH": path, "PYTHONPATH": str(ROOT)}


def run(
    command: list[str] | str, *, folder: Path, block: Block, env: dict[str, str] | None = None
) -> str:
    shell = isinstance(command, str)
    argv = ["bash", "-euo", "pipefail", "-c", command] if shell else command
    full_env = {**environment(), **(env or {})}
    result = subprocess.run(
        argv, cwd=folder, env=full_env, capture_output=True, text=True, timeout=TIMEOUT
    )
    if result.returncode != 0:
        shown = command if shell else " ".join(command)
        pytest.fail(
            f"{block.where} failed (exit {result.returncode}) running:\n{shown}\n"
            f"--- stdout ---\n{result.stdout[-3000:]}\n--- stderr ---\n{result.stderr[-3000:]}"
        )
    return result.stdout


def check_excerpt(block: Block) -> None:
    """Not run, but still checked: Python compiles, nearline commands parse."""
    if block.language == "python":
        compile(block.code, block.where, "exec")
    elif block.language in {"sh", "bash", "console"}:
        parser = build_parser()
        for command in block.shell_commands():
            for args in nearline_commands(command):
                try:
                    parser.parse_args(args)
                except SystemExit:
                    pytest.fail(f"{block.where}: `nearline {' '.join(args)}` does not parse")


def run_block(block: Block, folder: Path, env: dict[str, str] | None = None) -> None:
    for command in block.before:
        run(command, folder=folder, block=block, env=env)
    if block.language == "python":
        launcher = block.run_with()
        name, command = launcher or (f"block_{block.line}.py", ["python", f"block_{block.line}.py"])
        (folder / name).write_text(block.runnable_code())
        if command[0] in {"python", "mpiexec"}:
            command = [sys.executable if command[0] == "python" else str(BIN / "mpiexec")] + [
                sys.executable if word == "python" else word for word in command[1:]
            ]
        run(command, folder=folder, block=block, env=env)
    else:
        for command in block.shell_commands():
            run(command, folder=folder, block=block, env=env)


def s3_environment(block: Block, request: pytest.FixtureRequest, made: set[str]) -> dict[str, str]:
    """For a block marked ``s3 BUCKET``: the tests' S3 server's admin keys and address, and
    BUCKET there (emptied the first time the page names it; ``made`` remembers)."""
    if not block.s3_buckets:
        return {}
    server = request.getfixturevalue("s3_server")
    present = {bucket["Name"] for bucket in server.client().list_buckets()["Buckets"]}
    for bucket in set(block.s3_buckets) - made:
        if bucket in present:
            server.empty_bucket(bucket)
        else:
            server.make_bucket(bucket)
        made.add(bucket)
    return server.credentials()


def check_data(block: Block) -> None:
    if block.language == "toml":
        tomllib.loads(block.code)
    elif block.language == "json":
        json.loads(block.code)


def stop_left_behind(folder: Path) -> None:
    """Kill what a page started in the background (a server) and left running in ``folder``,
    even when a block failed before the page's own clean-up, and wait until it is gone: a
    server still dying holds its port, and the next page on that port found it taken."""
    left = [
        p for p in psutil.process_iter(["cwd"]) if (p.info["cwd"] or "").startswith(str(folder))
    ]
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(left, timeout=30)


def run_blocks(
    found: list[Block], folder: Path, request: pytest.FixtureRequest, buckets: set[str]
) -> None:
    """Run (or check) each block of ``found`` in order, in ``folder``; ``buckets`` are the S3
    buckets the page has named so far (s3_environment)."""
    for block in found:
        if block.excerpt is not None:
            check_excerpt(block)
        elif block.language in RUN:
            run_block(block, folder, s3_environment(block, request, buckets))
        elif block.source_name():
            (folder / block.source_name()).write_text(block.runnable_code())
        else:
            check_data(block)


def port_lock(port: int) -> Path:
    """The lock file that stands for ``port`` on this machine while a page serves there."""
    return Path(tempfile.gettempdir()) / f"nearline-docs-port-{port}.lock"


class PagePorts:
    """The fixed ports a page serves on (its ``127.0.0.1:PORT``), held for this machine while
    the page runs.

    A reader's page names the ports a reader would use, so pages share them: service.md and
    operations.md both name 8000, and two suites on one machine run the same page. Only the
    ports its blocks run on count (after their ``replace``s; prose and excerpts run nothing):
    operations.md runs on 8047, and a page waiting for service.md's port when it would not
    use it held a test worker idle for minutes. Two
    holders at once answered each other's requests (a search got another server's 401). So
    each port is a lock file that a page takes before its first block and gives back when it
    stops, waiting for another page to finish; a port still taken then is a program outside
    the suite, said in one line.

    Parameters
    ----------
    page : Path
        The Markdown page.
    """

    def __init__(self, page: Path) -> None:
        self.page = page
        code = "\n".join(b.runnable_code() for b in blocks(page) if b.excerpt is None)
        self.ports = sorted({int(p) for p in re.findall(r"127\.0\.0\.1:(\d{4,5})", code)})
        self._held: list[IO[str]] = []

    def hold(self) -> None:
        """Take every port's lock (waiting for another page to give it back), then check it
        is free."""
        for port in self.ports:
            lock = open(port_lock(port), "w")  # noqa: SIM115 (held until release())
            fcntl.flock(lock, fcntl.LOCK_EX)
            self._held.append(lock)
            with socket.socket() as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    self.release()
                    pytest.fail(
                        f"{self.page.name} serves on 127.0.0.1:{port}, which a program outside "
                        "the test suite holds: stop it and run the page again"
                    )

    def release(self) -> None:
        """Give every lock back."""
        for lock in self._held:
            lock.close()
        self._held.clear()


def run_page(page: Path, folder: Path, request: pytest.FixtureRequest) -> None:
    """Run (or check) each of ``page``'s blocks in order, in ``folder``."""
    ports = PagePorts(page)
    ports.hold()
    try:
        run_blocks(blocks(page), folder, request, set())
    finally:
        stop_left_behind(folder)
        ports.release()


def short_pages() -> list[Path]:
    """Every page but the long ones, which tests/test_docs_long_pages.py runs."""
    return [page for page in pages() if str(page.relative_to(ROOT)) not in LONG_PAGES]


@pytest.mark.parametrize("page", short_pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_every_block_of_the_page_runs(
    page: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    run_page(page, tmp_path, request)


def test_every_block_names_a_language_the_runner_knows() -> None:
    unknown = [
        block.where
        for page in pages()
        for block in blocks(page)
        if block.language not in RUN | CHECKED | SHOWN
    ]
    assert unknown == []


def test_excerpts_are_named_with_a_reason() -> None:
    excerpts = [block for page in pages() for block in blocks(page) if block.excerpt is not None]
    unnamed = [b.where for b in excerpts if ":" not in b.excerpt or not b.excerpt.split(":")[1]]
    assert unnamed == []
    names = [b.excerpt.split(":")[0] for b in excerpts]
    assert len(names) == len(set(names)), "excerpt names are unique"


def test_directives_are_read(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n<!-- docs: before touch a -->\n<!-- docs: s3 climate -->\n"
        "<!-- docs: replace 14 => 2 -->\n"
        "```sh\nnearline synth avhrr --orbits 14 --out day/\n```\n"
        "<!-- docs: excerpt big: 505 ranks -->\n"
        "```console\n$ mpiexec -n 505 python model.py &\n$ nearline ls out \\\n  --step 3\n"
        "output line\n```\n"
        "```python\n# model.py — run with: mpiexec -n 5 python model.py   (4 + 1)\nx = 1\n```\n"
    )
    first, second, third = blocks(page)
    assert (first.line, first.before, first.replace) == (5, ["touch a"], [("14", "2")])
    assert (first.s3_buckets, second.s3_buckets) == (["climate"], [])
    assert first.runnable_code() == "nearline synth avhrr --orbits 2 --out day/\n"
    assert second.excerpt == "big: 505 ranks"
    assert second.shell_commands() == [
        "mpiexec -n 505 python model.py &",
        "nearline ls out \\\n  --step 3",
    ]
    assert nearline_commands(second.shell_commands()[1]) == [["ls", "out", "--step", "3"]]
    assert third.run_with() == ("model.py", ["mpiexec", "-n", "5", "python", "model.py"])


def test_c_and_fortran_blocks_are_saved_under_the_name_they_start_with(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```c\n/* ocean.c — a model */\nint main(void) { return 0; }\n```\n"
        "```fortran\n! ocean.f90 — the same\nend program\n```\n"
        "```c\nint no_name;\n```\n"
    )
    named_c, named_fortran, unnamed = blocks(page)
    assert named_c.source_name() == "ocean.c"
    assert named_fortran.source_name() == "ocean.f90"
    assert unnamed.source_name() is None


def test_a_page_waits_for_its_ports_and_names_a_stranger_holding_one(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        free = spare.getsockname()[1]
    page.write_text(f"```sh\ncurl http://127.0.0.1:{free}/conformance\n```\n")
    first, second = PagePorts(page), PagePorts(page)
    assert first.ports == [free]
    first.hold()
    waiting = threading.Thread(target=second.hold)
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive()  # the second page waits while the first runs
    first.release()
    waiting.join(10)
    assert not waiting.is_alive()
    second.release()
    with socket.socket() as stranger:
        stranger.bind(("127.0.0.1", 0))
        stranger.listen()
        taken = stranger.getsockname()[1]
        page.write_text(f"```sh\ncurl http://127.0.0.1:{taken}/conformance\n```\n")
        held = PagePorts(page)
        with pytest.raises(pytest.fail.Exception, match=f"127.0.0.1:{taken}, which a program"):
            held.hold()
        assert held._held == []
    for port in (free, taken):  # this test's own lock files: the pages' ones stay, reused
        port_lock(port).unlink()
