"""Who reaches what, tested from the outside: tokens, and users who see only their own."""

from __future__ import annotations

import httpx
import pytest

from ..live_service import nearline
from .test_orders import order

BACKENDS = ("sqlite", "postgresql")  # each test runs against a server on each

PUBLIC = ["/", "/conformance", "/api"]
PRIVATE = ["/collections", "/search", "/processes", "/jobs", "/collections/test-granules/items"]


@pytest.mark.parametrize("path", PUBLIC)
def test_public_paths_answer_without_a_token(live, path):
    response = httpx.get(f"{live.url}{path}")
    assert response.status_code == 200
    assert response.json()  # JSON for a client that did not ask for HTML


def test_a_browser_gets_html_and_a_client_json(live):
    html = httpx.get(f"{live.url}/", headers={"Accept": "text/html,application/xhtml+xml"})
    assert html.headers["content-type"].startswith("text/html")
    assert "nearline users add NAME" in html.text
    landing = httpx.get(f"{live.url}/", headers={"Accept": "application/json"}).json()
    rels = {link["rel"] for link in landing["links"]}
    assert {
        "conformance",
        "service-desc",
        "data",
        "search",
        "http://www.opengis.net/def/rel/ogc/1.0/processes",
    } <= rels


def test_conformance_names_stac_and_ogc_processes(live):
    classes = httpx.get(f"{live.url}/conformance").json()["conformsTo"]
    assert "https://api.stacspec.org/v1.0.0/item-search" in classes
    assert "http://www.opengis.net/spec/ogcapi-processes-1/1.0/conf/core" in classes


@pytest.mark.parametrize("path", PRIVATE)
@pytest.mark.parametrize("token", [None, "nl_not-a-token", "garbage"])
def test_everything_else_needs_a_valid_token(live, path, token):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.get(f"{live.url}{path}", headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert "token" in response.json()["detail"]


def test_a_revoked_token_stops_working(live):
    token = live.add_user("carol")
    headers = {"Authorization": f"Bearer {token}"}
    assert httpx.get(f"{live.url}/collections", headers=headers).status_code == 200
    nearline("users", "revoke", "carol", data=live.data)
    assert httpx.get(f"{live.url}/collections", headers=headers).status_code == 401
    fresh = nearline("users", "token", "carol", data=live.data).stdout.strip()
    assert (
        httpx.get(
            f"{live.url}/collections", headers={"Authorization": f"Bearer {fresh}"}
        ).status_code
        == 200
    )


def test_another_users_things_are_404(live, alices_processes):
    response = order(live, "alice", "granule-sizes", {"granules": {"ids": ["granule-010"]}})
    job_id = response.json()["jobID"]
    status = live.wait_for_job("alice", job_id)
    assert status["status"] == "successful"
    with live.client("alice") as alice:
        (link,) = alice.get(f"/jobs/{job_id}/results").json()["summary"]
        item_url = link["nearline:item"]
        assert alice.get(item_url).status_code == 200
    with live.client("bob") as bob:
        for path in [
            f"/jobs/{job_id}",
            f"/jobs/{job_id}/results",
            f"/jobs/{job_id}/logs",
            "/processes/granule-sizes",
            item_url,
            link["href"],
        ]:
            response = bob.get(path)
            assert response.status_code == 404, path
        assert bob.delete(f"/jobs/{job_id}").status_code == 404
        assert job_id not in [job["jobID"] for job in bob.get("/jobs").json()["jobs"]]
        assert "granule-sizes" not in [p["id"] for p in bob.get("/processes").json()["processes"]]
        found = bob.get("/search", params={"collections": "granule-sizes"}).json()
        assert found["features"] == []
        ordered = bob.post(
            "/processes/granule-sizes/execution",
            json={"inputs": {"granules": {"ids": ["granule-001"]}}},
        )
        assert ordered.status_code == 404
        # the job id of someone else's job and a job that does not exist answer alike
        assert bob.get(f"/jobs/{job_id}").json()["detail"] == f"no job {job_id}"


def test_the_echo_process_is_off_unless_the_operator_turns_it_on(live):
    with live.client("alice") as client:
        assert client.get("/processes/echo").status_code == 404
        assert "echo" not in {p["id"] for p in client.get("/processes").json()["processes"]}
        refused = client.post("/processes/echo/execution", json={"inputs": {"string": "x"}})
    assert refused.status_code == 404
    assert refused.json()["type"].endswith("/ogcapi-processes-1/1.0/no-such-process")
