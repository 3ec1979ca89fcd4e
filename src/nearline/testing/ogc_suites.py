"""The OGC's own executable test suites (ETS) against a real `nearline serve`: OGC API -
Features 1.9, OGC API - Processes 1.3, OGC API - EDR 1.0 (its suite 1.3), the draft OGC
API - Coverages' core and OGC API - Tiles 1.2, the yardsticks a server needs for OGC's
compliance mark. CI runs them after ``make test`` (.ci/run); a developer runs them the same
way:

    .venv/bin/python -m nearline.testing.ogc_suites [--ets ../shared/ets] [--out DIR]

The jars are not on Maven Central: they come built from their release tags in ../shared/ets
(its README). Each suite runs against a server of its own on 127.0.0.1, over a throwaway
data folder holding a catalogue of MODIS-like items: Features as an anonymous reader
(``--anonymous-read all``; the suite sends no credentials), Processes as the operator's
``--guest``, with the echo test process on (``--echo on``: its job tests order it), with
``testallprocesses`` off and on; EDR and Coverages as anonymous readers of a server whose
catalogue holds one small gridded collection (two hand-made days of the 8 km Goode grid);
Tiles as an anonymous reader of a gridded collection (a synthetic day's composite) in a data
folder of its own. Prints each run's total / passed / failed / skipped and every test that
did not pass, with its class; exits 1 if any test failed (or a suite could not run).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx

from nearline.archive import Collection, modis_like_items, open_catalogue
from nearline.errors import NearlineError

ETS = Path(
    os.environ.get("NEARLINE_ETS") or Path(__file__).resolve().parents[3].parent / "shared" / "ets"
)
FEATURES_JAR = "ets-ogcapi-features10-1.9-aio.jar"
PROCESSES_JAR = "ets-ogcapi-processes10-1.3-offline-aio.jar"
EDR_JAR = "ets-ogcapi-edr10-1.3-aio.jar"
COVERAGES_JAR = "ets-ogcapi-coverages10-0.1-SNAPSHOT-aio.jar"
GRIDDED = "grid-8km"
GRIDDED_DAYS = ("2012-12-12", "2012-12-13")
WHERE = (
    "the OGC suites ({jar}) come built from their release tags in ../shared/ets (see its "
    "README; not on Maven Central), not found in {ets}: pass --ets DIR"
)
COLLECTION = "mod06"
ITEMS = 200
GUEST = "guest"
ECHO = "echo"
SUITE_SECONDS = 900
START_SECONDS = 120


@dataclass
class Outcome:
    """One suite run's tests: their status (PASS, FAIL, SKIP) by class and name."""

    label: str
    tests: list[tuple[str, str, str, str]] = field(default_factory=list)  # class, name, status, why

    def count(self, status: str) -> int:
        return sum(1 for test in self.tests if test[2] == status)

    def line(self) -> str:
        return (
            f"{self.label}: {len(self.tests)} tests, {self.count('PASS')} passed, "
            f"{self.count('FAIL')} failed, {self.count('SKIP')} skipped"
        )


def read_results(path: Path, label: str) -> Outcome:
    """The test methods (not TestNG's configuration methods) of a testng-results.xml."""
    outcome = Outcome(label)
    root = ElementTree.parse(path).getroot()
    for test_class in root.iter("class"):
        for method in test_class.iter("test-method"):
            if method.get("is-config") == "true":
                continue
            message = method.findtext("exception/message") or ""
            why = " ".join(message.split())[:300]
            outcome.tests.append(
                (test_class.get("name", "?"), method.get("name", "?"), method.get("status"), why)
            )
    return outcome


def properties(entries: dict[str, str]) -> str:
    """A Java properties file in XML, without the DOCTYPE line (the jar would fetch its DTD)."""
    lines = [f'  <entry key="{key}">{value}</entry>' for key, value in entries.items()]
    head = ['<?xml version="1.0" encoding="UTF-8"?>', '<properties version="1.0">']
    return "\n".join([*head, *lines, "</properties>", ""])


def run_suite(jar: Path, entries: dict[str, str], out: Path, label: str) -> Outcome:
    """Run one suite's jar with these properties into ``out``; its outcome."""
    out.mkdir(parents=True, exist_ok=True)
    props = out / "test-run-props.xml"
    props.write_text(properties(entries))
    with open(out / "suite.log", "wb") as log:
        subprocess.run(
            ["java", "-jar", str(jar), "-o", str(out), str(props)],
            stdout=log, stderr=subprocess.STDOUT, check=False, timeout=SUITE_SECONDS,
        )  # fmt: skip
    found = sorted(out.glob("testng/*/testng-results.xml"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise NearlineError(f"{label}: the suite wrote no testng-results.xml; its log: {log.name}")
    return read_results(found[-1], label)


def fill_catalogue(data: Path, items: int = ITEMS) -> None:
    """A public collection of ``items`` MODIS-like granules (one a 5 minutes from
    2025-01-01), in the SQLite catalogue a server on ``data`` keeps."""
    data.mkdir(parents=True, exist_ok=True)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    with open_catalogue(None, data / "catalogue.db") as catalogue:
        catalogue.put_collection(
            Collection(id=COLLECTION, title="MODIS-like cloud granules", description="Synthetic")
        )
        catalogue.add_items(list(modis_like_items(items, collection=COLLECTION, start=start)))


def nearline(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NEARLINE_DATA": str(data)}
    env.pop("NEARLINE_DB", None)
    command = [sys.executable, "-m", "nearline", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def serving(data: Path, *options: str) -> Iterator[str]:
    """A `nearline serve` on ``data`` with ``options``, on a free port of 127.0.0.1, once it
    answers; its URL."""
    log = data.parent / f"serve-{len(list(data.parent.glob('serve-*.log')))}.log"
    env = {**os.environ, "NEARLINE_DATA": str(data)}
    env.pop("NEARLINE_DB", None)
    port = free_port()
    command = [sys.executable, "-m", "nearline", "serve", "--port", str(port), *options]
    url = f"http://127.0.0.1:{port}"
    with open(log, "wb") as written:
        process = subprocess.Popen(command, env=env, stdout=written, stderr=written)
    try:
        deadline = time.monotonic() + START_SECONDS
        while not answers(url):
            if process.poll() is not None or time.monotonic() > deadline:
                raise NearlineError(f"nearline serve did not start; its log: {log}")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def answers(url: str) -> bool:
    with contextlib.suppress(httpx.TransportError):
        return httpx.get(f"{url}/conformance", timeout=2).status_code == 200
    return False


def features(ets: Path, out: Path, data: Path) -> list[Outcome]:
    with serving(data, "--anonymous-read", "all") as url:
        entries = {"iut": url, "noofcollections": "0"}
        return [run_suite(ets / FEATURES_JAR, entries, out / "features", "features")]


def processes(ets: Path, out: Path, data: Path) -> list[Outcome]:
    outcomes = []
    with serving(data, "--guest", GUEST, "--echo", "on") as url:
        for every in ("off", "on"):
            entries = {
                "iut": url,
                "echoprocessid": ECHO,
                "processtestlimit": "10",
                "testallprocesses": every,
            }
            label = f"processes (testallprocesses={every})"
            outcomes.append(
                run_suite(ets / PROCESSES_JAR, entries, out / f"processes-{every}", label)
            )
    return outcomes


def fill_gridded(data: Path) -> None:
    """A public gridded collection of two days on the 8 km Goode grid (hand-made files,
    nearline.testing.gridded), alone in the catalogue a server on ``data`` keeps: the EDR
    suite holds every collection it lists to EDR's collection requirements."""
    from nearline.archive import ingest
    from nearline.testing.gridded import write_gridded

    folder = data.parent / "gridded-files"
    folder.mkdir(parents=True, exist_ok=True)
    paths = [write_gridded(folder / f"{day}.nc", day=day, number=number)
             for number, day in enumerate(GRIDDED_DAYS)]  # fmt: skip
    data.mkdir(parents=True, exist_ok=True)
    with open_catalogue(None, data / "catalogue.db") as catalogue:
        ingest(catalogue, paths, collection=GRIDDED, workers=1)


def edr(ets: Path, out: Path, data: Path) -> list[Outcome]:
    gridded = data.parent / "gridded-data"
    fill_gridded(gridded)
    with serving(gridded, "--anonymous-read", "all") as url:
        entries = {"iut": url, "apiDefinition": f"{url}/api", "noofcollections": "50"}
        return [run_suite(ets / EDR_JAR, entries, out / "edr", "edr")]


def coverages(ets: Path, out: Path, data: Path) -> list[Outcome]:
    gridded = data.parent / "gridded-data"
    if not gridded.is_dir():
        fill_gridded(gridded)
    with serving(gridded, "--anonymous-read", "all") as url:
        return [run_suite(ets / COVERAGES_JAR, {"iut": url}, out / "coverages", "coverages")]


TILES_JAR = "ets-ogcapi-tiles10-1.2-aio.jar"
TILED = "composite-8km"
WEB_MERCATOR = "http://www.opengis.net/def/tilematrixset/OGC/1.0/WebMercatorQuad"


def tiles(ets: Path, out: Path, data: Path) -> list[Outcome]:
    """OGC API - Tiles 1.0 against a server of its own holding one public gridded collection
    (a synthetic day's composite), as an anonymous reader; Core's tile requests are matrix 1
    of WebMercatorQuad, rows and columns 0 to 1 (the whole matrix)."""
    from nearline.archive import ingest
    from nearline.testing.gridded import make_composite

    gridded_data = data.parent / "tiles-data"
    gridded_data.mkdir(parents=True, exist_ok=True)
    composite = make_composite(data.parent / "tiles-composite")
    with open_catalogue(None, gridded_data / "catalogue.db") as catalogue:
        catalogue.put_collection(Collection(id=TILED, title="Pathfinder composites, 8 km"))
        ingest(catalogue, [composite], collection=TILED, workers=1)
    with serving(gridded_data, "--anonymous-read", "all") as url:
        template = (
            f"{url}/collections/{TILED}/map/tiles/WebMercatorQuad/"
            "{tileMatrix}/{tileRow}/{tileCol}"
        )
        entries = {
            "iut": url,
            "tilematrixsetdefinitionuri": WEB_MERCATOR,
            "urltemplatefortiles": template,
            "tilematrix": "1",
            "mintilerow": "0",
            "maxtilerow": "1",
            "mintilecol": "0",
            "maxtilecol": "1",
        }
        return [run_suite(ets / TILES_JAR, entries, out / "tiles", "tiles")]


SUITES = {
    "features": (FEATURES_JAR, features),
    "processes": (PROCESSES_JAR, processes),
    "edr": (EDR_JAR, edr),
    "coverages": (COVERAGES_JAR, coverages),
    "tiles": (TILES_JAR, tiles),
}


def report(outcome: Outcome) -> None:
    print(outcome.line())
    for test_class, name, status, why in outcome.tests:
        if status != "PASS":
            print(f"  {status} {test_class}.{name}: {why}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m nearline.testing.ogc_suites", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--ets",
        type=Path,
        default=ETS,
        help="the suites' jars (default: $NEARLINE_ETS, else ../shared/ets)",
    )
    parser.add_argument("--out", type=Path, default=None, help="keep results here")
    parser.add_argument(
        "suites", nargs="*", metavar="SUITE", help=f"{', '.join(SUITES)} (default: all)"
    )
    args = parser.parse_args(argv)
    args.suites = args.suites or list(SUITES)
    if unknown := [name for name in args.suites if name not in SUITES]:
        parser.error(f"no suite {', '.join(unknown)}: choose from {', '.join(SUITES)}")
    for name in args.suites:
        jar = SUITES[name][0]
        if not (args.ets / jar).is_file():
            print(WHERE.format(jar=jar, ets=args.ets), file=sys.stderr)
            return 1
    with tempfile.TemporaryDirectory(prefix="nearline-ogc-") as scratch:
        out = (args.out or Path(scratch) / "out").absolute()
        data = Path(scratch) / "data"
        fill_catalogue(data)
        nearline("users", "add", GUEST, data=data)
        outcomes = []
        for name in args.suites:
            try:
                outcomes += SUITES[name][1](args.ets, out, data)
            except (NearlineError, subprocess.SubprocessError) as error:
                print(f"{name}: could not run: {error}", file=sys.stderr)
                return 1
        for outcome in outcomes:
            report(outcome)
    return 1 if any(outcome.count("FAIL") for outcome in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
