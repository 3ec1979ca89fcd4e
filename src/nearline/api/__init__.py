"""api: the web service (STAC API, OGC API - Processes, jobs) over an orders.Service."""

from __future__ import annotations

from nearline.api import _quiet  # noqa: F401 - first: before stac-fastapi is imported
from nearline.api._app import create_app
from nearline.api._auth import Doors, open_doors
from nearline.api._cors import CrossOrigin

__all__ = ["CrossOrigin", "Doors", "create_app", "open_doors"]
