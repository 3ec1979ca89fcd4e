"""Schemathesis over the whole OpenAPI document at /api, against a live server: whatever a
client sends, the answer is never a 5xx, and its status, media type and (where the document
declares one) body are ones the document allows.

Each operation of the document (test_standards.ROUTES, which a test there holds equal to the
document's) is fuzzed with data that fits its schema and data that does not. This uses
schemathesis' Python API (``APIOperation.as_strategy`` and ``Case.call_and_validate`` under
hypothesis) rather than ``schemathesis.pytest.from_fixture(...).parametrize()``: in
schemathesis 4.32.5 the lazy loader reads ``request.node._nodeid`` (schemathesis/pytest/
lazy.py:212), which pytest 9 no longer has, so every such test fails with an AttributeError.

The server is this module's own (copying conftest's `live`): a fuzzer undeploys, replaces,
orders and dismisses at random, which would spoil the state other modules' tests expect.
Path parameters are drawn half the time from things that exist (alice's granule-sizes, the
built-in pathfinder, a finished job, the test granules), so requests reach real processes,
jobs and items and not only 404s.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import positive_data_acceptance

from ..live_service import LiveService
from .conftest import deploy, serving
from .granules import COLLECTION
from .test_orders import order
from .test_standards import ROUTES

EXAMPLES = 30  # per operation and mode: the whole module takes about half a minute on 2 cores
HALF = 0.5
# undeploy and dismiss last, so that the other operations still meet alice's process and job
FUZZ_ORDER = sorted(ROUTES, key=lambda route: route[0] == "DELETE")

# An algorithm package is a zip; schemathesis sends the bytes it generates for a binary body
# as they are (almost never a zip), so deploy and replace must refuse them with a 4xx.
schemathesis.serializer.alias("application/zip", "application/octet-stream")


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with serving(
        tmp_path_factory.mktemp("fuzz"), lambda live: deploy(live, "alice", "sizes")
    ) as live:
        yield live


@pytest.fixture(scope="module")
def finished_job(fuzzed: LiveService) -> str:
    response = order(fuzzed, "alice", "granule-sizes", {"granules": {"ids": ["granule-001"]}})
    status = fuzzed.wait_for_job("alice", response.json()["jobID"])
    assert status["status"] == "successful", status
    return status["jobID"]


def fuzz_config(token: str, job: str) -> schemathesis.Config:
    """alice's token on every request (never one schemathesis makes up), and half the path
    parameters drawn from things that exist."""
    existing = {
        "processes": ["granule-sizes", "pathfinder"],
        "jobs": [job],
        "collections": [COLLECTION],
        "items": ["granule-000", "granule-007"],
        "keys": ["data"],
    }
    binding = {
        "path.process_id": "processes",
        "path.job_id": "jobs",
        "path.collection_id": "collections",
        "path.item_id": "items",
        "path.key": "keys",
    }
    return schemathesis.Config.from_dict(
        {
            "headers": {"Authorization": f"Bearer {token}"},
            "request-timeout": 60,
            "generation": {"with-security-parameters": False},
            "dictionaries": {name: {"values": values} for name, values in existing.items()},
            "parameters": {
                key: {"dictionary": name, "probability": HALF} for key, name in binding.items()
            },
        }
    )


@pytest.fixture(scope="module")
def fuzz_schema(fuzzed: LiveService, finished_job: str) -> schemathesis.BaseSchema:
    config = fuzz_config(fuzzed.tokens["alice"], finished_job)
    return schemathesis.openapi.from_url(f"{fuzzed.url}/api", config=config)


def modes(operation: schemathesis.APIOperation) -> list[GenerationMode]:
    """Requests that fit the document, and, where schemathesis can make them, ones that do
    not: a path parameter is any string and a package any bytes, so only query parameters,
    headers and JSON bodies can be of the wrong shape."""
    structured = set(operation.get_request_payload_content_types()) - {"application/zip"}
    if list(operation.query) or list(operation.headers) or structured:
        return [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    return [GenerationMode.POSITIVE]


@pytest.mark.parametrize(("method", "path"), FUZZ_ORDER)
def test_the_service_answers_as_its_openapi_document_says(
    fuzz_schema: schemathesis.BaseSchema, method: str, path: str
) -> None:
    """Every check schemathesis has but positive_data_acceptance, which wants a 2xx for any
    value of the documented type: a paging ``token`` the service never gave, a ``datetime``
    that is not RFC 3339 or an ``intersects`` line mixing 2D and 3D positions is of the
    documented type (a string, an object) and still a 400, by design."""
    operation = fuzz_schema[path][method]
    for mode in modes(operation):

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def answers_as_documented(case: schemathesis.Case) -> None:
            case.call_and_validate(excluded_checks=[positive_data_acceptance])

        answers_as_documented()
