"""Counts and pages as STAC clients see them: numberMatched (pystac-client's ``matched()``
gives it without a warning), every item once when paging, and paging tokens that are signed:
made up, altered, or carried to another search or user, a token is a 400; a real one outlives
a restart and, on PostgreSQL, works on every server of the database."""

from __future__ import annotations

import warnings
from typing import Any

import httpx
import pytest
from pystac_client import Client

from ..live_service import LiveService
from .granules import COLLECTION

BACKENDS = ("sqlite", "postgresql")  # each test runs against a server on each
EVERY = [f"granule-{index:03d}" for index in range(12)]
WEST = [-150, -1, -110, 1]  # granules 2-6


def client(live: LiveService, user: str = "bob") -> Client:
    return Client.open(live.url, headers={"Authorization": f"Bearer {live.tokens[user]}"})


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize(
    ("search", "expected"),
    [
        ({"collections": [COLLECTION]}, EVERY),
        ({"bbox": WEST, "datetime": "2012-12-12T00:00:00Z/2012-12-12T00:40:00Z"}, EVERY[2:7]),
        ({"ids": ["granule-003", "granule-011", "nope"]}, ["granule-003", "granule-011"]),
        ({"datetime": "2012-12-13"}, []),
    ],
)
def test_pystac_client_counts_and_pages_through_every_item_once(
    live: LiveService, method: str, search: dict[str, Any], expected: list[str]
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matched() warns when the answer has no count
        found = client(live).search(method=method, limit=2, **search)
        assert found.matched() == len(expected)
        pages = list(found.pages_as_dicts())
    ids = [feature["id"] for page in pages for feature in page["features"]]
    assert ids == expected
    assert [page["numberMatched"] for page in pages] == [len(expected)] * len(pages)
    assert [page["numberReturned"] for page in pages] == [len(p["features"]) for p in pages]


def next_link(page: dict[str, Any]) -> dict[str, Any]:
    (link,) = [link for link in page["links"] if link["rel"] == "next"]
    return link


def refused(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"
    problem = response.json()
    assert problem["status"] == 400
    return problem["detail"]


def test_a_made_up_or_altered_token_is_a_400(live: LiveService) -> None:
    with live.client("bob") as http:
        page = http.get("/search", params={"limit": 5}).json()
        token = httpx.URL(next_link(page)["href"]).params["token"]
        assert http.get("/search", params={"limit": 5, "token": token}).status_code == 200
        position, mac = token.rsplit(".", 1)
        altered = [
            "AAAAAAAAAAAAAAAAAAAAAA",  # an unsigned position, as tokens were before
            position,
            f"{position}.{mac[:-1]}{'A' if mac[-1] != 'A' else 'B'}",
            f"{'B' if position[0] == 'A' else 'A'}{position[1:]}.{mac}",
            f"{token}x",
            "é",
        ]
        for forged in altered:
            detail = refused(http.get("/search", params={"limit": 5, "token": forged}))
            assert "token: not one this service gave for this search" in detail
            body = {"limit": 5, "token": forged}
            assert "token:" in refused(http.post("/search", json=body))


def test_a_token_continues_only_the_search_and_user_that_got_it(live: LiveService) -> None:
    with live.client("bob") as bob, live.client("alice") as alice:
        page = bob.get("/search", params={"collections": COLLECTION, "limit": 5}).json()
        token = httpx.URL(next_link(page)["href"]).params["token"]
        same = {"collections": COLLECTION, "limit": 3, "token": token}  # another page size
        assert [f["id"] for f in bob.get("/search", params=same).json()["features"]] == EVERY[5:8]
        items = bob.get(f"/collections/{COLLECTION}/items", params={"limit": 5, "token": token})
        assert items.status_code == 200  # the same search, by its collection's items
        refused(
            bob.get(
                "/search", params={"collections": COLLECTION, "bbox": "0,0,1,1", "token": token}
            )
        )
        refused(bob.get("/search", params={"limit": 5, "token": token}))
        refused(alice.get("/search", params={"collections": COLLECTION, "token": token}))
        post = bob.post("/search", json={"collections": [COLLECTION], "limit": 5}).json()
        link = next_link(post)
        assert (link["method"], link["merge"]) == ("POST", True)
        follow = {"collections": [COLLECTION], "limit": 5, **link["body"]}
        assert [f["id"] for f in bob.post("/search", json=follow).json()["features"]] == EVERY[5:10]
        refused(bob.post("/search", json={"collections": ["other"], **link["body"]}))


def test_a_token_outlives_a_restart_and_is_good_on_every_server_of_the_database(
    live: LiveService,
) -> None:
    with live.client("bob") as http:
        page = http.get("/search", params={"collections": COLLECTION, "limit": 4}).json()
    href = next_link(page)["href"]
    live.stop()
    live.start("--cpus", "2", "--max-upload", "4MiB")
    servers = [live]
    if live.db is not None:  # a second server on the same database checks it with the same key
        other = LiveService(live.data, db=live.db, tokens=live.tokens)
        other.start("--cpus", "1")
        servers.append(other)
    try:
        for server in servers:
            with server.client("bob") as http:
                answer = http.get(href.replace(live.url, server.url))
            assert answer.status_code == 200, answer.text
            assert [f["id"] for f in answer.json()["features"]] == EVERY[4:8]
    finally:
        for server in servers[1:]:
            server.stop()
