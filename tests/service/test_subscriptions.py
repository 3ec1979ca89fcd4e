"""Subscriptions against a live server: granules written into its catalogue as `nearline
ingest` would (by another process, straight into the SQLite file) trigger jobs within a
second, on exactly the granules each policy says; nothing runs twice, through re-ingest and
kill -9; backfills are throttled; reprocessing keeps both versions' outputs; callbacks reach
a receiver on 127.0.0.1."""

from __future__ import annotations

import hashlib
import http.server
import json
import random
import shutil
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from nearline.archive import Asset, Item, SQLiteCatalogue

from ..live_service import LiveService, nearline
from .conftest import PACKAGES, deploy, serving, zip_folder
from .granules import COLLECTION

DAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
ENDED = ("successful", "failed", "dismissed")


def ingest(
    live: LiveService,
    names: list[str],
    *,
    tag: str,
    start: datetime = datetime(2012, 12, 13, tzinfo=UTC),
    step: timedelta = timedelta(minutes=5),
    owner: str | None = None,
    missing: bool = False,
) -> float:
    """Catalogue one small file per name in the live service's catalogue, with property
    ``tag``; the moment (time.time()) the transaction was committed."""
    folder = live.data.parent / "subscribed-granules"
    folder.mkdir(exist_ok=True)
    items = []
    for index, name in enumerate(names):
        path = folder / f"{name}.dat"
        payload = name.encode() * 40
        if not missing:
            path.write_bytes(payload)
        moment = start + index * step
        items.append(
            Item(
                id=name,
                collection=COLLECTION,
                start=moment,
                end=moment + timedelta(minutes=5),
                geometry={
                    "type": "Polygon",
                    "coordinates": [[[10, 10], [11, 10], [11, 11], [10, 11], [10, 10]]],
                },
                bbox=(10.0, 10.0, 11.0, 11.0),
                properties={"platform": "test", "tag": tag},
                assets={
                    "data": Asset(
                        location=str(path),
                        size=len(payload),
                        sha256=hashlib.sha256(payload).hexdigest(),
                    )
                },
                owner=owner,
            )
        )
    with SQLiteCatalogue(live.data / "catalogue.db") as catalogue:
        catalogue.add_items(items)
        return time.time()


def subscribe(live: LiveService, user: str, policy: dict, *, tag: str, **extra) -> str:
    search = {"collections": [COLLECTION], "properties": {"tag": tag}, **extra.pop("search", {})}
    body = {
        "process": extra.pop("process", "granule-sizes"),
        "input": "granules",
        "search": search,
        "policy": policy,
        **extra,
    }
    with live.client(user) as client:
        response = client.post("/subscriptions", json=body)
    assert response.status_code == 201, response.text
    sid = response.json()["id"]
    assert response.headers["location"].endswith(f"/subscriptions/{sid}")
    return sid


def show(live: LiveService, user: str, sid: str) -> dict:
    with live.client(user) as client:
        response = client.get(f"/subscriptions/{sid}")
    assert response.status_code == 200, response.text
    return response.json()


def wait_for(live: LiveService, sid: str, done, *, timeout: float = 60, user: str = "alice"):
    """Poll the subscription until ``done(document)``; the document."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        document = show(live, user, sid)
        if done(document):
            return document
        time.sleep(0.1)
    raise AssertionError(f"subscription {sid} did not get there in {timeout} s: {document}")


def all_ended(count: int):
    return lambda d: len(d["runs"]) >= count and all(r["status"] in ENDED for r in d["runs"])


def job(live: LiveService, job_id: str, user: str = "alice") -> dict:
    with live.client(user) as client:
        return client.get(f"/jobs/{job_id}").json()


def moment(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@pytest.fixture(scope="module", autouse=True)
def processes(live: LiveService) -> None:
    deploy(live, "alice", "sizes")
    deploy(live, "alice", "sleeper")


# -- policies -------------------------------------------------------------------------------
def test_each_new_granule_runs_alone_within_a_second(live):
    sid = subscribe(live, "alice", {"each": 1}, tag="each")
    names = [f"each-{i}" for i in range(3)]
    ingested = ingest(live, names, tag="each")
    ingest(live, ["each-bobs"], tag="each", owner="bob")  # alice may not see it
    ingest(live, ["each-other"], tag="other")  # not what the search asks for
    document = wait_for(live, sid, all_ended(3))
    time.sleep(1)  # nothing more comes
    document = show(live, "alice", sid)
    assert sorted(run["granules"] for run in document["runs"]) == [
        [f"{COLLECTION}/{name}"] for name in names
    ]
    assert document["waiting"] == []
    for run in document["runs"]:
        status = job(live, run["jobID"])
        assert status["status"] == "successful", status
        assert status["nearline:runs"][0]["inputs"] == run["granules"]
        assert moment(status["created"]) - ingested < 1.0  # triggered within a second of the commit


def test_a_batch_runs_full_batches_in_arrival_order(live):
    sid = subscribe(live, "alice", {"batch": 3}, tag="batch")
    ingest(live, ["batch-0", "batch-1"], tag="batch")
    time.sleep(1.5)
    document = show(live, "alice", sid)
    assert document["runs"] == []
    (waiting,) = document["waiting"]
    assert waiting["granules"] == [f"{COLLECTION}/batch-0", f"{COLLECTION}/batch-1"]
    assert waiting["until"] == "1 more granule(s) for a batch of 3"
    ingest(live, ["batch-2", "batch-3"], tag="batch")
    document = wait_for(live, sid, all_ended(1))
    (run,) = document["runs"]
    assert run["granules"] == [f"{COLLECTION}/batch-{i}" for i in range(3)]
    assert [w["granules"] for w in document["waiting"]] == [[f"{COLLECTION}/batch-3"]]


def test_a_period_runs_once_a_granule_of_the_next_period_arrives(live):
    sid = subscribe(live, "alice", {"period": "P1D", "deadline": "P2D"}, tag="period")
    day = DAY - timedelta(days=2)
    ingest(live, ["period-0", "period-1", "period-2"], tag="period", start=day + timedelta(hours=1))
    time.sleep(1.5)
    assert show(live, "alice", sid)["runs"] == []
    ingest(live, ["period-next"], tag="period", start=day + timedelta(days=1, hours=1))
    document = wait_for(live, sid, all_ended(1))
    (run,) = document["runs"]
    assert run["granules"] == [f"{COLLECTION}/period-{i}" for i in range(3)]
    assert "complete" in run["note"]
    assert "complete" in job(live, run["jobID"])["message"]
    (waiting,) = document["waiting"]
    assert waiting["granules"] == [f"{COLLECTION}/period-next"]
    assert "a granule of a later period, or the deadline" in waiting["until"]


def test_a_partial_period_runs_at_its_deadline_and_says_so(live):
    yesterday = DAY - timedelta(days=1)
    deadline = int((datetime.now(UTC) - DAY).total_seconds()) + 4  # ~4 s after now
    policy = {"period": "P1D", "deadline": f"PT{deadline}S"}
    sid = subscribe(live, "alice", policy, tag="partial")
    ingest(live, ["partial-0", "partial-1"], tag="partial", start=yesterday + timedelta(hours=3))
    time.sleep(1.5)
    assert show(live, "alice", sid)["runs"] == []
    document = wait_for(live, sid, all_ended(1), timeout=30)
    (run,) = document["runs"]
    assert run["granules"] == [f"{COLLECTION}/partial-0", f"{COLLECTION}/partial-1"]
    status = job(live, run["jobID"])
    assert "partial" in status["message"]
    assert f"PT{deadline}S" in status["message"]
    assert status["status"] == "successful"


# -- never twice ----------------------------------------------------------------------------
def test_a_granule_ingested_twice_runs_once(live):
    sid = subscribe(live, "alice", {"each": 1}, tag="twice")
    ingest(live, ["twice-0"], tag="twice")
    wait_for(live, sid, all_ended(1))
    ingest(live, ["twice-0"], tag="twice")  # replaced: a change again
    ingest(live, ["twice-0", "twice-1"], tag="twice")
    document = wait_for(live, sid, all_ended(2))
    time.sleep(1.5)
    document = show(live, "alice", sid)
    assert sorted(run["granules"] for run in document["runs"]) == [
        [f"{COLLECTION}/twice-0"],
        [f"{COLLECTION}/twice-1"],
    ]


def test_kill_9_between_ingest_and_trigger_runs_each_granule_exactly_once(tmp_path):
    chance = random.Random(10)
    with serving(tmp_path, lambda live: deploy(live, "alice", "sizes")) as live:
        sid = subscribe(live, "alice", {"each": 1}, tag="kill")
        names = []
        for round_ in range(4):
            batch = [f"kill-{round_}-{i}" for i in range(3)]
            names += batch
            ingest(live, batch, tag="kill")
            time.sleep(chance.uniform(0.0, 0.4))  # before, during or after the trigger
            live.kill()
            if round_ == 2:  # ingested while the server is down, and one again
                names.append("kill-down")
                ingest(live, ["kill-down", batch[0]], tag="kill")
            live.start("--cpus", "2")
        document = wait_for(live, sid, all_ended(len(names)), timeout=120)
        time.sleep(1.5)
        document = show(live, "alice", sid)
        ran = sorted(granule for run in document["runs"] for granule in run["granules"])
        assert ran == sorted(f"{COLLECTION}/{name}" for name in names)
        with live.client("alice") as client:
            jobs = client.get("/jobs", params={"limit": 1000}).json()["jobs"]
            outputs = client.get("/search", params={"collections": "granule-sizes",
                                                    "limit": 1000}).json()  # fmt: skip
        inputs = sorted(i for status in jobs for run in status["nearline:runs"]
                        for i in run["inputs"])  # fmt: skip
        assert inputs == ran  # no job made twice, even one the subscription lost track of
        assert all(status["status"] == "successful" for status in jobs)
        assert len(outputs["features"]) == len(names)


# -- backfill and reprocessing --------------------------------------------------------------
def test_a_backfill_runs_over_the_archive_a_few_jobs_at_a_time(live):
    sid = subscribe(
        live,
        "alice",
        {"each": 1},
        tag="none",
        process="sleeper",
        search={"datetime": "2012-12-12T00:00:00Z/2012-12-12T01:00:00Z", "properties": {}},
        parameters={"seconds": 0.5},
    )
    most = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        document = show(live, "alice", sid)
        going = [r for r in document["runs"] if r["status"] not in ENDED]
        most = max(most, len(going))
        if len(document["runs"]) == 12 and not going:
            break
        time.sleep(0.05)
    assert document["backfill"] == "done"
    assert all(run["kind"] == "backfill" for run in document["runs"])
    assert sorted(run["granules"][0] for run in document["runs"]) == [
        f"{COLLECTION}/granule-{i:03d}" for i in range(12)
    ]
    assert most == 2  # never more than two of the backfill's jobs at once


def test_a_users_order_is_not_queued_behind_a_backfill(live):
    sid = subscribe(
        live,
        "alice",
        {"each": 1},
        tag="none",
        process="sleeper",
        search={"datetime": "2012-12-12T00:00:00Z/2012-12-12T00:29:00Z", "properties": {}},
        parameters={"seconds": 1.5},
    )
    wait_for(live, sid, lambda d: len(d["runs"]) >= 2)
    with live.client("alice") as client:
        response = client.post(
            "/processes/granule-sizes/execution",
            json={"inputs": {"granules": {"ids": ["granule-001"]}}},
            headers={"Prefer": "respond-async"},
        )
    order = live.wait_for_job("alice", response.json()["jobID"])
    assert order["status"] == "successful"
    document = wait_for(live, sid, all_ended(6), timeout=120)
    starts = [moment(job(live, run["jobID"])["started"]) for run in document["runs"]]
    ahead = [s for s in starts if moment(order["created"]) < s < moment(order["started"])]
    assert len(ahead) <= 1  # at most one backfill job went ahead of the order
    assert moment(order["started"]) < max(starts)  # it did not wait for the whole backfill


def test_reprocess_runs_what_the_old_version_made_with_the_new_one(live, tmp_path):
    sid = subscribe(live, "alice", {"batch": 2}, tag="again")
    ingest(live, ["again-0", "again-1", "again-2", "again-3"], tag="again")
    before = wait_for(live, sid, all_ended(2))
    with live.client("alice") as client:
        refused = client.post(f"/subscriptions/{sid}/reprocess")
        assert refused.status_code == 409, refused.text
        package = tmp_path / "sizes-2"
        shutil.copytree(PACKAGES / "sizes", package)
        manifest = package / "algorithm.yaml"
        manifest.write_text(manifest.read_text().replace('version: "1.0"', 'version: "2.0"'))
        replaced = client.put(
            "/processes/granule-sizes",
            content=zip_folder(package),
            headers={"Content-Type": "application/zip"},
            timeout=600,
        )
        assert replaced.status_code == 200, replaced.text
        response = client.post(f"/subscriptions/{sid}/reprocess", json={})
        assert response.status_code == 202, response.text
        assert response.json()["version"] == "2.0"
        assert len(response.json()["jobs"]) == 2
        after = wait_for(live, sid, all_ended(4))
        again = client.post(f"/subscriptions/{sid}/reprocess")
        assert again.status_code == 409
        outputs = client.get(
            "/search", params={"collections": "granule-sizes", "limit": 10_000}
        ).json()["features"]
    old = {run["jobID"]: run["granules"] for run in before["runs"]}
    new = {r["jobID"]: r["granules"] for r in after["runs"] if r["jobID"] not in old}
    assert sorted(old.values()) == sorted(new.values())  # the same groups, run again
    assert {r["version"] for r in after["runs"] if r["jobID"] in new} == {"2.0"}
    assert all("reprocessing job" in r["note"] for r in after["runs"] if r["jobID"] in new)
    made = {
        item["properties"]["nearline:job"]: item
        for item in outputs
        if item["properties"]["nearline:job"] in old | new
    }
    assert len(made) == 4  # one output per job, none overwritten
    versions = sorted(item["properties"]["nearline:algorithm"]["version"] for item in made.values())
    assert versions == ["1.0", "1.0", "2.0", "2.0"]
    assert len({item["id"] for item in made.values()}) == 4


# -- callbacks ------------------------------------------------------------------------------
class Receiver(http.server.ThreadingHTTPServer):
    """Takes POSTs on 127.0.0.1, answering 503 to the first ``refuse`` of them."""

    def __init__(self, refuse: int = 0) -> None:
        self.received: list[tuple[str, dict]] = []
        self.refuse = refuse
        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        server: Receiver = self.server  # type: ignore[assignment]
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if server.refuse > 0:
            server.refuse -= 1
            self.send_response(503)
        else:
            server.received.append((self.path, json.loads(body)))
            self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver(refuse=1)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_callbacks_post_the_status_to_the_subscriber(live, receiver):
    subscriber = {"successUri": f"{receiver.url}/ok", "failedUri": f"{receiver.url}/failed"}
    sid = subscribe(live, "alice", {"each": 1}, tag="call", subscriber=subscriber)
    ingest(live, ["call-ok"], tag="call")
    ingest(live, ["call-lost"], tag="call", start=datetime(2012, 12, 14, tzinfo=UTC),
           missing=True)  # fmt: skip
    document = wait_for(live, sid, lambda d: sum("callback" in r for r in d["runs"]) == 2)
    by_granule = {run["granules"][0].split("/")[1]: run for run in document["runs"]}
    assert by_granule["call-ok"]["status"] == "successful"
    assert by_granule["call-lost"]["status"] == "failed"
    assert all(run["callback"].startswith("delivered") for run in document["runs"])
    received = dict(receiver.received)
    assert set(received) == {"/ok", "/failed"}  # the first try (a 503) was tried again
    assert received["/ok"]["jobID"] == by_granule["call-ok"]["jobID"]
    assert received["/ok"]["status"] == "successful"
    assert received["/ok"]["processID"] == "granule-sizes"
    assert received["/ok"]["nearline:subscription"] == sid
    assert any(link["rel"].endswith("/results") for link in received["/ok"]["links"])
    assert received["/failed"]["status"] == "failed"
    assert received["/failed"]["nearline:inputs"] == [f"{COLLECTION}/call-lost"]


# -- who may see, and what is refused -------------------------------------------------------
def test_another_users_subscription_is_a_404_everywhere(live):
    sid = subscribe(live, "alice", {"each": 1}, tag="private")
    with live.client("bob") as client:
        assert client.get(f"/subscriptions/{sid}").status_code == 404
        assert client.delete(f"/subscriptions/{sid}").status_code == 404
        assert client.post(f"/subscriptions/{sid}/reprocess").status_code == 404
        assert sid not in [s["id"] for s in client.get("/subscriptions").json()["subscriptions"]]
        answer = client.get(f"/subscriptions/{sid}")
    assert answer.json()["type"] == "not-found"
    with live.client("alice") as client:
        assert sid in [s["id"] for s in client.get("/subscriptions").json()["subscriptions"]]
        assert client.delete(f"/subscriptions/{sid}").status_code == 204
        assert client.get(f"/subscriptions/{sid}").status_code == 404


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"process": None}, "process"),
        ({"process": "pathfinder", "input": "swaths"}, "input"),
        ({"input": "reference"}, "input"),
        ({"policy": {"weekly": 1}}, "policy"),
        ({"policy": {"batch": -1}}, "policy.batch"),
        ({"policy": {"period": "P1D", "deadline": "soon"}}, "policy.deadline"),
        ({"policy": "each"}, "policy"),
        ({"search": {"collections": ["avhrr-gac"]}}, "search.collections"),
        ({"search": {"bbox": [0, 0, 1]}}, "search.bbox"),
        ({"search": {"datetime": "yesterday"}}, "search.datetime"),
        ({"search": {"filter": {}}}, "search: unknown key 'filter'"),
        ({"search": {"properties": {"tag": {"nested": 1}}}}, "search.properties"),
        ({"parameters": {"scale": -1}}, "parameters"),
        ({"parameters": {"granules": {"ids": ["x"]}}}, "parameters.granules"),
        ({"parameters": {"colour": "red"}}, "parameters"),
        ({"subscriber": {"successUri": "ftp://x"}}, "subscriber.successUri"),
        ({"subscriber": {"inProgressUri": "http://127.0.0.1:1/"}}, "subscriber.inProgressUri"),
        ({"schedule": "daily"}, "schedule"),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field(live, change, field):
    body = {"process": "granule-sizes", "input": "granules", "policy": {"each": 1}, **change}
    body = {key: value for key, value in body.items() if value is not None}
    with live.client("alice") as client:
        response = client.post("/subscriptions", json=body)
    assert response.status_code == 400, response.text
    assert field in response.json()["detail"]


@pytest.mark.parametrize("change", [{"process": "nothing-such"}, {"version": "9.9"}])
def test_a_process_or_version_you_may_not_order_is_a_404(live, change):
    """As the process's own URL would be: the body is well formed, the thing it names is not
    there (the OpenAPI document cannot know which processes exist)."""
    body = {"process": "granule-sizes", "input": "granules", "policy": {"each": 1}, **change}
    with live.client("alice") as client:
        response = client.post("/subscriptions", json=body)
    assert response.status_code == 404, response.text
    assert response.json()["status"] == 404


def test_the_cli_adds_lists_and_removes_subscriptions_on_the_data_folder(live):
    added = nearline("subscriptions", "add", "granule-sizes", "--user", "alice", "--batch", "2",
                     "--property", "tag=cli", "--parameters", '{"scale": 3}',
                     data=live.data)  # fmt: skip
    sid = added.stdout.strip()
    ingest(live, ["cli-0", "cli-1"], tag="cli")
    document = wait_for(live, sid, all_ended(1))
    assert document["parameters"] == {"scale": 3}
    listing = nearline("subscriptions", "list", "--user", "alice", data=live.data).stdout
    (line,) = [line for line in listing.splitlines() if line.startswith(sid)]
    assert '{"batch": 2}' in line
    assert nearline("subscriptions", "list", "--user", "bob", data=live.data).stdout == (
        "bob has no subscriptions\n"
    )
    refused = nearline("subscriptions", "remove", sid, "--user", "bob", data=live.data, check=False)
    assert refused.returncode == 2
    assert f"no subscription {sid}" in refused.stderr
    nearline("subscriptions", "remove", sid, "--user", "alice", data=live.data)
    with live.client("alice") as client:
        assert client.get(f"/subscriptions/{sid}").status_code == 404
