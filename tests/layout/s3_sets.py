"""Closed sets of random files and what a bucket holds: shared by the S3 tier's tests."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from nearline.layout import mark_complete
from nearline.layout._paths import hds_path


def make_sets(root: Path, sizes: dict[tuple[int, str], list[int]]) -> dict[str, str]:
    """Closed sets of random files; {path below root: SHA-256}."""
    shas = {}
    for (step, file), ranks in sizes.items():
        for rank, size in enumerate(ranks):
            path = hds_path(root, step=step, file=file, rank=rank, ext="dat")
            path.parent.mkdir(parents=True, exist_ok=True)
            data = os.urandom(size)
            path.write_bytes(data)
            shas[path.relative_to(root).as_posix()] = hashlib.sha256(data).hexdigest()
        mark_complete(root, step=step, file=file)
    return shas


def shas_below(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*.dat")
    }


def keys(server, bucket: str) -> list[str]:
    found = server.client().list_objects_v2(Bucket=bucket).get("Contents", [])
    return sorted(entry["Key"] for entry in found)
