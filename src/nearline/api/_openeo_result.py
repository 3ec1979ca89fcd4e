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
from pathlib import Path
from typing import Any

import anyio
from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, Response
from starlette.background import BackgroundTask

from nearline import openeo
from nearline.api._adapter import service_of
from nearline.api._auth import viewer
from nearline.api._gridded import GRID, max_values, opener
from nearline.api._openeo import openeo_user
from nearline.api._openeo_inputs import job_inputs
from nearline.coverage import Layer
from nearline.errors import OpenEOError

CONCURRENT_GRAPHS = 2  # graphs run at once by one server: each holds its cube in memory
_LIMITER: list[anyio.CapacityLimiter] = []  # made on first use, in the event loop


def graph_stacks(request: Request, graph: dict[str, Any]) -> dict[str, openeo.Stack]:
    """The files of each collection ``graph`` loads, as the request's user may see them (the
    items a batch job of it would read, :func:`job_inputs`), read where they lie.

    Raises
    ------
    OpenEOError
        A collection that does not exist or is another user's (``CollectionNotFound``), is
        not a data cube, or holds no item in a temporal extent (``NoDataAvailable``).
    """
    service = service_of(request)
    inputs = job_inputs(service, graph, user=viewer(request))
    stacks = {}
    for collection, items in inputs.items.items():
        ordered = sorted(items, key=lambda item: item.start)
        layers = tuple(Layer(item.id, item.start, item.end or item.start, opener(service, item))
                       for item in ordered)  # fmt: skip
        stacks[collection] = openeo.Stack(collection, str(ordered[0].properties[GRID]), layers)
    return stacks


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
