"""Every refusal below /openeo/1.2 is openEO's error document (code, message, id, links)
with the status openEO gives that code, never an OGC problem document and never a 500."""

from __future__ import annotations

import httpx
import pytest

from ..live_service import LiveService


def refusal(answer: httpx.Response) -> dict:
    body = answer.json()
    assert set(body) == {"id", "code", "message", "links"}, body
    assert len(body["id"]) == 32
    assert body["message"]
    assert body["links"][0]["href"] == "https://api.openeo.org/1.2.0/errors.json"
    return body


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/openeo/1.2/jobs/no-such-job", 404, "JobNotFound"),
        ("POST", "/openeo/1.2/result", 400, "BadRequest"),  # no body, no JSON
        ("GET", "/openeo/1.2/process_graphs", 501, "FeatureUnsupported"),
        ("GET", "/openeo/1.2/credentials/basic", 403, "AuthenticationSchemeInvalid"),
        ("GET", "/openeo/1.2/no-such-thing", 404, "NotFound"),
        ("POST", "/openeo/1.2/collections", 405, "MethodNotAllowed"),
        ("GET", "/openeo/1.2/collections/no-such-collection", 404, "CollectionNotFound"),
    ],
)
def test_refusals_are_openeo_errors(
    live: LiveService, method: str, path: str, status: int, code: str
) -> None:
    with live.client("alice") as client:
        answer = client.request(method, path)
    assert answer.status_code == status
    body = refusal(answer)
    assert body["code"] == code
    if status == 501:
        assert "not served yet" in body["message"]
        assert "/openeo/1.2/" in body["message"]


def test_collections_without_a_token_are_refused_as_openeo_says(live: LiveService) -> None:
    """The server lets no anonymous reader in: the catalogue's doors hold for openEO too."""
    answer = httpx.get(f"{live.url}/openeo/1.2/collections")
    assert answer.status_code == 401
    assert refusal(answer)["code"] == "AuthenticationRequired"


def test_the_rest_of_the_service_keeps_its_ogc_errors(live: LiveService) -> None:
    with live.client("alice") as client:
        answer = client.get("/collections/no-such-collection")
    assert answer.status_code == 404
    assert answer.json()["status"] == 404  # RFC 7807, not openEO
