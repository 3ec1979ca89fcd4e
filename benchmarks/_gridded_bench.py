"""What the benchmarks of gridded collections share (coverage subsets, EDR series, map tiles):
files catalogued through ``nearline.archive.ingest`` (as ``nearline ingest`` does) and served
by a live ``nearline serve`` on 127.0.0.1, each request timed on one kept connection as a
user's client keeps it, and each table's median and p95 beside the machine's load."""

from __future__ import annotations

import shutil
import statistics
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from _common import replace_section
from _stac_searches import percentiles, timed
from nearline.archive import Collection, ingest, open_catalogue
from nearline.testing.ogc_suites import serving

__all__ = ["latency_cells", "percentiles", "report", "served", "time_route", "timed", "uptime"]

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
DOCS_HEADER = "# Benchmarks\n\nEach section is rewritten by its script's `--update-docs`.\n"


@contextmanager
def served(data: Path, files: Sequence[Path], collection: str, title: str) -> Iterator[str]:
    """A live ``nearline serve`` (anonymous reads) on a fresh catalogue in ``data`` holding
    ``files`` as the gridded collection ``collection``; its URL.

    Parameters
    ----------
    data
        The service's folder, emptied first (no tile or catalogue kept from an earlier run).
    files
        Gridded files (composites), catalogued where they lie.
    collection, title
        The collection's id and title.
    """
    shutil.rmtree(data, ignore_errors=True)
    with open_catalogue(None, data / "catalogue.db") as catalogue:
        catalogue.put_collection(Collection(id=collection, title=title))
        ingest(catalogue, list(files), collection=collection, workers=1)
    with serving(data, "--anonymous-read", "all") as url:
        yield url


def time_route(
    data: Path,
    files: Sequence[Path],
    collection: str,
    route: str,
    params: dict[str, str],
    *,
    repeats: int,
    warmup: int,
) -> tuple[list[float], httpx.Response]:
    """``GET route?params`` of ``files`` served as ``collection`` (see :func:`served`), timed
    on one kept connection as a user's client keeps it.

    Returns
    -------
    tuple
        The seconds of each of ``repeats`` requests (after ``warmup`` untimed ones), and one
        more answer, to check its values.
    """
    with (
        served(data, files, collection, collection) as url,
        httpx.Client(base_url=url, timeout=120) as client,
    ):

        def fetch() -> httpx.Response:
            response = client.get(route, params=params)
            response.raise_for_status()
            return response

        return timed(fetch, repeats, warmup), fetch()


def report(text: str, section: str, header: str, *, update_docs: bool) -> None:
    """Print a benchmark's text; with ``update_docs``, put it under ``header`` in the
    ``section`` markers of docs/benchmarks.md."""
    print(text)
    if update_docs:
        begin, end = f"<!-- {section}:begin -->", f"<!-- {section}:end -->"
        replace_section(DOCS, begin, end, f"{header}\n\n{text}", DOCS_HEADER)


def latency_cells(took: Sequence[float], floor: float | None = None) -> list[str]:
    """Median and p95 in milliseconds, and the median over ``floor`` (seconds) if given."""
    p50, p95 = statistics.median(took), percentiles(took)[1]
    cells = [str(len(took)), f"{p50 * 1e3:.1f}", f"{p95 * 1e3:.1f}"]
    return cells + ([f"{p50 / floor:.2f}x"] if floor is not None else [])


def uptime() -> str:
    """``uptime``'s line: how busy the shared machine was (its load averages)."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
