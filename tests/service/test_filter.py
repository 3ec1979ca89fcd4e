"""STAC's Filter, Sort and Fields extensions from the outside, on a live server over SQLite and
over PostgreSQL: pystac-client's filter=, sortby= and fields= (GET and POST), GDAL's
ogr2ogr -where sent as CQL2 to a collection's items, the queryables, paging under a sort, and
every bad input a 400 problem naming what is wrong."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from pystac_client import Client
from shapely.geometry import box, mapping

from nearline.archive import Collection, Item, open_catalogue

from ..live_service import LiveService, database_of
from .conftest import serving

BACKENDS = ("sqlite", "postgresql")
AVHRR = "avhrr-l1b"
START = datetime(2013, 3, 1, tzinfo=UTC)
PLATFORMS = ("noaa19", "metop-a", "noaa18")


def cloud(index: int) -> float:
    """Each granule's cloud cover: ties in pairs (0, 0, 5, 5, ...), so a sort needs its id."""
    return float(5 * (index // 2))


def orbit(index: int) -> Item:
    """Orbit ``index``'s granule: a 20-degree square along the equator, 50 minutes after the
    last, with the properties nearline's AVHRR reader gives and a cloud cover (as an ingest
    that knew it would)."""
    square = (-180.0 + 15 * index, -10.0, -170.0 + 15 * index, 10.0)
    start = START + timedelta(minutes=50 * index)
    properties = {
        "platform": PLATFORMS[index % 3],
        "instruments": ["avhrr"],
        "eo:cloud_cover": cloud(index),
        "nearline:reader": "avhrr-klm",
        "nearline:lines": 1000 + index,
        "nearline:night": index % 4 == 0,
    }
    end = start + timedelta(minutes=45)
    return Item(f"orbit-{index:02d}", AVHRR, start, end, mapping(box(*square)), square, properties)


ITEMS = [orbit(index) for index in range(24)]


def expected(keep: Any) -> list[str]:
    """The ids of the AVHRR granules ``keep`` (a test on an Item) holds, in start order."""
    return [item.id for item in ITEMS if keep(item)]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, state_db: str | None):
    def prepare(live: LiveService) -> None:
        with open_catalogue(database_of(live.data), live.data / "catalogue.db") as catalogue:
            catalogue.put_collection(Collection(id=AVHRR, title="AVHRR orbits"))
            catalogue.add_items(ITEMS)

    with serving(tmp_path_factory.mktemp("filter"), prepare, db=state_db) as service:
        yield service


@pytest.fixture
def client(live: LiveService) -> Client:
    return Client.open(live.url, headers={"Authorization": f"Bearer {live.tokens['bob']}"})


def found(client: Client, **search: Any) -> list[str]:
    """The ids a search finds, every page followed."""
    return [item["id"] for item in client.search(**search).items_as_dicts()]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_pystac_client_filters_in_cql2_text_and_json(client, method):
    assert client.conforms_to("FILTER")
    clear = expected(lambda item: item.properties["eo:cloud_cover"] < 20)
    assert clear == [f"orbit-{n:02d}" for n in range(8)]
    text = "eo:cloud_cover < 20"
    assert found(client, method=method, collections=[AVHRR], filter=text, limit=3) == clear
    as_json = {"op": "<", "args": [{"property": "eo:cloud_cover"}, 20]}
    assert found(client, method=method, collections=[AVHRR], filter=as_json, limit=3) == clear
    noaa_clear = expected(
        lambda i: (
            i.properties["platform"].startswith("noaa") and i.properties["eo:cloud_cover"] < 40
        )
    )
    both = "platform LIKE 'noaa%' AND eo:cloud_cover BETWEEN 0 AND 35"
    assert found(client, method=method, filter=both, limit=4) == noaa_clear
    assert len(noaa_clear) == 11
    night = "nearline:night = true AND NOT platform IN ('metop-a')"
    assert found(client, method=method, filter=night) == expected(
        lambda i: i.properties["nearline:night"] and i.properties["platform"] != "metop-a"
    )
    late = "datetime >= TIMESTAMP('2013-03-01T15:00:00Z') AND collection = 'avhrr-l1b'"
    assert found(client, method=method, filter=late) == expected(
        lambda i: i.start >= datetime(2013, 3, 1, 15, tzinfo=UTC)
    )
    west = "S_INTERSECTS(geometry, POLYGON((-170 -1, -130 -1, -130 1, -170 1, -170 -1)))"
    assert found(client, method=method, collections=[AVHRR], filter=west) == [
        "orbit-00",  # -180..-170: touches
        "orbit-01",
        "orbit-02",
        "orbit-03",  # -135..-125
    ]


def test_a_filter_and_the_other_parameters_together(client):
    window = "2013-03-01T05:00:00Z/2013-03-01T12:00:00Z"
    hits = found(
        client, filter="eo:cloud_cover >= 15", datetime=window, bbox=[-100, -5, 100, 5], limit=2
    )
    assert hits == expected(
        lambda i: (
            i.properties["eo:cloud_cover"] >= 15
            and i.end >= datetime(2013, 3, 1, 5, tzinfo=UTC)
            and i.start <= datetime(2013, 3, 1, 12, tzinfo=UTC)
            and i.bbox[2] >= -100
            and i.bbox[0] <= 100
        )
    )
    assert hits == [f"orbit-{n:02d}" for n in range(6, 15)]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_sorted_pages_hold_every_item_once_ties_by_id(client, method):
    assert client.conforms_to("SORT")
    order = sorted(ITEMS, key=lambda i: (-i.properties["eo:cloud_cover"], i.id))
    wanted = [item.id for item in order]
    assert wanted[:4] == ["orbit-22", "orbit-23", "orbit-20", "orbit-21"]  # ties: by id
    search = client.search(
        method=method, collections=[AVHRR], sortby="-properties.eo:cloud_cover", limit=5
    )
    pages = list(search.pages_as_dicts())
    assert [len(page["features"]) for page in pages] == [5, 5, 5, 5, 4]
    assert [f["id"] for page in pages for f in page["features"]] == wanted
    assert pages[0]["numberMatched"] == 24
    newest = found(client, method=method, sortby=["-datetime"], filter="platform = 'noaa19'")
    assert newest == expected(lambda i: i.properties["platform"] == "noaa19")[::-1]
    by_platform = found(client, method=method, sortby="platform,-id", limit=7)
    everything = sorted([*ITEMS, *_test_granules()], key=lambda i: i.id, reverse=True)
    assert by_platform == [i.id for i in sorted(everything, key=lambda i: i.properties["platform"])]
    assert by_platform[:3] == ["orbit-22", "orbit-19", "orbit-16"]  # metop-a, newest id first


def _test_granules() -> list[Item]:
    """The 12 test granules serving() adds (platform 'test'), as items to sort beside ours."""
    return [
        Item(f"granule-{n:03d}", "test-granules", START, START, None, None, {"platform": "test"})
        for n in range(12)
    ]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_fields_shape_each_item(client, method):
    assert client.conforms_to("FIELDS")
    search = client.search(
        method=method,
        collections=[AVHRR],
        fields=["id", "properties.datetime", "properties.eo:cloud_cover", "-geometry"],
        limit=2,
        max_items=2,
    )
    assert list(search.items_as_dicts()) == [
        {
            "id": "orbit-00",
            "properties": {"datetime": "2013-03-01T00:00:00Z", "eo:cloud_cover": 0.0},
        },
        {
            "id": "orbit-01",
            "properties": {"datetime": "2013-03-01T00:50:00Z", "eo:cloud_cover": 0.0},
        },
    ]
    left = client.search(method=method, collections=[AVHRR], fields=["-geometry", "-assets"])
    first = next(iter(left.items_as_dicts()))
    assert "geometry" not in first
    assert "assets" not in first
    if method == "GET":  # everything else
        assert first["properties"]["platform"] == "noaa19"
    else:  # pystac-client sends "include": [] beside: the extension's default set, less those
        assert set(first) == {"type", "stac_version", "id", "bbox", "links", "properties"}
        assert first["properties"] == {"datetime": "2013-03-01T00:00:00Z"}


def test_queryables_are_what_the_items_carry(live):
    headers = {"Authorization": f"Bearer {live.tokens['bob']}"}
    one = httpx.get(f"{live.url}/collections/{AVHRR}/queryables", headers=headers)
    assert one.headers["content-type"] == "application/schema+json"
    document = one.json()
    assert document["$id"] == f"{live.url}/collections/{AVHRR}/queryables"
    assert document["additionalProperties"] is False
    assert {name: value.get("type") for name, value in document["properties"].items()} == {
        "id": "string",
        "collection": "string",
        "datetime": "string",
        "start_datetime": "string",
        "end_datetime": "string",
        "geometry": None,
        "platform": "string",
        "instruments": "array",
        "eo:cloud_cover": "number",
        "nearline:reader": "string",
        "nearline:lines": "integer",
        "nearline:night": "boolean",
    }
    every = httpx.get(f"{live.url}/queryables", headers=headers).json()
    assert set(every["properties"]) == set(document["properties"])  # test-granules: platform
    test = httpx.get(f"{live.url}/collections/test-granules/queryables", headers=headers).json()
    assert set(test["properties"]) - {"platform"} == {
        "id",
        "collection",
        "datetime",
        "start_datetime",
        "end_datetime",
        "geometry",
    }


BAD = [
    ({"filter": "cloud_cover < 20"}, "filter: unknown queryable 'cloud_cover'"),
    ({"filter": "eo:cloud_cover <"}, "filter: CQL2 syntax error at line 1, column 17"),
    ({"filter": "eo:cloud_cover < 'high'"}, "filter: eo:cloud_cover is a number"),
    (
        {"filter": "S_INTERSECTS(geometry, POLYGON((0 0, 10 10, 10 0, 0 10, 0 0)))"},
        "filter: S_INTERSECTS invalid geometry (Self-intersection",
    ),
    (
        {"filter": "S_INTERSECTS(geometry, POLYGON((0 0, 10 10)))"},
        "filter: S_INTERSECTS expected a GeoJSON geometry",
    ),
    # the parser overflows its stack on such nesting, so it is refused before it is parsed
    ({"filter": "(" * 3000 + "platform = 'x'" + ")" * 3000}, "filter: parentheses 3000 deep"),
    ({"filter": "NOT " * 5000 + "platform = 'x'"}, "and 5000 NOTs"),
    ({"filter": "T_AFTER(datetime, TIMESTAMP('2013-01-01T00:00:00Z'))"}, "T_AFTER"),
    ({"filter": "platform = 'x'", "filter-lang": "cql3"}, "filter-lang: expected cql2-text"),
    ({"sortby": "instruments"}, "sortby: instruments is not sortable (array)"),
    ({"sortby": "geometry"}, "sortby: 'geometry' is not sortable"),
    ({"sortby": "-cloudiness"}, "sortby: unknown queryable 'cloudiness'"),
    ({"query": '{"platform": {"eq": "noaa19"}}'}, "unknown search parameter 'query'"),
    ({"fields": "id,,geometry"}, "fields: a field is empty"),
]


@pytest.mark.parametrize(("parameters", "said"), BAD)
def test_bad_input_is_a_400_problem_naming_it(live, parameters, said):
    headers = {"Authorization": f"Bearer {live.tokens['bob']}"}
    for path in ("/search", f"/collections/{AVHRR}/items"):
        if path != "/search" and "query" in parameters:
            continue
        response = httpx.get(f"{live.url}{path}", params=parameters, headers=headers)
        assert response.status_code == 400, (path, response.text)
        problem = response.json()
        assert problem["status"] == 400
        assert said in problem["detail"], problem
    posted = {**parameters}
    if isinstance(posted.get("sortby"), str):
        posted["sortby"] = [{"field": posted["sortby"].lstrip("-"), "direction": "desc"}]
    if isinstance(posted.get("fields"), str):
        posted["fields"] = {"include": posted["fields"].split(",")}
    if "query" in posted:
        posted["query"] = json.loads(posted["query"])
    response = httpx.post(f"{live.url}/search", json=posted, headers=headers)
    assert response.status_code == 400, response.text
    assert said.split(" (")[0].replace("'-cloudiness'", "'cloudiness'") in response.json()["detail"]


def gdal_ids(live: LiveService, where: str, **options: str) -> tuple[list[str], list[str]]:
    """The ids ogr2ogr writes from AVHRR with ``-where``, and the GET request lines its curl
    recorded (CPL_CURL_VERBOSE); ``options``: GDAL configuration options."""
    environment = {
        **os.environ,
        **options,
        "GDAL_HTTP_HEADERS": f"Authorization: Bearer {live.tokens['bob']}",
        "CPL_CURL_VERBOSE": "YES",
    }
    command = ["ogr2ogr", "-f", "GeoJSON", "/vsistdout/", f"OAPIF:{live.url}", AVHRR]
    done = subprocess.run(
        [*command, "-where", where], capture_output=True, text=True, timeout=300, env=environment
    )
    assert done.returncode == 0, done.stderr
    written = sorted(f["properties"]["id"] for f in json.loads(done.stdout)["features"])
    requests = [line for line in done.stderr.splitlines() if line.startswith("> GET ")]
    return written, [line for line in requests if f"/collections/{AVHRR}/items?" in line]


WHERE = "\"eo:cloud_cover\" < 20 AND platform = 'noaa19'"


def test_ogr2ogr_where_on_a_queryable_finds_what_pystac_client_filters(live, client):
    text = "eo:cloud_cover < 20 AND platform = 'noaa19'"
    wanted = sorted(found(client, collections=[AVHRR], filter=text))
    assert wanted == ["orbit-00", "orbit-03", "orbit-06"]
    # GDAL 3.6 (Debian 12's) knows only the drafts' cql-text, and looks for it in the OpenAPI
    # document under a path template of its own naming ({collectionId}): left to itself, it
    # reads the pages and keeps what its -where holds on its side
    written, requests = gdal_ids(live, WHERE)
    assert written == wanted
    assert requests
    assert not any("filter=" in line for line in requests), requests
    # with its own switch for servers it cannot detect, it sends the -where as the filter,
    # which nearline reads as CQL2 text, and the server alone filters: after the first page
    # (where GDAL learns the fields), one page, of the three items
    written, requests = gdal_ids(live, WHERE, OGR_OAPIF_ALLOW_CQL_TEXT="YES")
    assert written == wanted
    assert len(requests) == 2, requests
    sent = unquote(requests[1])
    assert "filter=(eo:cloud_cover < 20) AND (platform = 'noaa19')&" in sent, sent
    assert sent.endswith("&filter-lang=cql-text HTTP/1.1"), sent


def test_conformance_declares_what_is_offered_and_nothing_more(live):
    classes = set(httpx.get(f"{live.url}/conformance").json()["conformsTo"])
    cql2 = {c.rsplit("/", 1)[1] for c in classes if "/spec/cql2/" in c}
    assert cql2 == {
        "cql2-text",
        "cql2-json",
        "basic-cql2",
        "advanced-comparison-operators",
        "basic-spatial-functions",
    }
    part3 = {c.rsplit("/", 1)[1] for c in classes if "/ogcapi-features-3/" in c}
    assert part3 == {"filter", "features-filter", "queryables"}  # not queryables-query-parameters
    stac = {c.split("/", 4)[4] for c in classes if c.startswith("https://api.stacspec.org/")}
    assert {
        "item-search#filter",
        "item-search#sort",
        "item-search#fields",
        "ogcapi-features#filter",
        "ogcapi-features#sort",
        "ogcapi-features#fields",
    } <= stac
    assert not {c for c in stac if c.endswith("#query")}  # the Query extension: not offered


@pytest.mark.parametrize("path", ["/queryables", f"/collections/{AVHRR}/queryables"])
def test_queryables_need_a_reader(live, path):
    assert httpx.get(f"{live.url}{path}").status_code == 401
    nobody = httpx.get(f"{live.url}/collections/nope/queryables", headers=bearer(live))
    assert nobody.status_code == 404


def bearer(live: LiveService) -> dict[str, str]:
    return {"Authorization": f"Bearer {live.tokens['bob']}"}


@pytest.mark.parametrize(
    ("path", "body"),
    [  # JSON may escape half of a UTF-16 pair; no text holds one (schemathesis found the 500)
        (
            "/search",
            {"ids": [], "filter": {"op": "=", "args": [{"property": "platform"}, "\ud800"]}},
        ),
        ("/search", {"filter": {"op": "=", "args": [{"property": "platform"}, "x"], "\udfff": 0}}),
        ("/search", {"ids": ["\ud83d"]}),
        ("/search", {"collections": ["ok", "\udc00"]}),
        ("/subscriptions", {"process": "\ud800", "search": {}}),
        ("/processes/echo/execution", {"inputs": {"x": "\udbff"}}),
    ],
)
def test_a_lone_surrogate_in_a_json_body_is_a_400_naming_it(live, path, body):
    headers = {"Authorization": f"Bearer {live.tokens['bob']}", "Content-Type": "application/json"}
    sent = json.dumps(body)  # ASCII, each surrogate as its \\u escape
    response = httpx.post(f"{live.url}{path}", content=sent, headers=headers)
    assert response.status_code == 400, response.text
    assert "lone UTF-16 surrogate" in response.json()["detail"]
    whole = sent.replace("\\ud83d", "\\ud83d\\ude00").replace("\\ud800", "\\ud800\\udc00")
    if path == "/search" and whole != sent:  # a pair is one character, and searched for
        response = httpx.post(f"{live.url}{path}", content=whole, headers=headers)
        assert response.status_code == 200, response.text
        assert response.json()["numberMatched"] == 0


def test_a_lone_surrogate_in_a_filter_is_refused_before_the_parser_meets_it():
    from nearline.archive import parse_filter
    from nearline.errors import SearchError

    with pytest.raises(SearchError, match="lone UTF-16 surrogate"):
        parse_filter({"op": "=", "args": [{"property": "platform"}, "\ud800"]})
