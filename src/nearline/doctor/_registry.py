"""The capabilities nearline needs from a machine, in the order ``nearline doctor`` lists
them. A new one is one more entry here (and its Debian packages in scripts/system-packages,
which tests/test_doctor.py holds to this list)."""

from __future__ import annotations

from collections.abc import Sequence

from nearline.doctor import _builds as builds
from nearline.doctor import _clients as clients
from nearline.doctor import _monitoring as monitoring
from nearline.doctor import _services as services
from nearline.doctor._base import Capability
from nearline.errors import ConfigError
from nearline.testing.keycloak import fetch_command
from nearline.testing.s3server import build_command

PYTHON_DEPENDENCIES = "make .venv/.installed (nearline's Python dependencies, from uv.lock)"

CAPABILITIES: tuple[Capability, ...] = (
    Capability(
        name="sandbox",
        purpose="algorithm runs, held at the sandbox's full level (as root)",
        probe=services.sandbox,
        packages=("bubblewrap",),
    ),
    Capability(
        name="postgis",
        purpose="the catalogue and service state in PostgreSQL",
        probe=services.postgis,
        packages=("postgresql", "postgresql-postgis"),
    ),
    Capability(
        name="chromium",
        purpose="the web page's tests",
        probe=services.chromium,
        packages=("chromium",),
    ),
    Capability(
        name="hdf4-netcdf",
        purpose="C algorithms built at deploy against HDF4 and netCDF",
        probe=builds.hdf4_netcdf,
        packages=("gcc", "make", "libhdf4-alt-dev", "libnetcdf-dev"),
    ),
    Capability(
        name="mpi-wheel",
        purpose="burst's MPI ranks for Python and C models",
        probe=builds.mpi_wheel,
        install=PYTHON_DEPENDENCIES,
    ),
    Capability(
        name="mpi-fortran",
        purpose="burst's Fortran models",
        probe=builds.mpi_fortran,
        packages=("openmpi-bin", "libopenmpi-dev", "gfortran"),
    ),
    Capability(
        name="prometheus",
        purpose="watching the service: the suite's Prometheus scrapes `nearline serve --metrics`",
        probe=monitoring.prometheus,
        packages=("prometheus",),
    ),
    Capability(
        name="java",
        purpose="the OGC's conformance suites (python -m nearline.testing.ogc_suites)",
        probe=clients.java,
        packages=("openjdk-17-jre-headless",),
    ),
    Capability(
        name="gdal",
        purpose="GDAL's OGC API - Features client (OAPIF) against the service, in its tests",
        probe=clients.gdal_oapif,
        packages=("gdal-bin",),
    ),
    Capability(
        name="node",
        purpose="building STAC Browser from the npm registry for its test (scripts/stac-browser)",
        probe=clients.node_npm,
        packages=("nodejs", "npm"),
    ),
    Capability(
        name="wrk",
        purpose="the concurrent-search benchmark's load generator (benchmarks/"
        "search_concurrency.py)",
        probe=clients.wrk,
        packages=("wrk",),
        required=False,  # no test needs it
    ),
    Capability(
        name="s3-server",
        purpose="the archive on object storage: a real S3 server (SeaweedFS) for the tests",
        probe=services.s3_server,
        install=build_command(),
    ),
    Capability(
        name="oidc",
        purpose="signing in through an OpenID Connect provider: the one $NEARLINE_OIDC names, "
        "else the tests' Keycloak",
        probe=services.oidc,
        install=fetch_command(),
    ),
)


def capabilities(names: Sequence[str] = ()) -> tuple[Capability, ...]:
    """The capabilities called ``names``, in the registry's order; all of them when empty."""
    known = {capability.name for capability in CAPABILITIES}
    if unknown := [name for name in names if name not in known]:
        raise ConfigError(
            f"no capability called {', '.join(map(repr, unknown))}: choose from "
            f"{', '.join(capability.name for capability in CAPABILITIES)}"
        )
    return tuple(c for c in CAPABILITIES if not names or c.name in names)


def debian_packages() -> list[str]:
    """Every Debian package the capabilities need, each once, in the registry's order."""
    return list(dict.fromkeys(p for capability in CAPABILITIES for p in capability.packages))
