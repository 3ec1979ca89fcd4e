"""The catalogue as OGC API - Features, from the outside, on a server that lets anonymous
readers in (`--anonymous-read`): what they reach (the public collections and processes) and
what they do not (every other route of the OpenAPI document, and what is not public); the
OpenAPI 3.0 rendering the OGC's suite reads, its error types and parameters; and GDAL's OAPIF
driver (the client of QGIS) beside pystac-client. The suite itself runs in CI
(python -m nearline.testing.ogc_suites)."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import schemathesis
from pystac_client import Client
from shapely.geometry import box, mapping

from nearline.archive import Collection, Item, open_catalogue

from .conftest import deploy, serving
from .granules import add_granules

FEATURES = "http://www.opengis.net/spec/ogcapi-features-1/1.0/req/core/"
OPENAPI30 = "application/vnd.oai.openapi+json;version=3.0"
BIG = "mod06"
BIG_ITEMS = 10_050  # more than a page of GDAL's and pystac-client's
START = datetime(2025, 1, 1, tzinfo=UTC)


def granules(count: int) -> list[Item]:
    """``count`` 5-minute granules named as MODIS's from START, each a 10-degree square
    wandering over the globe (quicker to make than modis_like_items' swaths)."""
    made = []
    for index in range(count):
        start = START + timedelta(minutes=5 * index)
        west, south = -180 + (index * 13) % 350, -60 + (index * 7) % 110
        square = (west, south, west + 10, south + 10)
        made.append(
            Item(
                id=f"{BIG}.A{start:%Y%j.%H%M}.061",
                collection=BIG,
                start=start,
                end=start + timedelta(minutes=5),
                geometry=mapping(box(*square)),
                bbox=square,
            )
        )
    return made


@pytest.fixture(scope="module")
def features(tmp_path_factory):
    """A server opening test-granules and BIG to anonymous readers; hidden-granules (an
    archive collection too) stays closed, and alice has a private process and items."""

    def prepare(live):
        add_granules(live.data, 3, collection="hidden-granules")
        add_granules(live.data, 2, collection="alices-granules", owner="alice")
        with open_catalogue(None, live.data / "catalogue.db") as catalogue:
            catalogue.put_collection(Collection(id=BIG, title="MODIS-like granules"))
            catalogue.add_items(granules(BIG_ITEMS))
        deploy(live, "alice", "sizes")

    folder = tmp_path_factory.mktemp("features")
    public = f"test-granules,{BIG}"
    with serving(folder, prepare, extra=("--anonymous-read", public)) as live:
        yield live


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
    ("GET", "/queryables"): "/queryables",
    ("GET", "/collections/{collection_id}/queryables"): "/collections/test-granules/queryables",
    ("GET", "/processes"): "/processes",
    ("GET", "/processes/{process_id}"): "/processes/pathfinder",
}
GRIDDED_READS = {  # a gridded collection's coverage and EDR queries: open as its items are
    ("GET", f"/collections/{{collection_id}}/{query}")
    for query in ("coverage", "coverage/domainset", "coverage/rangetype", "position", "area",
                  "cube")
}  # fmt: skip
READ[("GET", "/tileMatrixSets")] = "/tileMatrixSets"
READ[("GET", "/tileMatrixSets/{tile_matrix_set_id}")] = "/tileMatrixSets/WebMercatorQuad"
MAP = "/collections/{collection_id}/map"
GRIDDED_ONLY = {  # open to anonymous readers too, but test-granules has no map tiles: a 404
    ("GET", f"{MAP}/tiles"),
    ("GET", f"{MAP}/tiles/{{tile_matrix_set_id}}"),
    ("GET", f"{MAP}/tiles/{{tile_matrix_set_id}}/tilejson.json"),
    ("GET", f"{MAP}/tiles/{{tile_matrix_set_id}}/{{tile_matrix}}/{{tile_row}}/{{tile_col}}"),
    ("GET", f"{MAP}/legend"),
}
FILLED = {  # a real thing's name for each path parameter, so a 401 is not a 404 in disguise
    "{collection_id}": "test-granules",
    "{item_id}": "granule-001",
    "{key}": "data",
    "{process_id}": "pathfinder",
    "{tile_matrix_set_id}": "WebMercatorQuad",
    "{tile_matrix}": "0",
    "{tile_row}": "0",
    "{tile_col}": "0",
}


def test_anonymous_readers_read_the_public_collections_and_processes(features):
    assert f"anonymous readers may read: {BIG}, test-granules" in features.log.read_text()
    with httpx.Client(base_url=features.url, timeout=60) as anonymous:
        for (method, _), path in READ.items():
            response = anonymous.request(method, path, json={} if method == "POST" else None)
            assert response.status_code == 200, (method, path, response.text)
        collections = anonymous.get("/collections").json()["collections"]
        assert [c["id"] for c in collections] == [BIG, "test-granules"]
        day = "2012-12-12T00:00:00Z/2012-12-13T00:00:00Z"  # the test granules'; not BIG's
        everywhere = {"bbox": "-180,-6,-50,6", "datetime": day, "limit": 5}
        found = anonymous.get("/search", params=everywhere).json()
        pages = [found["features"]]
        while next_links := [link for link in found["links"] if link["rel"] == "next"]:
            found = anonymous.get(next_links[0]["href"]).json()  # its token: for this search
            pages.append(found["features"])
        assert [len(page) for page in pages] == [5, 5, 2]  # granules 0-11
        assert {f["collection"] for page in pages for f in page} == {"test-granules"}
        posted = anonymous.post("/search", json={"ids": ["granule-001"]}).json()["features"]
        assert [(f["collection"], f["id"]) for f in posted] == [("test-granules", "granule-001")]
        processes = {p["id"] for p in anonymous.get("/processes").json()["processes"]}
        assert "pathfinder" in processes
        assert "granule-sizes" not in processes


def filled(template: str) -> str:
    """A path of the OpenAPI document with a real thing's name for each parameter."""
    for name, value in FILLED.items():
        template = template.replace(name, value)
    return template


def test_anonymous_readers_reach_nothing_else(features):
    document = httpx.get(f"{features.url}/api").json()
    operations = [
        (method.upper(), path)
        for path, methods in document["paths"].items()
        for method in methods
        if method in {"get", "post", "put", "delete"}
    ]
    gridded = GRIDDED_READS | GRIDDED_ONLY
    closed = [op for op in operations if op not in READ and op not in gridded]
    assert len(closed) >= 15  # every order, upload, job, subscription, download and /users/me
    with httpx.Client(base_url=features.url, timeout=60) as anonymous:
        for method, template in closed:
            path = filled(template)
            response = anonymous.request(method, path, json={} if method != "GET" else None)
            assert response.status_code == 401, (method, path, response.text)
        for _, template in GRIDDED_READS:  # read as anonymously as the items; none is gridded
            path = template.replace("{collection_id}", "test-granules")
            assert "not gridded" in anonymous.get(path).json()["detail"], path
        for method, template in GRIDDED_ONLY:
            path = filled(template)
            response = anonymous.request(method, path)
            assert response.status_code == 404, (method, path, response.text)
            assert "not gridded" in response.json()["detail"]
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


def test_a_token_still_counts_where_anonymous_readers_are_let_in(features):
    with features.client("alice") as alice:
        ids = {c["id"] for c in alice.get("/collections").json()["collections"]}
        assert ids == {BIG, "test-granules", "hidden-granules", "alices-granules"}
        assert alice.get("/processes/granule-sizes").status_code == 200
    wrong = httpx.get(f"{features.url}/collections", headers={"Authorization": "Bearer nl_x"})
    assert wrong.status_code == 401


# -- OGC API - Features ----------------------------------------------------------------------
def test_api_is_openapi_30_to_whoever_asks_for_it_and_31_otherwise(features):
    rendered = httpx.get(f"{features.url}/api", headers={"Accept": OPENAPI30})
    assert rendered.headers["content-type"] == OPENAPI30
    document = rendered.json()
    assert document["openapi"] == "3.0.3"
    schemathesis.openapi.from_dict(document).validate()  # against OpenAPI 3.0's metaschema
    text = rendered.text
    for only_31 in ('"type":"null"', '"const"', '"prefixItems"'):
        assert only_31 not in text, only_31
    (limit,) = [
        p
        for p in document["paths"]["/collections/{collection_id}/items"]["get"]["parameters"]
        if p["name"] == "limit"
    ]
    assert limit["schema"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10_000,
        "default": 10,
        "description": limit["schema"]["description"],
    }
    assert httpx.get(f"{features.url}/api").json()["openapi"] == "3.1.0"


@pytest.mark.parametrize(
    ("path", "status", "kind"),
    [
        ("/collections/test-granules/items?colour=red", 400, "query-param-unknown"),
        ("/collections/test-granules/items?limit=0", 400, "query-param-invalid"),
        ("/search?bbox=1,2,3", 400, "query-param-invalid"),
        ("/collections/no-such", 404, "http"),
        ("/collections/test-granules/items/no-such", 404, "http"),
    ],
)
def test_the_catalogues_refusals_carry_features_types(features, path, status, kind):
    response = httpx.get(f"{features.url}{path}")
    assert response.status_code == status
    assert response.json()["type"] == FEATURES + kind


def test_a_process_refusal_keeps_its_processes_type(features):
    response = httpx.get(f"{features.url}/processes/no-such")
    assert response.status_code == 404
    assert response.json()["type"].endswith("/ogcapi-processes-1/1.0/no-such-process")


def test_an_unfiltered_page_says_how_many_items_the_collection_holds(features):
    first = httpx.get(f"{features.url}/collections/{BIG}/items", params={"limit": 3}).json()
    assert (first["numberReturned"], first["numberMatched"]) == (3, BIG_ITEMS)
    assert first["timeStamp"].endswith("Z")
    everywhere = {"limit": 3, "bbox": "-180,-90,180,90"}  # counted: under 200,000 candidates
    filtered = httpx.get(f"{features.url}/collections/{BIG}/items", params=everywhere).json()
    assert filtered["numberMatched"] == BIG_ITEMS


def gdal(*command: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def gdal_ids(features, *options: str) -> list[str]:
    """The ids ogr2ogr writes from BIG, with ``options``."""
    url = f"OAPIF:{features.url}"
    written = gdal("ogr2ogr", "-f", "GeoJSON", "/vsistdout/", url, BIG, *options)
    return sorted(f["properties"]["id"] for f in json.loads(written)["features"])


def test_ogrinfo_lists_the_collections_and_counts_the_big_one(features):
    listed = gdal("ogrinfo", "-ro", f"OAPIF:{features.url}")
    assert f": {BIG} (" in listed
    assert ": test-granules (" in listed
    summary = gdal("ogrinfo", "-ro", "-so", f"OAPIF:{features.url}", BIG)
    assert f"Feature Count: {BIG_ITEMS}\n" in summary


def pystac_ids(features, **search) -> list[str]:
    """The ids pystac-client's search of BIG finds."""
    found = Client.open(features.url).search(collections=[BIG], **search).items_as_dicts()
    return sorted(item["id"] for item in found)


def test_ogr2ogr_with_a_bbox_and_a_time_window_finds_what_pystac_client_finds(features):
    where = "start_datetime >= '2025-01-01T00:00:00Z' AND start_datetime < '2025-01-03T00:00:00Z'"
    found = gdal_ids(features, "-spat", "10", "10", "20", "20", "-where", where)
    window = "2025-01-01T00:00:00Z/2025-01-03T00:00:00Z"
    assert found == pystac_ids(features, bbox=[10, 10, 20, 20], datetime=window)
    assert len(found) >= 5


def test_gdal_dates_with_a_bare_t_are_their_day(features):
    # GDAL sends start_datetime > '2025-02-03' as datetime=2025-02-03T/.., which finds, as the
    # datetime parameter does, every item whose span reaches 2025-02-03T00:00:00Z
    found = gdal_ids(features, "-where", "start_datetime > '2025-02-03'")
    assert found == pystac_ids(features, datetime="2025-02-03T00:00:00Z/..")
    assert "mod06.A2025033.2355.061" in found  # 23:55 to 00:00: it reaches the day
    assert "mod06.A2025033.2350.061" not in found
    assert 100 < len(found) < 1000


def test_a_collections_items_take_what_pystac_client_sends(features):
    items = f"{features.url}/collections/test-granules/items"
    named = httpx.get(items, params={"collections": "test-granules", "ids": "granule-004"})
    assert [f["id"] for f in named.json()["features"]] == ["granule-004"]
    other = httpx.get(items, params={"collections": BIG})
    assert other.status_code == 400
    assert "its own" in other.json()["detail"]
