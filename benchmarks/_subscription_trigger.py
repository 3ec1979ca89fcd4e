"""Subscription trigger latency: from the commit of a granule's catalogue item (by another
process, as `nearline ingest` writes it) to its subscription's job existing, and to the job's
run leaving the queue (its first station), on an idle live server. Granules arrive one at a
time, ``gap`` seconds apart, each to a subscription with the policy ``{"each": 1}``.

    .venv/bin/python benchmarks/_subscription_trigger.py [--count 20] [--gap 0.5] [--out DIR]

``trigger_latency(folder, count=..., gap=...)`` is what benchmarks/service.py can call.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))  # tests.live_service: the same live server the tests drive

from tests.service.conftest import deploy, serving  # noqa: E402
from tests.service.granules import COLLECTION  # noqa: E402

from _stac_searches import percentiles  # noqa: E402
from nearline.archive import Asset, Item, SQLiteCatalogue  # noqa: E402

START = datetime(2013, 1, 1, tzinfo=UTC)


def _granule(folder: Path, index: int) -> Item:
    path = folder / f"trigger-{index:04d}.dat"
    payload = bytes([index % 256]) * 1000
    path.write_bytes(payload)
    start = START + timedelta(minutes=5 * index)
    return Item(
        id=path.stem,
        collection=COLLECTION,
        start=start,
        end=start + timedelta(minutes=5),
        geometry={"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]},
        bbox=(0.0, 0.0, 1.0, 1.0),
        properties={"tag": "trigger"},
        assets={
            "data": Asset(
                location=str(path), size=len(payload), sha256=hashlib.sha256(payload).hexdigest()
            )
        },
    )


def _moment(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def subscribe_each(live, user: str, process: str, *, tag: str) -> str:
    """``user``'s subscription (policy each) of ``process`` to granules tagged ``tag``."""
    with live.client(user) as client:
        response = client.post(
            "/subscriptions",
            json={
                "process": process,
                "search": {"properties": {"tag": tag}},
                "policy": {"each": 1},
            },
        )
        response.raise_for_status()
        return response.json()["id"]


def trigger_latency(folder: Path, *, count: int = 20, gap: float = 0.5) -> dict[str, float]:
    """p50 and p95 seconds from a granule's ingest to its job existing (``job_*``) and to its
    run starting (``run_*``), over ``count`` granules on a server of its own in ``folder``."""
    with serving(folder, lambda live: deploy(live, "alice", "sizes")) as live:
        sid = subscribe_each(live, "alice", "granule-sizes", tag="trigger")
        files = folder / "trigger-granules"
        files.mkdir()
        ingested: dict[str, float] = {}
        for index in range(count):
            item = _granule(files, index)
            with SQLiteCatalogue(live.data / "catalogue.db") as catalogue:
                catalogue.add_items([item])
                ingested[f"{COLLECTION}/{item.id}"] = time.time()
            time.sleep(gap)
        made, started = [], []
        deadline = time.monotonic() + 300
        with live.client("alice") as client:
            while time.monotonic() < deadline:
                runs = client.get(f"/subscriptions/{sid}").json()["runs"]
                if len(runs) == count and all(r["status"] == "successful" for r in runs):
                    break
                time.sleep(0.2)
            for run in runs:
                job = client.get(f"/jobs/{run['jobID']}").json()
                at = ingested[run["granules"][0]]
                made.append(_moment(job["created"]) - at)
                started.append(_moment(job["started"]) - at)
    job_p50, job_p95 = percentiles(made)
    run_p50, run_p95 = percentiles(started)
    return {"job_p50": job_p50, "job_p95": job_p95, "run_p50": run_p50, "run_p95": run_p95}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--gap", type=float, default=0.5, help="seconds between granules")
    parser.add_argument("--out", type=Path, default=None, help="keep the server's folder here")
    args = parser.parse_args(argv)
    folder = args.out or Path(tempfile.mkdtemp(prefix="nearline-trigger-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        found = trigger_latency(folder, count=args.count, gap=args.gap)
    finally:
        if args.out is None:
            shutil.rmtree(folder, ignore_errors=True)
    print(f"granules: {args.count}, one every {args.gap:g} s")
    print(f"ingest -> job exists:  p50 {found['job_p50']:.3f} s, p95 {found['job_p95']:.3f} s")
    print(f"ingest -> run starts:  p50 {found['run_p50']:.3f} s, p95 {found['run_p95']:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
