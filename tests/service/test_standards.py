"""The service speaks the standards, checked from the outside with the clients people already
have: stac-api-validator, pystac-client (with pystac's and stac-pydantic's models), OWSLib, and
the OpenAPI document itself (schemathesis fuzzes each of its routes: test_fuzz.py).

No test reaches the network except loopback. The validators fetch the STAC JSON schemas from
schemas.stacspec.org and stac-extensions.github.io; here they get local copies instead: the
core STAC and GeoJSON schemas pystac ships, JSON Schema's draft-07 metaschema from jsonschema,
and a stand-in for the file extension's schema (FILE_FIELDS).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pystac
import pytest
import schemathesis
import stac_pydantic
import stac_pydantic.api
from jsonschema import Draft7Validator
from owslib.ogcapi import REQUEST_HEADERS
from owslib.ogcapi.processes import Processes
from pystac.validation import JsonSchemaSTACValidator, validate_dict
from pystac_client import Client

from nearline.archive import FILE_EXTENSION, Asset, Item, SQLiteCatalogue

from ..live_service import LiveService
from .conftest import serving
from .granules import COLLECTION, START

ROUTES = [  # every operation the service has, as its OpenAPI document names it
    ("GET", "/"),
    ("GET", "/conformance"),
    ("GET", "/collections"),
    ("GET", "/collections/{collection_id}"),
    ("GET", "/collections/{collection_id}/items"),
    ("GET", "/collections/{collection_id}/items/{item_id}"),
    ("GET", "/collections/{collection_id}/items/{item_id}/assets/{key}"),
    ("HEAD", "/collections/{collection_id}/items/{item_id}/assets/{key}"),
    ("GET", "/search"),
    ("POST", "/search"),
    ("GET", "/queryables"),
    ("GET", "/collections/{collection_id}/queryables"),
    ("GET", "/collections/{collection_id}/coverage"),
    ("GET", "/collections/{collection_id}/coverage/domainset"),
    ("GET", "/collections/{collection_id}/coverage/rangetype"),
    ("GET", "/collections/{collection_id}/position"),
    ("GET", "/collections/{collection_id}/area"),
    ("GET", "/collections/{collection_id}/cube"),
    ("GET", "/collections/{collection_id}/map/tiles"),
    ("GET", "/collections/{collection_id}/map/tiles/{tile_matrix_set_id}"),
    ("GET", "/collections/{collection_id}/map/tiles/{tile_matrix_set_id}/tilejson.json"),
    (
        "GET",
        "/collections/{collection_id}/map/tiles/{tile_matrix_set_id}/{tile_matrix}/{tile_row}/{tile_col}",
    ),
    ("GET", "/collections/{collection_id}/map/legend"),
    ("GET", "/tileMatrixSets"),
    ("GET", "/tileMatrixSets/{tile_matrix_set_id}"),
    ("GET", "/processes"),
    ("POST", "/processes"),
    ("GET", "/processes/{process_id}"),
    ("PUT", "/processes/{process_id}"),
    ("DELETE", "/processes/{process_id}"),
    ("POST", "/processes/{process_id}/execution"),
    ("GET", "/jobs"),
    ("GET", "/jobs/{job_id}"),
    ("DELETE", "/jobs/{job_id}"),
    ("GET", "/jobs/{job_id}/results"),
    ("GET", "/jobs/{job_id}/results/{output_id}"),
    ("GET", "/jobs/{job_id}/logs"),
    ("POST", "/subscriptions"),
    ("GET", "/subscriptions"),
    ("GET", "/subscriptions/{subscription_id}"),
    ("DELETE", "/subscriptions/{subscription_id}"),
    ("POST", "/subscriptions/{subscription_id}/reprocess"),
    ("GET", "/users/me"),
    ("GET", "/users/me/tokens"),
    ("POST", "/users/me/tokens"),
    ("DELETE", "/users/me/tokens/{token_id}"),
    ("DELETE", "/tokens/{token_id}"),
]
PUBLIC = {("GET", "/"), ("GET", "/conformance")}
EQUATOR = [f"granule-{index:03d}" for index in range(12)]
NORTH = "granule-north"  # at 20-21 N, 20-21 E: see north_granule
WEST_OF_130 = {  # intersects granules 0-4 (west -170, -160, ... -130; the last one touches)
    "type": "Polygon",
    "coordinates": [[[-170, -5], [-130, -5], [-130, 5], [-170, 5], [-170, -5]]],
}
# The file extension's schema (stac-extensions/file v2.1.0) cannot be fetched here; this
# stand-in checks the two fields nearline writes as that extension's README defines them.
FILE_FIELDS = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "$id": FILE_EXTENSION,
    "title": "Stand-in for the file extension: file:size and file:checksum of each asset",
    "type": "object",
    "required": ["assets"],
    "properties": {
        "assets": {"type": "object", "additionalProperties": {"$ref": "#/definitions/fields"}}
    },
    "definitions": {
        "fields": {
            "type": "object",
            "properties": {
                "file:size": {"type": "integer", "minimum": 0},
                "file:checksum": {"type": "string", "pattern": "^[a-f0-9]+$"},
            },
        }
    },
}


def offline_schemas() -> dict[str, Any]:
    """Every JSON schema the validators ask for, by the URL they ask for it by."""
    return {
        **JsonSchemaSTACValidator().schema_cache,  # pystac's copies of STAC's and GeoJSON's
        "http://json-schema.org/draft-07/schema": Draft7Validator.META_SCHEMA,
        FILE_EXTENSION: FILE_FIELDS,
    }


def north_granule(data: Path) -> Item:
    """One granule off the equator, where stac-api-validator looks for an item to search
    by its id with a bbox beside it (it tries bbox=20,20,21,21, and without an item there
    it skips the check that ids do not override other parameters)."""
    path = data.parent / f"{data.name}-granules" / "north.dat"
    payload = b"north" * 100
    path.write_bytes(payload)
    start = START + timedelta(hours=2)
    ring = [[20.2, 20.2], [20.8, 20.2], [20.8, 20.8], [20.2, 20.8], [20.2, 20.2]]
    return Item(
        id=NORTH,
        collection=COLLECTION,
        start=start,
        end=start + timedelta(minutes=5),
        geometry={"type": "Polygon", "coordinates": [ring]},
        bbox=(20.2, 20.2, 20.8, 20.8),
        # the properties stac-api-validator's filters name (eo:cloud_cover, and mission with
        # LIKE): without an item that carries them they are unknown queryables, and a 400
        properties={"platform": "test", "eo:cloud_cover": 7.5, "mission": "sentinel-like"},
        assets={
            "data": Asset(
                location=str(path), size=len(payload), sha256=hashlib.sha256(payload).hexdigest()
            )
        },
    )


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    """conftest's live service, with the 12 test granules and the north granule."""

    def add_north(live: LiveService) -> None:
        with SQLiteCatalogue(live.data / "catalogue.db") as catalogue:
            catalogue.add_items([north_granule(live.data)])

    with serving(tmp_path_factory.mktemp("standards"), add_north) as live:
        yield live


def bearer(live: LiveService, user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {live.tokens[user]}"}


# -- stac-api-validator -----------------------------------------------------------------------
# The validator runs as its command does (its click entry point, in its own process), with the
# schema hosts answered from offline_schemas() and every other non-loopback request refused.
VALIDATOR = """
import json, sys
import requests
import requests.adapters
from stac_api_validator.__main__ import main

schemas = json.loads(open(sys.argv.pop(1)).read())
send = requests.adapters.HTTPAdapter.send

def offline(adapter, request, **kwargs):
    url = request.url.split("#")[0]
    if url in schemas:
        response = requests.Response()
        response.status_code, response.url, response.request = 200, request.url, request
        response._content = json.dumps(schemas[url]).encode()
        response.headers["Content-Type"] = "application/schema+json"
        return response
    if not url.startswith("http://127.0.0.1:"):
        raise requests.ConnectionError(f"no network in the tests: {url}")
    return send(adapter, request, **kwargs)

def sent_as_specified(request):
    # 0.6.8's POST sort check sends "collections" as a string (validations.py, validate_sort:
    # body={"sortby": ..., "collections": collection}); the item search takes an array, and a
    # string is a 400, so the body is mended to what the specification says before it leaves
    if request.method == "POST" and request.url.endswith("/search") and request.body:
        body = json.loads(request.body)
        if isinstance(body.get("collections"), str):
            body["collections"] = [body["collections"]]
            request.prepare_body(data=None, files=None, json=body)
    return request

send_offline = offline
requests.adapters.HTTPAdapter.send = lambda a, r, **k: send_offline(a, sent_as_specified(r), **k)
main(prog_name="stac-api-validator")
"""
ACCEPTED_WARNINGS = {  # what stac-check recommends that the catalogue does not keep
    "A STAC collection should contain a summaries field",
    "It is recommended to store information like eo:bands in summaries",
}
# 0.6.8's Fields checks of a POST that includes a nested field and excludes its parent,
# {"exclude": ["properties"], "include": ["properties.platform"]}: its GET twin is checked with
# extra fields allowed, the POST without (validate_fields, step 5), so an answer of exactly
# what the extension asks ({"properties": {"platform": ...}}) is "fewer than 5 fields", and
# the dotted name it pops is not a key, so what it pops leaves "extra fields ['properties']"
NESTED_POST = "{'fields': {'exclude': ['properties'], 'include': ['properties.platform']}}"
VALIDATOR_SLIPS = (
    f"POST {NESTED_POST} response contained fewer than 5 fields ['properties']",
    f"POST {NESTED_POST} response contained extra fields ['properties']",
)


def validator_errors(output: str) -> list[str]:
    """The validator's '- ' lines after 'Errors:' (none: 'Errors: none')."""
    if "Errors: none" in output:
        return []
    section = output.split("Errors", 1)[-1]
    return [line[2:] for line in section.splitlines() if line.startswith("- ")]


def slip(line: str) -> bool:
    """Whether a validator line is one of VALIDATOR_SLIPS (its context prefix aside)."""
    return any(line.endswith(known) for known in VALIDATOR_SLIPS)


def validator_warnings(output: str) -> list[str]:
    """The validator's '- ' lines between 'Warnings:' and 'Errors'."""
    section = output.split("Warnings:", 1)[-1].split("Errors", 1)[0]
    return [line[2:] for line in section.splitlines() if line.startswith("- ")]


def unaccepted(warning: str) -> list[str]:
    """The recommendations in a stac-check warning that are not in ACCEPTED_WARNINGS."""
    if "stac-check recommendations:" not in warning:
        return [warning]
    advice = warning.split("recommendations:", 1)[1].split(",")
    return [a.strip() for a in advice if a.strip() and a.strip() not in ACCEPTED_WARNINGS]


def test_stac_api_validator_finds_no_errors(live, tmp_path):
    schemas = tmp_path / "schemas.json"
    schemas.write_text(json.dumps(offline_schemas()))
    classes = [
        "core",
        "collections",
        "features",
        "item-search",
        "filter",
        "item-search#sort",
        "item-search#fields",
        "features#sort",
        "features#fields",
    ]
    command = [
        sys.executable,
        "-c",
        VALIDATOR,
        str(schemas),
        "--root-url",
        live.url,
        *(arg for name in classes for arg in ("--conformance", name)),
        "--collection",
        COLLECTION,
        "--geometry",
        json.dumps(WEST_OF_130),
        "--auth-bearer-token",
        live.tokens["bob"],
        "--validate-pagination",
        "--fields-nested-property",
        "properties.platform",
        "--log-level",
        "INFO",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    report = f"stac-api-validator said:\n{result.stdout}\n{result.stderr[-3000:]}"
    # it exits 0 even when it fails to run (its main returns 1 instead of exiting with it),
    # and 1 on any error, the known slip too: its verdict is read from what it prints
    errors = validator_errors(result.stdout)
    assert result.returncode == (1 if errors else 0), report
    assert [e for e in errors if not slip(e)] == [], report
    assert len(errors) <= 1, report  # the one known slip at most
    warnings = validator_warnings(result.stdout)
    assert [w for w in warnings if unaccepted(w) and not slip(w)] == [], report
    said = result.stdout + result.stderr
    validated = set(re.findall(r"Validating STAC API - (.+) conformance class", said))
    assert {  # what the validator says it checked (its INFO lines), so a class is not passed by
        # being skipped; 0.6.8 finds Features' sort and fields but checks them not yet
        "Features",
        "Item Search",
        "Item Search - Filter Extension",
        "Item Search - Filter Extension - CQL2-Text",
        "Item Search - Filter Extension - CQL2-JSON",
        "Item Search - Filter Extension - Basic CQL2",
    } <= validated, report
    assert "Item Search - Sort extension conformance class found" in said, report
    assert "Item Search - Fields extension conformance class found" in said, report


# -- pystac-client ----------------------------------------------------------------------------
@pytest.fixture
def client(live) -> Client:
    """bob's client: he sees the archive and none of alice's outputs, whatever ran before."""
    return Client.open(live.url, headers=bearer(live, "bob"))


def searched(client: Client, **parameters: Any) -> tuple[list[str], list[int]]:
    """The ids a search finds, following every next link, and how many items each page had."""
    pages = list(client.search(**parameters).pages_as_dicts())
    return [f["id"] for page in pages for f in page["features"]], [
        len(page["features"]) for page in pages
    ]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_pystac_client_searches_and_follows_next_links(client, method):
    assert client.conforms_to("ITEM_SEARCH")
    window = "2012-12-12T00:00:00Z/2012-12-12T00:40:00Z"  # granules 0-8 start in it
    ids, pages = searched(
        client,
        method=method,
        collections=[COLLECTION],
        bbox=[-150, -1, -110, 1],  # granules 2-6 (west -150 .. -110, each 8 degrees wide)
        datetime=window,
        limit=2,
    )
    assert ids == EQUATOR[2:7]
    assert pages == [2, 2, 1]
    ids, pages = searched(client, method=method, intersects=WEST_OF_130, limit=2)
    assert ids == EQUATOR[0:5]
    assert pages == [2, 2, 1]
    ids, pages = searched(
        client, method=method, ids=[NORTH, "granule-007", "granule-003", "nope"], limit=1
    )
    assert sorted(ids) == ["granule-003", "granule-007", NORTH]
    assert pages == [1, 1, 1]
    ids, pages = searched(client, method=method, datetime="2012-12-12", limit=5)
    assert ids == [*EQUATOR, NORTH]  # a bare date is the whole day
    assert pages == [5, 5, 3]
    ids, _ = searched(client, method=method, collections=["nope"], limit=5)
    assert ids == []


def test_pystac_client_browses_collections_and_items(client):
    assert [c.id for c in client.get_collections()] == [COLLECTION]
    collection = client.get_collection(COLLECTION)
    assert collection.title == "Test granules"
    assert [item.id for item in collection.get_items()] == [*EQUATOR, NORTH]  # two pages of 10
    (item,) = collection.get_items("granule-004")
    assert item.bbox == [-130.0, -5.0, -122.0, 5.0]
    assert item.assets["data"].extra_fields["file:size"] == 1000 + 4 * 37
    assert item.get_collection().id == COLLECTION


def test_answers_are_valid_stac_offline(live, client):
    """Items, item collections, collections and the landing page validate with stac-pydantic's
    models and pystac's JSON-schema validation (against local schemas)."""
    validator = JsonSchemaSTACValidator()
    validator.schema_cache.update(offline_schemas())
    with httpx.Client(base_url=live.url, headers=bearer(live, "bob")) as http:
        page = http.get("/search", params={"limit": 3}).json()
        collection = http.get(f"/collections/{COLLECTION}").json()
        collections = http.get("/collections").json()
        landing = http.get("/").json()
    stac_pydantic.api.ItemCollection.model_validate(page)
    for item in page["features"]:
        stac_pydantic.Item.model_validate(item)
        assert validate_dict(item, validator=validator) == [
            validator.schema_uri_map.get_object_schema_uri(
                pystac.STACObjectType.ITEM, item["stac_version"]
            ),
            FILE_EXTENSION,
        ]
    stac_pydantic.Collection.model_validate(collection)
    stac_pydantic.api.Collections.model_validate(collections)
    validate_dict(collection, validator=validator)
    stac_pydantic.api.LandingPage.model_validate(landing)
    validate_dict(landing, validator=validator)


# -- OWSLib -----------------------------------------------------------------------------------
# What OWSLib 0.35's owslib.ogcapi.processes.Processes cannot do, and why:
# - it has no calls for jobs: no status, job list, results or dismiss (processes.py has only
#   processes(), process() and execute()); those go through httpx below;
# - every OGC API object shares one module-level dict of headers: API.__init__ does
#   `self.headers = REQUEST_HEADERS` and then `self.headers.update(headers)`
#   (owslib/ogcapi/__init__.py:57-61), and execute() sets `self.headers['Prefer']`
#   (owslib/ogcapi/processes.py:77-79); so a second Processes() for bob turns alice's into
#   bob's, and a Prefer: respond-async sticks to every later request of every instance. The
#   tests use one user at a time and put the module's headers back afterwards;
# - execute() never bounds a request's time: http_post accepts a timeout but does not pass it
#   to requests.post (owslib/util.py:407 and 462-464), nor does _request pass self.timeout.
@pytest.fixture
def owslib_headers() -> Iterator[None]:
    """Put owslib.ogcapi.REQUEST_HEADERS back as it was (OWSLib changes it in place)."""
    before = dict(REQUEST_HEADERS)
    yield
    REQUEST_HEADERS.clear()
    REQUEST_HEADERS.update(before)


def test_owslib_lists_describes_and_executes(live, alices_processes, owslib_headers):
    processes = Processes(live.url, headers=bearer(live, "alice"))
    assert {"granule-sizes", "pathfinder"} <= {p["id"] for p in processes.processes()}
    described = processes.process("granule-sizes")
    assert described["version"] == "1.0"
    assert set(described["inputs"]) == {"granules", "scale"}
    assert described["outputs"]["summary"]["schema"]["contentMediaType"] == "application/json"
    assert "paths" in processes.api()  # the service-desc link, as OWSLib finds it
    results = processes.execute(
        "granule-sizes", {"granules": {"ids": ["granule-004"]}, "scale": 3}
    )  # synchronous: Prefer: respond-sync, answered with the results document
    (link,) = results["summary"]
    with httpx.Client(headers=bearer(live, "alice")) as http:
        summary = http.get(link["href"]).json()
    assert summary["granules"] == [{"item": "granule-004", "size": 3 * (1000 + 4 * 37)}]


def test_owslib_executes_asynchronously(live, alices_processes, owslib_headers):
    processes = Processes(live.url, headers=bearer(live, "alice"))
    status = processes.execute("granule-sizes", {"granules": {"ids": ["granule-009"]}}, async_=True)
    assert processes.response_headers["Location"].endswith(f"/jobs/{status['jobID']}")
    assert_status_info(status)
    final = live.wait_for_job("alice", status["jobID"])
    assert_status_info(final)
    assert final["status"] == "successful"
    results = next(link["href"] for link in final["links"] if link["rel"].endswith("/results"))
    with httpx.Client(headers=bearer(live, "alice")) as http:
        (link,) = http.get(results).json()["summary"]
        assert http.get(link["href"]).json()["granules"] == [
            {"item": "granule-009", "size": 1000 + 9 * 37}
        ]


def assert_status_info(status: dict[str, Any]) -> None:
    """OGC API - Processes 1.0's statusInfo: jobID, status and type required; its times are
    date-time strings (absent, never null) and its progress a whole percentage."""
    assert {"jobID", "status", "type"} <= set(status)
    assert status["type"] == "process"
    assert status["status"] in {"accepted", "running", "successful", "failed", "dismissed"}
    for name in ("created", "started", "finished", "updated"):
        if name in status:
            assert isinstance(status[name], str), name
            assert status[name].endswith("Z"), name
    assert isinstance(status["progress"], int)
    assert 0 <= status["progress"] <= 100
    assert all("href" in link for link in status["links"])


# -- the OpenAPI document ---------------------------------------------------------------------
def test_the_openapi_document_is_valid_and_lists_every_route(live):
    schema = schemathesis.openapi.from_url(f"{live.url}/api")
    schema.validate()  # against the OpenAPI metaschema of its version
    document = schema.raw_schema
    assert document["openapi"].startswith("3.")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert sorted((op.method.upper(), op.path) for op in operations) == sorted(ROUTES)
    for method, path in ROUTES:
        operation = document["paths"][path][method.lower()]
        responses = operation["responses"]
        assert "422" not in responses, (method, path)  # the service answers 400, never 422
        if (method, path) not in PUBLIC:
            assert operation["security"] == [{"HTTPBearer": []}], (method, path)
            assert "401" in responses, (method, path)
        for status, response in responses.items():
            if status.startswith("4"):
                content = response["content"]["application/json"]
                assert content["schema"] == {"$ref": "#/components/schemas/Exception"}


def test_the_landing_page_links_the_openapi_document_by_its_media_type(live):
    landing = httpx.get(f"{live.url}/").json()
    (link,) = [link for link in landing["links"] if link["rel"] == "service-desc"]
    response = httpx.get(link["href"], headers={"Accept": link["type"]})
    assert response.headers["content-type"] == link["type"]
    assert response.json()["info"]["title"] == "nearline"


@pytest.mark.parametrize(("method", "path"), [("PATCH", "/processes"), ("DELETE", "/search")])
def test_an_unsupported_method_is_405_naming_the_allowed_ones(live, method, path):
    response = httpx.request(method, f"{live.url}{path}", headers=bearer(live, "alice"))
    assert response.status_code == 405
    allowed = {m.strip() for m in response.headers["allow"].split(",")}
    assert allowed == {m for m, p in ROUTES if p == path}
    assert response.json()["status"] == 405
