"""The web page at /app/: plain HTML, CSS and ES modules shipped in the package (``static/``),
and the world map it draws on. These files are public; the page's own API calls carry the
user's token.

Every answer here carries a Content-Security-Policy that allows only this origin's scripts,
styles and connections, and images from this origin or the page's own blobs (quicklooks and
downloads fetched with the token): no inline script, no framing.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import FileResponse, RedirectResponse, Response

from nearline.api._stac import base_url
from nearline.api._worldmap import WorldMap
from nearline.errors import NotFound

MOUNT = "/app"
MAP_NAME = "world.png"
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' blob:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


class PageNotFound(NotFound):
    """No such file of the web page."""

    code = "not-found"


def static_files(root: Traversable) -> dict[str, Traversable]:
    """The page's files by their path below /app/: only these are ever served."""
    found: dict[str, Traversable] = {}

    def walk(folder: Traversable, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            elif any(entry.name.endswith(suffix) for suffix in MEDIA_TYPES):
                found[f"{prefix}{entry.name}"] = entry

    walk(root, "")
    return found


def _suffix(name: str) -> str:
    return name[name.rfind(".") :]


def build_router(pages: dict[str, Traversable], world: WorldMap) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get(MOUNT)
    def enter(request: Request) -> Response:
        return RedirectResponse(f"{base_url(request)}{MOUNT}/", status_code=308)

    @router.get(f"{MOUNT}/{MAP_NAME}")
    def world_map() -> Response:
        return FileResponse(world.png(), media_type="image/png", headers=HEADERS)

    @router.get(MOUNT + "/{name:path}")
    def page(name: str) -> Response:
        found = pages.get(name or "index.html")
        if found is None:
            raise PageNotFound(f"the web page has no file {name!r}")
        media_type = MEDIA_TYPES[_suffix(found.name)]
        return Response(found.read_bytes(), media_type=media_type, headers=HEADERS)

    return router


def install(app: FastAPI) -> None:
    """Serve the page under /app/ (its map made in the service's data folder)."""
    data = app.state.service.places.data
    world = WorldMap(data / "web" / "world-1440x720.png")
    app.include_router(build_router(static_files(files("nearline.api") / "static"), world))
