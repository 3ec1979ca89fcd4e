"""What the openEO face says of itself: the capabilities document and the endpoints it
answers, the well-known version list, the conformance classes, the file formats and the UDF
runtimes. Each says only what is served now: an endpoint not yet built is not listed, so a
client that reads the capabilities (as the openEO Python client does) never calls it."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from nearline.archive import STAC_VERSION

API_VERSION = "1.2.0"
PATH = "/openeo/1.2"  # below the service's root; /.well-known/openeo sits at the root
JSON = "application/json"
# the endpoints served, relative to PATH; /credentials/oidc only where a provider is set
ENDPOINTS = (
    ("/", ("GET",)),
    ("/conformance", ("GET",)),
    ("/file_formats", ("GET",)),
    ("/udf_runtimes", ("GET",)),
    ("/service_types", ("GET",)),
    ("/collections", ("GET",)),
    ("/collections/{collection_id}", ("GET",)),
    ("/processes", ("GET",)),
    ("/me", ("GET",)),
    ("/credentials/basic", ("GET",)),
    ("/result", ("POST",)),
    ("/validation", ("POST",)),
    ("/jobs", ("GET", "POST")),
    ("/jobs/{job_id}", ("GET", "PATCH", "DELETE")),
    ("/jobs/{job_id}/results", ("GET", "POST", "DELETE")),
    ("/jobs/{job_id}/logs", ("GET",)),
    ("/jobs/{job_id}/estimate", ("GET",)),
)
SIGN_IN = ("/credentials/oidc", ("GET",))
CONFORMANCE = [f"https://api.openeo.org/{API_VERSION}"]
DESCRIPTION = (
    "nearline's archive as an openEO back-end: its gridded collections (Pathfinder "
    "composites on a named grid) described as data cubes, the processes it runs on them "
    "(synchronously, through /result), batch jobs (/jobs) that run process graphs, Python "
    "UDFs included, as nearline's own jobs in its sandbox, and who you are."
)


def backend_version() -> str:
    """nearline's version, the back-end's."""
    try:
        return version("nearline")
    except PackageNotFoundError:  # a source tree that is not installed
        return "0+unknown"


def capabilities(base: str, root: str, *, sign_in: bool) -> dict[str, Any]:
    """The body of ``GET /openeo/1.2/``.

    Parameters
    ----------
    base
        The openEO face's root URL (``ROOT/openeo/1.2``).
    root
        The service's root URL.
    sign_in
        Whether an OpenID Connect provider is set (``/credentials/oidc`` is then listed).
    """
    served = [*ENDPOINTS, SIGN_IN] if sign_in else list(ENDPOINTS)
    return {
        "type": "Catalog",
        "id": "nearline",
        "title": "nearline",
        "description": DESCRIPTION,
        "api_version": API_VERSION,
        "backend_version": backend_version(),
        "stac_version": STAC_VERSION,
        "conformsTo": CONFORMANCE,
        "production": False,
        "endpoints": [{"path": path, "methods": list(methods)} for path, methods in served],
        "links": [
            {"rel": "self", "type": JSON, "href": f"{base}/", "title": "This back-end"},
            {"rel": "version-history", "type": JSON, "href": f"{root}/.well-known/openeo",
             "title": "The openEO versions served"},
            {"rel": "conformance", "type": JSON, "href": f"{base}/conformance",
             "title": "Conformance classes"},
            {"rel": "data", "type": JSON, "href": f"{base}/collections",
             "title": "The archive's collections"},
            {"rel": "about", "type": "text/html", "href": f"{root}/",
             "title": "The service's own page"},
        ],
    }  # fmt: skip


def well_known(root: str) -> dict[str, Any]:
    """The body of ``GET /.well-known/openeo``: the one version served, not yet production.

    Parameters
    ----------
    root
        The service's root URL.
    """
    return {"versions": [{"url": f"{root}{PATH}", "api_version": API_VERSION,
                          "production": False}]}  # fmt: skip


def conformance() -> dict[str, Any]:
    """The body of ``GET /conformance``: openEO API 1.2.0."""
    return {"conformsTo": list(CONFORMANCE)}


def file_formats() -> dict[str, Any]:
    """The body of ``GET /file_formats``: the formats ``save_result`` will write (netCDF and
    GeoTIFF, nearline's coverages' own); no input formats (no file is uploaded)."""
    return {
        "input": {},
        "output": {
            "netCDF": {"title": "netCDF-4 (CF)", "gis_data_types": ["raster"],
                       "parameters": {}},
            "GTiff": {"title": "GeoTIFF (Cloud-Optimized)", "gis_data_types": ["raster"],
                      "parameters": {}},
        },
    }  # fmt: skip


def service_types() -> dict[str, Any]:
    """The body of ``GET /service_types``: none. nearline offers its web maps and coverages
    through OGC API - Tiles and Coverages at its root, not as openEO secondary services."""
    return {}


def _installed(name: str) -> dict[str, str]:
    try:
        return {"version": version(name)}
    except PackageNotFoundError:
        return {"version": "not installed"}


def udf_runtimes() -> dict[str, Any]:
    """The body of ``GET /udf_runtimes``: Python, the version the service runs, with the
    libraries a UDF finds, marked experimental: UDFs run in batch jobs only, in the sandbox."""
    python = ".".join(platform.python_version_tuple()[:2])
    return {
        "Python": {
            "title": "Python",
            "description": "run_udf runs in batch jobs, in nearline's sandbox under the "
            "limits of uploaded algorithms (no network, only the job's own files, its memory, "
            "CPU, process and disk limits); a synchronous /result refuses it.",
            "type": "language",
            "experimental": True,
            "default": python,
            "versions": {
                python: {
                    "libraries": {name: _installed(name) for name in ("numpy", "xarray", "openeo")}
                }
            },
        }
    }
