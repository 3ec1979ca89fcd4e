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
from starlette.exceptions import HTTPException

from nearline.api._adapter import ERRORS, OGC_ERROR, User, service_of
from nearline.api._ranges import one_range, requested_ranges
from nearline.api._reference_process import ReferenceMakers
from nearline.api._references import ReferenceCache, References, with_url
from nearline.api._stac import base_url
from nearline.archive import (
    REFERENCES,
    Asset,
    fetch,
    has_references,
    is_local,
    is_object_url,
    item_to_stac,
)
from nearline.errors import InvalidRequest, ItemNotFound, NearlineError, ServiceError
from nearline.orders import Service

log = logging.getLogger(__name__)
CHUNK = 1024**2  # bytes of a bucket object streamed at a time
REDIRECT = {"description": "The file is in an S3 bucket: its presigned URL is in Location"}
RANGES = {"description": "The ranges asked for (Range), one or several (multipart/byteranges)"}
NOT_SATISFIABLE = {"description": "No range asked for starts in the file (Content-Range */SIZE)"}
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
    etag: str | None = None


@dataclass(frozen=True)
class BucketObject:
    """An asset in an S3 bucket: ``link`` is a presigned URL to redirect to (None: stream
    the object from ``location`` through the service)."""

    location: str
    media_type: str
    size: int | None
    link: str | None
    etag: str | None = None


def entity_tag(asset: Asset) -> str | None:
    """A strong ETag from the bytes' catalogued SHA-256 (None: not known), the same wherever
    the bytes lie and across restores from a bundle, so ``If-Range`` works on every asset."""
    return f'"{asset.sha256}"' if asset.sha256 else None


def find_asset(service: Service, collection_id: str, item_id: str, key: str, *, user: str) -> Asset:
    """Item ``item_id``'s asset ``key``, as ``user`` may see it (another's is not found)."""
    item = service.catalogue.get_item(collection_id, item_id, viewer=user)
    asset = item.assets.get(key)
    if asset is None:
        raise ItemNotFound(f"item {item_id} has no asset {key!r}")
    return asset


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
    asset = find_asset(service, collection_id, item_id, key, user=user)
    if is_object_url(asset.location):
        link = service.stores.link(asset.location) if redirect else None
        return BucketObject(asset.location, asset.media_type, asset.size, link, entity_tag(asset))
    return local_file(service, asset, f"item {item_id}'s file {key!r}")


def local_file(service: Service, asset: Asset, what: str) -> Download:
    """An asset's bytes in a local file: where it lies, or restored (verified) to scratch
    from a bundle or a store, to be removed once used."""
    if is_local(asset.location):
        path = Path(asset.location)
        if not path.is_file():
            raise ItemNotFound(f"{what} is no longer in the archive")
        return Download(path, asset.media_type, etag=entity_tag(asset))
    scratch = Path(tempfile.mkdtemp(prefix="download-", dir=service.places.scratch))
    try:
        path = fetch(asset, scratch, stores=service.stores)
    except (OSError, NearlineError) as error:
        shutil.rmtree(scratch, ignore_errors=True)
        log.error("download of %s failed: %s", what, error)
        raise ServiceError(f"{what} cannot be read from the archive now", status=503) from None
    return Download(path, asset.media_type, scratch, entity_tag(asset))


def build_router() -> APIRouter:
    router = APIRouter(responses=ERRORS)
    makers = ReferenceMakers()
    path = "/collections/{collection_id}/items/{item_id}/assets/{key}"

    @router.get(
        path,
        tags=["Data"],
        summary="Download an item's file, whole or by ranges",
        response_class=FileResponse,
        responses={
            200: FILE_BODY,
            206: RANGES,
            307: REDIRECT,
            416: NOT_SATISFIABLE,
            503: OGC_ERROR,
        },
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
        if key == REFERENCES:
            return references_response(service, makers, collection_id, item_id, request, user)
        found = asset_file(service, collection_id, item_id, key, user=user, redirect=redirect)
        if isinstance(found, BucketObject):
            return _from_bucket(service, found, request)
        return file_response(found, request)

    @router.head(
        path,
        tags=["Data"],
        summary="An item's file's length, ETag and range support, without its bytes",
        responses={200: {"description": "Content-Length, ETag and Accept-Ranges: bytes"}},
    )
    def download_head(
        collection_id: str, item_id: str, key: str, request: Request, user: User
    ) -> Response:
        service = service_of(request)
        if key == REFERENCES:
            return references_response(service, makers, collection_id, item_id, request, user)
        asset = find_asset(service, collection_id, item_id, key, user=user)
        size = None if is_local(asset.location) else asset.size  # a local file: its own
        if size is None and is_object_url(asset.location):
            try:
                size = service.stores.size(asset.location)
            except (OSError, NearlineError) as error:
                log.error("looking up %s failed: %s", asset.location, error)
                raise ServiceError("the file cannot be reached now", status=503) from None
        if size is None:  # a local file, or a bundle member of unknown size (restored)
            found = local_file(service, asset, f"item {item_id}'s file {key!r}")
            return file_response(found, request)
        headers = {"Content-Length": str(size), "Accept-Ranges": "bytes"}
        if (etag := entity_tag(asset)) is not None:
            headers["ETag"] = etag
        return Response(headers=headers, media_type=asset.media_type)

    return router


def file_response(found: Download, request: Request) -> FileResponse:
    """A local file's response: whole, a range or several (Starlette answers ``Range`` and
    ``If-Range``), under the asset's own ETag; a restored copy removed once sent."""
    removal = None
    if found.scratch is not None:
        removal = BackgroundTask(shutil.rmtree, found.scratch, ignore_errors=True)
    if "if-range" not in request.headers:  # else a stale If-Range sends it whole, Range unread
        try:
            requested_ranges(request.headers.get("range"), found.path.stat().st_size)
        except (InvalidRequest, HTTPException):
            if found.scratch is not None:
                shutil.rmtree(found.scratch, ignore_errors=True)
            raise
    return FileResponse(
        found.path,
        media_type=found.media_type,
        filename=found.path.name,
        background=removal,
        headers={"ETag": found.etag} if found.etag else None,
    )


def references_response(
    service: Service,
    makers: ReferenceMakers,
    collection_id: str,
    item_id: str,
    request: Request,
    user: str,
) -> Response:
    """Kerchunk references to the item's data asset, its chunks at the asset's URL under the
    server's public base URL; made from the file on first request, then kept."""
    item = service.catalogue.get_item(collection_id, item_id, viewer=user)
    if not has_references(item):
        raise ItemNotFound(f"item {item_id} has no asset {REFERENCES!r}")
    data = item.assets["data"]

    def make() -> References:
        found = local_file(service, data, f"item {item_id}'s data")
        try:
            return makers.make(found.path, name=f"item {item_id}'s data")
        finally:
            if found.scratch is not None:
                shutil.rmtree(found.scratch, ignore_errors=True)

    kept = ReferenceCache(service.places.references).get(data.sha256, make)
    url = item_to_stac(item, base_url(request))["assets"]["data"]["href"]
    return Response(with_url(kept, url), media_type="application/json")


def _from_bucket(service: Service, found: BucketObject, request: Request) -> Response:
    """A redirect to the object's presigned link (the client sends its Range on to the
    store), or its bytes streamed from the bucket: all of them, or the one range asked."""
    if found.link is not None and request.headers.get("if-range", found.etag) == found.etag:
        return RedirectResponse(found.link, status_code=307)
    # streamed: asked to, the store cannot sign, or an If-Range naming other bytes (a store
    # may ignore If-Range, as SeaweedFS does, and would send a range of bytes the client
    # does not have): so the service sends the whole object itself
    start, stop = one_range(request.headers, found.size, found.etag) or (0, found.size)
    try:
        stream = service.stores.open(found.location)
        stream.seek(start)
    except (OSError, NearlineError) as error:
        log.error("download of %s failed: %s", found.location, error)
        raise ServiceError("the file cannot be read from the archive now", status=503) from None

    def pieces() -> Iterator[bytes]:
        left = None if stop is None else stop - start
        with stream:
            while (left is None or left > 0) and (
                piece := stream.read(CHUNK if left is None else min(CHUNK, left))
            ):
                if left is not None:
                    left -= len(piece)
                yield piece

    name = found.location.rpartition("/")[2]
    headers = {"Content-Disposition": f'attachment; filename="{name}"', "Accept-Ranges": "bytes"}
    if found.etag is not None:
        headers["ETag"] = found.etag
    if stop is not None:
        headers["Content-Length"] = str(stop - start)
    status = 200
    if (start, stop) != (0, found.size):
        status = 206
        headers["Content-Range"] = f"bytes {start}-{stop - 1}/{found.size}"
    return StreamingResponse(
        pieces(), status_code=status, media_type=found.media_type, headers=headers
    )
