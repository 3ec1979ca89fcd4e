"""The searches the service benchmarks time, the same for nearline and its peer: MODIS-like
5-minute granule items from 2020-01-01, searched by a 10x10 degree bbox and one day; and
nearline's SQLite catalogue of those items."""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2020, 1, 1, tzinfo=UTC)
COLLECTION = "MOD06_L2"
STAMP = "%Y-%m-%dT%H:%M:%SZ"
BATCH = 10_000  # items a catalogue takes at once
FILL_BATCH = 50_000  # the kept catalogue's (fill)


def fill(data: Path, items: int) -> Path:
    """``items`` MODIS-like granules in COLLECTION, in a SQLite catalogue in folder ``data``
    (made once; kept for the next run), and the catalogue's path."""
    from nearline.archive import Collection, SQLiteCatalogue, modis_like_items

    path, done = data / "catalogue.db", data / f"filled-{items}"
    if done.exists():
        return path
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    print(f"filling the catalogue with {items:,} items ...", flush=True)
    with SQLiteCatalogue(path) as catalogue:
        catalogue.put_collection(Collection(COLLECTION, title="MODIS-like granules"))
        batch = []
        for item in modis_like_items(items, collection=COLLECTION, start=START, seed=1):
            batch.append(item)
            if len(batch) == FILL_BATCH:
                catalogue.add_items(batch)
                batch = []
        catalogue.add_items(batch)
    done.touch()
    return path


def days_of(items: int) -> float:
    """The days ``items`` consecutive 5-minute granules span."""
    return items * 5 / 60 / 24


def fill_sqlite(path: Path, items: list) -> float:
    """A fresh SQLite catalogue at ``path`` holding ``items`` (nearline Items of
    :data:`COLLECTION`), added :data:`BATCH` at a time; items/s of adding them."""
    from nearline.archive import SQLiteCatalogue
    from nearline.archive._base import Collection

    path.unlink(missing_ok=True)
    with SQLiteCatalogue(path) as catalogue:
        catalogue.put_collection(Collection(id=COLLECTION, title="MODIS-like granules"))
        began = time.perf_counter()
        for first in range(0, len(items), BATCH):
            catalogue.add_items(items[first : first + BATCH])
        return len(items) / (time.perf_counter() - began)


def queries(count: int, *, days: float, seed: int = 7) -> list[dict[str, str]]:
    """bbox (10 x 10 degrees) + one-day datetime searches, limit 10, inside the span."""
    pick = random.Random(seed)
    found = []
    for _ in range(count):
        west, south = pick.uniform(-180, 170), pick.uniform(-80, 70)
        day = START + timedelta(days=pick.uniform(0, max(days - 1, 0)))
        found.append(
            {
                "bbox": f"{west:.3f},{south:.3f},{west + 10:.3f},{south + 10:.3f}",
                "datetime": f"{day:{STAMP}}/{day + timedelta(days=1):{STAMP}}",
                "limit": "10",
            }
        )
    return found


def forget_counts(catalogue: object) -> None:
    """Forget the counts a catalogue keeps for its searches' next pages (if it keeps any):
    its next count is made afresh."""
    kept = getattr(catalogue, "counts", None)
    if kept is not None:
        kept.close()


def percentiles(seconds: Sequence[float]) -> tuple[float, float]:
    """(p50, p95)."""
    ordered = sorted(seconds)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def timed(call: Callable[[], object], count: int, warmup: int = 20) -> list[float]:
    """Seconds of each of ``count`` calls, after ``warmup`` untimed ones."""
    for _ in range(warmup):
        call()
    spent = []
    for _ in range(count):
        began = time.perf_counter()
        call()
        spent.append(time.perf_counter() - began)
    return spent
