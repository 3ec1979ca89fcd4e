"""What a request without a token may do, tested from the outside: by default nothing but
the public three (test_access.py); with `--guest NAME`, act as NAME; with `--anonymous-read`,
read the public collections and processes and reach nothing else."""

from __future__ import annotations

import httpx
import pytest

from ..live_service import nearline
from .conftest import deploy, serving
from .granules import add_granules


def test_a_guest_acts_as_the_named_user_and_a_wrong_token_is_still_refused(tmp_path):
    with serving(tmp_path, extra=("--guest", "bob")) as live:
        assert "guest: requests without a token act as user bob" in live.log.read_text()
        deploy(live, "alice", "sizes")  # private to alice
        anonymous = httpx.Client(base_url=live.url, timeout=60)
        with anonymous, live.client("alice") as alice:
            assert anonymous.get("/users/me").json()["name"] == "bob"
            assert alice.get("/users/me").json()["name"] == "alice"
            assert anonymous.get("/processes/granule-sizes").status_code == 404
            assert alice.get("/processes/granule-sizes").status_code == 200
            wrong = anonymous.get("/users/me", headers={"Authorization": "Bearer nl_wrong"})
            assert wrong.status_code == 401
            listed = anonymous.get("/collections/test-granules/items").json()
            assert len(listed["features"]) == 10


def test_a_guest_who_is_no_user_is_one_line(tmp_path):
    result = nearline("serve", "--port", "0", "--guest", "nobody", data=tmp_path, check=False)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "nearline: error: --guest nobody: no such user; `nearline users add nobody` creates "
        "them (the guest acts with their string and owns what guests make)"
    )


# -- anonymous readers ------------------------------------------------------------------------
READ = {  # what --anonymous-read opens, with the paths tried (public collection: test-granules)
    ("GET", "/"): "/",
    ("GET", "/conformance"): "/conformance",
    ("GET", "/api"): "/api",
    ("GET", "/collections"): "/collections",
    ("GET", "/collections/{collection_id}"): "/collections/test-granules",
    ("GET", "/collections/{collection_id}/items"): "/collections/test-granules/items",
    ("GET", "/collections/{collection_id}/items/{item_id}"): (
        "/collections/test-granules/items/granule-001"
    ),
    ("GET", "/search"): "/search",
    ("POST", "/search"): "/search",
    ("GET", "/processes"): "/processes",
    ("GET", "/processes/{process_id}"): "/processes/pathfinder",
}
FILLED = {  # a real thing's name for each path parameter, so a 401 is not a 404 in disguise
    "{collection_id}": "test-granules",
    "{item_id}": "granule-001",
    "{key}": "data",
    "{process_id}": "pathfinder",
}


@pytest.fixture(scope="module")
def reading(tmp_path_factory):
    """A server opening test-granules to anonymous readers; hidden-granules (an archive
    collection too) stays closed, and alice has a private process and collection."""

    def prepare(live):
        add_granules(live.data, 3, collection="hidden-granules")
        add_granules(live.data, 2, collection="alices-granules", owner="alice")
        deploy(live, "alice", "sizes")

    folder = tmp_path_factory.mktemp("anonymous")
    with serving(folder, prepare, extra=("--anonymous-read", "test-granules")) as live:
        yield live


def test_anonymous_readers_read_the_public_collections_and_processes(reading):
    assert "anonymous readers may read: test-granules" in reading.log.read_text()
    with httpx.Client(base_url=reading.url, timeout=60) as anonymous:
        for (method, _), path in READ.items():
            response = anonymous.request(method, path, json={} if method == "POST" else None)
            assert response.status_code == 200, (method, path, response.text)
        collections = anonymous.get("/collections").json()["collections"]
        assert [c["id"] for c in collections] == ["test-granules"]
        found = anonymous.get("/search", params={"limit": 50}).json()["features"]
        assert {f["collection"] for f in found} == {"test-granules"}
        assert len(found) == 12
        posted = anonymous.post("/search", json={"ids": ["granule-001"]}).json()["features"]
        assert [(f["collection"], f["id"]) for f in posted] == [("test-granules", "granule-001")]
        processes = {p["id"] for p in anonymous.get("/processes").json()["processes"]}
        assert "pathfinder" in processes
        assert "granule-sizes" not in processes


def test_anonymous_readers_reach_nothing_else(reading):
    document = httpx.get(f"{reading.url}/api").json()
    operations = [
        (method.upper(), path)
        for path, methods in document["paths"].items()
        for method in methods
        if method in {"get", "post", "put", "delete"}
    ]
    closed = [operation for operation in operations if operation not in READ]
    assert len(closed) >= 15  # every order, upload, job, subscription, download and /users/me
    with httpx.Client(base_url=reading.url, timeout=60) as anonymous:
        for method, template in closed:
            path = template
            for name, value in FILLED.items():
                path = path.replace(name, value)
            response = anonymous.request(method, path, json={} if method != "GET" else None)
            assert response.status_code == 401, (method, path, response.text)
        for path in [
            "/collections/hidden-granules",
            "/collections/hidden-granules/items",
            "/collections/hidden-granules/items/granule-001",
            "/collections/alices-granules",
            "/collections/alices-granules/items/granule-001",
            "/processes/granule-sizes",
        ]:
            assert anonymous.get(path).status_code == 404, path
        for collections in ("hidden-granules", "alices-granules", "test-granules,hidden-granules"):
            found = anonymous.get("/search", params={"collections": collections}).json()
            assert {f["collection"] for f in found["features"]} <= {"test-granules"}
            assert found["numberMatched"] == (12 if "test-granules" in collections else 0)


def test_a_token_still_counts_where_anonymous_readers_are_let_in(reading):
    with reading.client("alice") as alice:
        ids = {c["id"] for c in alice.get("/collections").json()["collections"]}
        assert ids == {"test-granules", "hidden-granules", "alices-granules"}
        assert alice.get("/processes/granule-sizes").status_code == 200
    wrong = httpx.get(f"{reading.url}/collections", headers={"Authorization": "Bearer nl_x"})
    assert wrong.status_code == 401
