"""Downloading an item's file: a plain handler that finds it (restoring it to scratch when
it is in a bundle or an object store) and the thin FastAPI router that sends it."""

from __future__ import annotations

import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response
from starlette.background import BackgroundTask

from nearline.api.adapter import ERRORS, OGC_ERROR, User, service_of
from nearline.archive import fetch, is_local
from nearline.errors import ItemNotFound, NearlineError, ServiceError
from nearline.orders import Service

log = logging.getLogger(__name__)
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


def asset_file(
    service: Service, collection_id: str, item_id: str, key: str, *, user: str
) -> Download:
    """The file of item ``item_id``'s asset ``key``, as ``user`` may see it."""
    item = service.catalogue.get_item(collection_id, item_id, viewer=user)
    asset = item.assets.get(key)
    if asset is None:
        raise ItemNotFound(f"item {item_id} has no asset {key!r}")
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
        responses={200: FILE_BODY, 503: OGC_ERROR},
    )
    def download(
        collection_id: str, item_id: str, key: str, request: Request, user: User
    ) -> Response:
        found = asset_file(service_of(request), collection_id, item_id, key, user=user)
        removal = None
        if found.scratch is not None:
            removal = BackgroundTask(shutil.rmtree, found.scratch, ignore_errors=True)
        return FileResponse(
            found.path, media_type=found.media_type, filename=found.path.name, background=removal
        )

    return router
