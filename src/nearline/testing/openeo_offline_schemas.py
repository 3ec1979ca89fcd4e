"""A pytest plugin for openeo-test-suite runs on a machine that reaches no internet: the
suite's STAC validator (stac-validator) fetches the STAC JSON schemas it checks collections
against from schemas.stacspec.org, and jsonschema fetches the files they refer to; here
each such request is answered with pystac's own bundled copy of the same official schema
(``pystac.validation.jsonschemas``, STAC 1.1.0), byte for byte, and every other request goes
out as it would. The checks themselves are the suite's, unchanged.

It imports nothing of nearline (the suite's environment does not have it): the runner
(:mod:`nearline.testing.openeo_suite`) puts this file's folder on ``PYTHONPATH`` and loads it
with ``-p openeo_offline_schemas``.
"""

from __future__ import annotations

import io
import urllib.request
from collections.abc import Callable
from importlib.resources import files
from typing import Any

import pytest

STAC_SCHEMAS = "https://schemas.stacspec.org/v"


def local_schema(url: str) -> bytes | None:
    """pystac's copy of the STAC schema at ``url`` (``https://schemas.stacspec.org/vX/
    KIND-spec/json-schema/NAME.json``), None for any other URL or one pystac lacks."""
    if not url.startswith(STAC_SCHEMAS):
        return None
    version, _, rest = url.removeprefix(STAC_SCHEMAS).partition("/")
    name = rest.split("#")[0].rpartition("/")[2]
    folder = files("pystac.validation.jsonschemas") / "stac-spec" / f"v{version}"
    path = folder / name
    return path.read_bytes() if name and path.is_file() else None


def _requests_get(original: Callable[..., Any]) -> Callable[..., Any]:
    import requests

    def get(url: str, *args: Any, **kwargs: Any) -> Any:
        found = local_schema(str(url))
        if found is None:
            return original(url, *args, **kwargs)
        response = requests.models.Response()
        response.status_code, response._content, response.url = 200, found, str(url)
        response.headers["Content-Type"] = "application/schema+json"
        return response

    return get


def _urlopen(original: Callable[..., Any]) -> Callable[..., Any]:
    def urlopen(request: Any, *args: Any, **kwargs: Any) -> Any:
        url = request.full_url if isinstance(request, urllib.request.Request) else str(request)
        found = local_schema(url)
        return original(request, *args, **kwargs) if found is None else io.BytesIO(found)

    return urlopen


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Answer schema requests from pystac's copies for the whole run."""
    import requests

    requests.get = _requests_get(requests.get)
    urllib.request.urlopen = _urlopen(urllib.request.urlopen)
