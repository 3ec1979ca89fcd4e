"""Migration to and restore from an S3 bucket, side by side with boto3's managed transfers of
the same files to the same server, in one run.

Starts its own SeaweedFS (``nearline.testing.s3server``) on 127.0.0.1 with its data below
--out, writes F files of M MiB as F closed sets (one file each), then times, interleaved
round by round: (a) ``Migrator.run_once`` (tar bundle, SHA-256 while copying, read back and
compared, manifest) against boto3 ``upload_file`` (default TransferConfig) of the same files;
(b) ``restore`` (every byte's SHA-256 checked) against boto3 ``download_file``; and, as the
physical limits, the server's own ceiling (multipart PUTs of 8 MiB parts from one buffer in
memory, 10 at once, and ranged GETs of 8 MiB into buffers in memory, 10 at once: no disk, no
hashing, no checksums, unsigned payloads) and a local copy of the files (+fsync).

    .venv/bin/python benchmarks/s3.py [--files 8] [--file-mib 128] [--repeats 3]
        [--out bench-output/s3] [--update-docs]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _common import fsync_path, machine_summary, median, remove_path, replace_section
from nearline.layout import Migrator, mark_complete, restore
from nearline.layout._journal import JOURNAL
from nearline.layout._paths import hds_path
from nearline.testing.s3server import SeaweedFS, server_version

PROJECT = Path(__file__).resolve().parents[1]
DOCS = PROJECT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- s3:begin -->", "<!-- s3:end -->"
DOCS_HEADER = "# Benchmarks\n\nEach section is rewritten by its script's `--update-docs`.\n"
BUCKET = "bench"
MiB = 1024**2
PART = 8 * MiB  # boto3's default part size and ranged-GET size
THREADS = 10  # boto3's default threads


def progress(message: str) -> None:
    print(f"s3.py: {message}", file=sys.stderr, flush=True)


def make_files(root: Path, count: int, size: int) -> list[Path]:
    """``count`` closed sets of one random file of ``size`` bytes each, durable on disk."""
    block = os.urandom(MiB)
    paths = []
    for step in range(count):
        path = hds_path(root, step=step, file="dyn", rank=0, ext="dat")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as out:
            for n in range(size // MiB):
                out.write(block[n % 7 :] + block[: n % 7])  # no two MiB alike
        mark_complete(root, step=step, file="dyn")
        paths.append(path)
    fsync_path(root)
    return paths


def timed(runs: Mapping[str, Callable[[], object]], repeats: int, reset: Callable[[str], object]):
    """Seconds of each run, interleaved round by round after one untimed warm-up round."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(repeats + 1):
        for name, run in runs.items():
            reset(name)
            began = time.perf_counter()
            run()
            if round_:
                times[name].append(time.perf_counter() - began)
            progress(f"round {round_} {name}: {time.perf_counter() - began:.2f} s")
    return times


def raw_client(server: SeaweedFS) -> Any:
    """A client that does the least per byte: unsigned payloads, no checksums."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=server.endpoint_url,
        config=Config(
            s3={"addressing_style": "path", "payload_signing_enabled": False},
            max_pool_connections=2 * THREADS,
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        ),
        **{
            name.lower(): value
            for name, value in server.credentials().items()
            if name in {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
        },
        region_name="us-east-1",
    )


def measure(args: argparse.Namespace, root: Path, server: SeaweedFS) -> dict[str, list[float]]:
    from boto3.s3.transfer import TransferConfig

    size = args.file_mib * MiB
    source = root / "source"
    files = make_files(source, args.files, size)
    client = server.client()
    raw = raw_client(server)
    config = TransferConfig()  # boto3's defaults: 8 MiB parts, 10 threads
    url = f"s3://{BUCKET}/nearline"
    options = {"endpoint_url": server.endpoint_url}
    os.environ.update(server.credentials())
    back, downloads, copies = root / "back", root / "downloads", root / "copies"
    payload = bytes(os.urandom(PART))  # the one part every raw PUT sends
    buffers = [bytearray(PART) for _ in range(THREADS)]  # where raw GETs land, reused
    for buffer in buffers:
        buffer[:] = payload  # touched once, before any timing

    def migrate() -> None:
        with Migrator(source, url, delete_source=False, storage_options=options) as migrator:
            assert len(migrator.run_once()) == args.files

    def upload() -> None:
        for n, path in enumerate(files):
            client.upload_file(str(path), BUCKET, f"boto3/{n}.dat", Config=config)

    def put() -> None:
        for n in range(args.files):
            key = f"raw/{n}.dat"
            upload = raw.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]

            def part(number: int, key: str = key, upload: str = upload) -> dict[str, Any]:
                answer = raw.upload_part(
                    Bucket=BUCKET, Key=key, UploadId=upload, PartNumber=number, Body=payload
                )
                return {"PartNumber": number, "ETag": answer["ETag"]}

            with ThreadPoolExecutor(THREADS) as pool:
                parts = list(pool.map(part, range(1, size // PART + 1)))
            raw.complete_multipart_upload(
                Bucket=BUCKET, Key=key, UploadId=upload, MultipartUpload={"Parts": parts}
            )

    def get() -> None:
        free = list(buffers)

        def fetch(first: int, key: str) -> None:
            buffer = free.pop()
            try:
                last = min(first + PART, size) - 1
                body = raw.get_object(Bucket=BUCKET, Key=key, Range=f"bytes={first}-{last}")
                with contextlib.closing(body["Body"]) as stream:
                    view, got = memoryview(buffer), 0
                    while n := stream._raw_stream.readinto(view[got : got + 256 * 1024]):
                        got += n
            finally:
                free.append(buffer)

        with ThreadPoolExecutor(THREADS) as pool:
            for n in range(args.files):
                key = f"boto3/{n}.dat"
                list(pool.map(fetch, range(0, size, PART), [key] * (size // PART)))

    def restore_all() -> None:
        assert len(restore(url, back, storage_options=options)) == args.files

    def download() -> None:
        downloads.mkdir(exist_ok=True)
        for n in range(args.files):
            client.download_file(BUCKET, f"boto3/{n}.dat", str(downloads / f"{n}.dat"))

    def copy() -> None:
        copies.mkdir(exist_ok=True)
        for n, path in enumerate(files):
            shutil.copyfile(path, copies / f"{n}.dat")
        fsync_path(copies)

    def reset(name: str) -> None:
        """Untimed: a migration starts from no journal and no archive, a restore or a
        download from no files; uploads overwrite their keys."""
        if name == "migrate":
            for leftover in source.glob(f"{JOURNAL}*"):
                leftover.unlink()
            for page in client.get_paginator("list_objects_v2").paginate(
                Bucket=BUCKET, Prefix="nearline/"
            ):
                for entry in page.get("Contents", []):
                    client.delete_object(Bucket=BUCKET, Key=entry["Key"])
        for folder in (back, downloads, copies):
            remove_path(folder)

    upload()  # the objects the downloads read, and a warm-up of the server
    times = timed(
        {"migrate": migrate, "upload": upload, "put": put, "copy": copy}, args.repeats, reset
    )
    reset("migrate")
    migrate()  # the archive restore reads
    times |= timed({"restore": restore_all, "download": download, "get": get}, args.repeats, reset)
    return times


ROWS = (  # (what, run, compared with)
    ("Migration: nearline `Migrator.run_once` (tar, SHA-256, read back)", "migrate", "upload"),
    ("boto3 `upload_file` (default TransferConfig)", "upload", None),
    ("Restore: nearline `restore` (every SHA-256 checked)", "restore", "download"),
    ("boto3 `download_file` (default TransferConfig)", "download", None),
    ("server ceiling: multipart PUTs from memory (no disk, no hashing)", "put", None),
    ("server ceiling: ranged GETs into memory (no disk, no hashing)", "get", None),
    ("local disk: copy of the files (+fsync)", "copy", None),
)  # fmt: skip


def report(args: argparse.Namespace, times: dict[str, list[float]], out: Path) -> str:
    nbytes = args.files * args.file_mib * MiB
    lines = [
        "## Object storage: migrate and restore on S3, against boto3",
        "",
        f"`.venv/bin/python benchmarks/s3.py --files {args.files} --file-mib {args.file_mib} "
        f"--repeats {args.repeats}`: {args.files} files of {args.file_mib} MiB "
        f"({nbytes / 1e9:.2f} GB), each a closed set, to SeaweedFS on 127.0.0.1 "
        f"(`weed server -s3`, {server_version()}; its data on the same disk). "
        f"Medians of {args.repeats} runs, interleaved round by round after a warm-up round.",
        "",
        "The server ceilings are the server alone: 8 MiB parts or ranges, 10 at once (boto3's "
        "defaults), from or into buffers already in memory, unsigned, without checksums. "
        "Fair-comparison note: boto3 (1.36 and later) sends a CRC32 of every part and, on "
        "plain http, signs every payload with its SHA-256, which the server checks again; "
        "nearline does neither (unsigned payloads, no CRC32): it takes each file's SHA-256 "
        "as it bundles it and compares every byte read back with the source before the "
        "source may go, and its restore checks every byte's SHA-256, which "
        "`download_file` does not.",
        "",
        f"Machine: {machine_summary(out)}.",
        "",
        "| what | median s | GB/s | vs boto3 |",
        "|---|---:|---:|---:|",
    ]
    for what, run, against in ROWS:
        seconds = median(times[run])
        ratio = f"{median(times[against]) / seconds:.0%}" if against else ""
        lines.append(f"| {what} | {seconds:.2f} | {nbytes / seconds / 1e9:.2f} | {ratio} |")
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="s3.py", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--files", type=int, default=8, help="files (each a closed set; default 8)")
    add("--file-mib", type=int, default=128, help="MiB per file (default 128)")
    add("--repeats", type=int, default=3, help="timed repeats (default 3)")
    add("--out", default=str(PROJECT / "bench-output" / "s3"), help="a disk folder")
    add("--update-docs", action="store_true", help=f"rewrite docs/{DOCS.name}")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if min(args.files, args.file_mib, args.repeats) < 1:
        print("s3.py: --files, --file-mib and --repeats must be >= 1", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="run-", dir=out))
    try:
        with SeaweedFS(root / "seaweedfs") as server:
            server.make_bucket(BUCKET)
            times = measure(args, root, server)
    finally:
        remove_path(root)
    show(report(args, times, out), update_docs=args.update_docs)
    return 0


def show(text: str, *, update_docs: bool) -> None:
    """Print the table; with ``update_docs``, put it in docs/benchmarks.md too."""
    print(text)
    if update_docs:
        replace_section(DOCS, BEGIN, END, text, DOCS_HEADER)
        progress(f"wrote {DOCS}")


if __name__ == "__main__":
    sys.exit(main())
