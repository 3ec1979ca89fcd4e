"""``POST /openeo/1.2/result``: a process graph run synchronously, its saved result the
answer. The graph is checked before anything runs (nearline.openeo), each collection it loads
is found in the catalogue as the signed-in user may see it (another's private collection is
``CollectionNotFound``; a swath collection is not a cube), and it runs in a worker thread of
this server on the files where they lie, reading only the windows it needs and under the
operator's limit on values read (``NEARLINE_COVERAGE_MAX_VALUES``). At most
:data:`CONCURRENT_GRAPHS` run at once; the rest wait their turn. A UDF never runs here: it
runs in the sandbox, as a batch job."""

from __future__ import annotations

import json
import shutil
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, Response
from starlette.background import BackgroundTask

from nearline import openeo
from nearline.api._adapter import service_of
from nearline.api._auth import check_public, viewer
from nearline.api._gridded import GRID, MAX_LAYERS, gridded_or_none, max_values, opener
from nearline.api._openeo import openeo_user
from nearline.archive import Search
from nearline.coverage import Layer
from nearline.errors import CollectionNotFound, OpenEOError
from nearline.orders import Service

CONCURRENT_GRAPHS = 2  # graphs run at once by one server: each holds its cube in memory
_LIMITER: list[anyio.CapacityLimiter] = []  # made on first use, in the event loop


def graph_stacks(request: Request, graph: dict[str, Any]) -> dict[str, openeo.Stack]:
    """The files of each collection ``graph`` loads, as the request's user may see them.

    Raises
    ------
    CollectionNotFound
        A collection that does not exist or is another user's.
    OpenEOError
        A collection that is not a data cube (its items name no grid).
    """
    service = service_of(request)
    calls = openeo.load_calls(graph)
    spans: dict[str, tuple[datetime | None, datetime | None] | None] = {}
    for call in calls:
        span = openeo.temporal_span(call.temporal_extent)
        known = spans.get(call.collection, span)
        spans[call.collection] = _union(known, span)
    return {collection: _stack(service, request, collection, span)
            for collection, span in spans.items()}  # fmt: skip


def _union(one: Any, other: Any) -> Any:
    """The span holding both (None bounds: open)."""
    if one is None or other is None:
        return None
    starts, ends = (one[0], other[0]), (one[1], other[1])
    start = None if None in starts else min(starts)
    end = None if None in ends else max(ends)
    return start, end


def _stack(service: Service, request: Request, collection_id: str, span: Any) -> openeo.Stack:
    user = viewer(request)
    try:
        check_public(request, collection_id)
        collection = service.catalogue.get_collection(collection_id, viewer=user)
    except CollectionNotFound:
        raise CollectionNotFound(
            f"load_collection: collection {collection_id!r} does not exist, or is not yours to "
            f"load; GET {openeo.PATH}/collections lists the ones you may"
        ) from None
    gridded = gridded_or_none(service, collection, user)
    if gridded is None:
        raise OpenEOError(
            f"load_collection: {collection_id} is a collection of swath granules, not a data "
            "cube: its granules lie on no grid; search them through the STAC API, or composite "
            "them onto a grid first", status=400, openeo_code="ProcessParameterInvalid",
        )  # fmt: skip
    start, end = span if span is not None else (None, None)
    search = Search(collections=(collection_id,), start=start, end=end, limit=MAX_LAYERS,
                    viewer=user)  # fmt: skip
    items = [item for item in service.catalogue.search(search).items
             if item.properties.get(GRID) == gridded.grid]  # fmt: skip
    layers = tuple(Layer(item.id, item.start, item.end or item.start, opener(service, item))
                   for item in items)  # fmt: skip
    _, first, last = collection.extent
    return openeo.Stack(collection_id, gridded.grid, layers,
                        (first, last) if first and last else None)  # fmt: skip


async def _body(request: Request) -> Any:
    try:
        return json.loads(await request.body())
    except ValueError:
        raise OpenEOError("the body is not JSON: send {\"process\": {\"process_graph\": ...}}",
                          status=400, openeo_code="BadRequest") from None  # fmt: skip


def build_router() -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.post(f"{openeo.PATH}/result", dependencies=[Depends(openeo_user)])
    async def result(request: Request) -> Response:
        graph = openeo.process_graph_of(await _body(request))
        stacks = await anyio.to_thread.run_sync(graph_stacks, request, graph)
        folder = Path(tempfile.mkdtemp(prefix="nearline-openeo-"))
        run = openeo.Run(stacks, folder, max_values())
        if not _LIMITER:
            _LIMITER.append(anyio.CapacityLimiter(CONCURRENT_GRAPHS))
        try:
            saved = await anyio.to_thread.run_sync(openeo.run_graph, graph, run,
                                                   limiter=_LIMITER[0])  # fmt: skip
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        first = saved[0]
        return FileResponse(first.path, media_type=first.media_type, filename=first.path.name,
                            background=BackgroundTask(shutil.rmtree, folder, True))  # fmt: skip

    return router
