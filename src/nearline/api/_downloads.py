"""Downloading an item's file: a plain handler that finds it (restoring it to scratch when
it is in a bundle or an fsspec store) and the thin FastAPI router that sends it.

A file in an S3 bucket is answered, by default, with a redirect (307) to a presigned URL that
works for five minutes, as NASA's Earthdata Cloud does, so its bytes go from the store to the
client and never through the service; ``?redirect=false`` asks for the bytes themselves,
streamed through the service from the bucket (so do stores that cannot sign). Ownership is
checked first: another user's item is a 404, never a redirect."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, RedirectResponse, Response, StreamingResponse
from starlette.background import BackgroundTask

from nearline.api._adapter import ERRORS, OGC_ERROR, User, service_of
from nearline.archive import fetch, is_local, is_object_url
from nearline.errors import ItemNotFound, NearlineError, ServiceError
from nearline.orders import Service

log = logging.getLogger(__name__)
CHUNK = 1024**2  # bytes of a bucket object streamed at a time
REDIRECT = {"description": "The file is in an S3 bucket: its presigned URL is in Location"}
FILE_BODY = {  # an asset's bytes come in the asset's own media type
    "description": "The file's bytes, in the media type its item's asset names",
    "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
}


@dataclass(frozen=True)
class Download:
    """A file to send: ``scratch``, if set, is the folder it was restored to, removed once
    it is sent."""

    path: Path
    media_type: str
    scratch: Path | None = None


@dataclass(frozen=True)
class BucketObject:
    """An asset in an S3 bucket: ``link`` is a presigned URL to redirect to (None: stream
    the object from ``location`` through the service)."""

    location: str
    media_type: str
    size: int | None
    link: str | None


def asset_file(
    service: Service,
    collection_id: str,
    item_id: str,
    key: str,
    *,
    user: str,
    redirect: bool = True,
) -> Download | BucketObject:
    """The file of item ``item_id``'s asset ``key``, as ``user`` may see it; for an object
    in a bucket, a presigned link to it if ``redirect`` (and the store can sign)."""
    item = service.catalogue.get_item(collection_id, item_id, viewer=user)
    asset = item.assets.get(key)
    if asset is None:
        raise ItemNotFound(f"item {item_id} has no asset {key!r}")
    if is_object_url(asset.location):
        link = service.stores.link(asset.location) if redirect else None
        return BucketObject(asset.location, asset.media_type, asset.size, link)
    if is_local(asset.location):
        path = Path(asset.location)
        if not path.is_file():
            raise ItemNotFound(f"item {item_id}'s file {key!r} is no longer in the archive")
        return Download(path, asset.media_type)
    # in a bundle or an object store: restored (verified) to scratch, sent, removed
    scratch = Path(tempfile.mkdtemp(prefix="download-", dir=service.places.scratch))
    try:
        path = fetch(asset, scratch)
    except (OSError, NearlineError) as error:
        shutil.rmtree(scratch, ignore_errors=True)
        log.error("download of %s/%s/%s failed: %s", collection_id, item_id, key, error)
        raise ServiceError(
            f"item {item_id}'s file {key!r} cannot be read from the archive now", status=503
        ) from None
    return Download(path, asset.media_type, scratch)


def build_router() -> APIRouter:
    router = APIRouter(responses=ERRORS)

    @router.get(
        "/collections/{collection_id}/items/{item_id}/assets/{key}",
        tags=["Data"],
        summary="Download an item's file",
        response_class=FileResponse,
        responses={200: FILE_BODY, 307: REDIRECT, 503: OGC_ERROR},
    )
    def download(
        collection_id: str,
        item_id: str,
        key: str,
        request: Request,
        user: User,
        redirect: bool = Query(
            True,
            description="for a file in an S3 bucket: true (default) answers 307 with a "
            "presigned URL that works for 5 minutes; false streams the bytes through the "
            "service",
        ),
    ) -> Response:
        service = service_of(request)
        found = asset_file(service, collection_id, item_id, key, user=user, redirect=redirect)
        if isinstance(found, BucketObject):
            return _from_bucket(service, found)
        removal = None
        if found.scratch is not None:
            removal = BackgroundTask(shutil.rmtree, found.scratch, ignore_errors=True)
        return FileResponse(
            found.path, media_type=found.media_type, filename=found.path.name, background=removal
        )

    return router


def _from_bucket(service: Service, found: BucketObject) -> Response:
    """A redirect to the object's presigned link, or its bytes streamed from the bucket."""
    if found.link is not None:
        return RedirectResponse(found.link, status_code=307)
    try:
        stream = service.stores.open(found.location)
    except (OSError, NearlineError) as error:
        log.error("download of %s failed: %s", found.location, error)
        raise ServiceError("the file cannot be read from the archive now", status=503) from None

    def pieces() -> Iterator[bytes]:
        with stream:
            while piece := stream.read(CHUNK):
                yield piece

    name = found.location.rpartition("/")[2]
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    if found.size is not None:
        headers["Content-Length"] = str(found.size)
    return StreamingResponse(pieces(), media_type=found.media_type, headers=headers)
