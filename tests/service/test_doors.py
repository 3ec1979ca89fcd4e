"""What a request without a token may do, tested from the outside: by default nothing but
the public three (test_access.py); with `--guest NAME`, act as NAME (here); with
`--anonymous-read`, read the public collections and processes and reach nothing else
(test_features.py, whose server lets anonymous readers in)."""

from __future__ import annotations

import httpx

from ..live_service import nearline
from .conftest import serving
from .granules import add_granules


def test_a_guest_acts_as_the_named_user_and_a_wrong_token_is_still_refused(tmp_path):
    with serving(tmp_path, extra=("--guest", "bob")) as live:
        assert "guest: requests without a token act as user bob" in live.log.read_text()
        add_granules(live.data, 2, collection="alices-granules", owner="alice")
        anonymous = httpx.Client(base_url=live.url, timeout=60)
        with anonymous, live.client("alice") as alice:
            assert anonymous.get("/users/me").json()["name"] == "bob"
            assert alice.get("/users/me").json()["name"] == "alice"
            alices = "/collections/alices-granules/items/granule-001"
            assert anonymous.get(alices).status_code == 404
            assert alice.get(alices).status_code == 200
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
