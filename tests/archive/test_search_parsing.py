"""STAC item-search parameters as GET sends them (strings) and as POST sends them (JSON values),
parsed into a checked Search; every refusal names the parameter it refuses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nearline.archive import Search, parse_search, query_values
from nearline.errors import InvalidRequest, SearchError

TRIANGLE = {"type": "Polygon", "coordinates": [[[0, 0], [10, 0], [5, 8], [0, 0]]]}
MARCH_1 = datetime(2021, 3, 1, tzinfo=UTC)
LAST_MOMENT = timedelta(days=1, microseconds=-1)


def parse(query: dict[str, Any]) -> Search:
    """As the service parses a search: GET's text made JSON values first (JSON passes)."""
    return parse_search(query_values(query), viewer=None)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, Search()),
        (
            {"bbox": "-10,35,30,60", "collections": "a,b", "ids": "x,y", "limit": "25"},
            Search(bbox=(-10, 35, 30, 60), collections=("a", "b"), ids=("x", "y"), limit=25),
        ),
        (
            {"bbox": [-10, 35, 30, 60], "collections": ["a", "b"], "ids": ["x"], "limit": 25},
            Search(bbox=(-10, 35, 30, 60), collections=("a", "b"), ids=("x",), limit=25),
        ),
        ({"bbox": "170,-10,-170,10"}, Search(bbox=(170, -10, -170, 10))),
        ({"bbox": [-10, 35, 0, 30, 60, 9000]}, Search(bbox=(-10, 35, 30, 60))),
        ({"bbox": "-180,-90,180,90"}, Search(bbox=(-180, -90, 180, 90))),
        ({"bbox": "", "intersects": "", "datetime": "", "token": ""}, Search()),
        ({"collections": "a,b,a"}, Search(collections=("a", "b"))),
        ({"intersects": TRIANGLE}, Search(intersects=TRIANGLE)),
        (
            {"intersects": '{"type": "Point", "coordinates": [179.5, -89]}'},
            Search(intersects={"type": "Point", "coordinates": [179.5, -89]}),
        ),
        (
            {"datetime": "2021-03-01T12:00:00Z"},
            Search(start=MARCH_1 + timedelta(hours=12), end=MARCH_1 + timedelta(hours=12)),
        ),
        (
            {"datetime": "2021-03-01t12:00:00.25+02:00"},
            Search(
                start=MARCH_1 + timedelta(hours=10, milliseconds=250),
                end=MARCH_1 + timedelta(hours=10, milliseconds=250),
            ),
        ),
        (
            {"datetime": "2021-03-01T00:00:00Z/2021-03-02T06:00:00Z"},
            Search(start=MARCH_1, end=MARCH_1 + timedelta(days=1, hours=6)),
        ),
        ({"datetime": "../2021-03-01T00:00:00Z"}, Search(end=MARCH_1)),
        ({"datetime": "/2021-03-01T00:00:00Z"}, Search(end=MARCH_1)),
        ({"datetime": "2021-03-01T00:00:00Z/.."}, Search(start=MARCH_1)),
        ({"datetime": "2021-03-01T00:00:00Z/"}, Search(start=MARCH_1)),
        ({"limit": 10_000}, Search(limit=10_000)),
        ({"limit": "10001"}, Search(limit=10_000)),
        ({"limit": 10**12}, Search(limit=10_000)),
        ({"limit": 1}, Search(limit=1)),
        ({"token": "abc"}, Search(token="abc")),
        ({"limit": 25.0}, Search(limit=25)),  # JSON Schema's integer
        # a geometry with no positions finds nothing (Search.impossible)
        (
            {"intersects": {"type": "Polygon", "coordinates": []}},
            Search(intersects={"type": "Polygon", "coordinates": []}),
        ),
    ],
    ids=lambda value: None if isinstance(value, Search) else str(value)[:60],
)
def test_good_values_parse(query: dict[str, Any], expected: Search) -> None:
    assert parse(query) == expected


def test_a_geometry_loses_its_heights_and_one_whose_edges_cross_is_refused() -> None:
    square = {"type": "Polygon", "coordinates": [[[0, 0, 5], [10, 0], [10, 10], [0, 10, 1]]]}
    found = parse({"intersects": square}).intersects
    assert found == {"type": "Polygon", "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10]]]}
    bow_tie = {"type": "Polygon", "coordinates": [[[0, 0], [10, 10], [10, 0], [0, 10], [0, 0]]]}
    with pytest.raises(SearchError, match="intersects: invalid geometry"):
        parse({"intersects": bow_tie})


def test_the_viewer_is_kept() -> None:
    assert parse_search(query_values({"ids": "x"}), viewer="alice") == Search(
        ids=("x",), viewer="alice"
    )


@pytest.mark.parametrize(
    "value", ["2021-03-01", "2021-03-01/2021-03-03", "2021-03-01/..", "../2021-03-01"]
)
def test_a_date_alone_is_refused_as_stac_asks(value: str) -> None:
    """STAC's datetime is RFC 3339's date-time (stac-api-validator wants a 400 for a date)."""
    with pytest.raises(SearchError, match="datetime"):
        parse({"datetime": value})


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ({"bbox": "1,2,3"}, "bbox"),
        ({"bbox": [1, 2, 3]}, "bbox"),
        ({"bbox": "1,2,3,4,5"}, "bbox"),
        ({"bbox": "200,0,210,10"}, "bbox"),
        ({"bbox": "0,0,10,95"}, "bbox"),
        ({"bbox": "a,b,c,d"}, "bbox"),
        ({"bbox": ["west", 0, 1, 1]}, "bbox"),
        ({"bbox": "nan,0,1,1"}, "bbox"),
        ({"bbox": "inf,0,1,1"}, "bbox"),
        ({"bbox": 7}, "bbox"),
        ({"datetime": "yesterday"}, "datetime"),
        ({"datetime": "2021-03-01T00:00:00"}, "datetime"),
        ({"datetime": "2021-03-01T00:00:00Z/2021-03-02T00:00:00"}, "datetime"),
        ({"datetime": "../.."}, "datetime"),
        ({"datetime": "/"}, "datetime"),
        ({"datetime": "2021-02-30"}, "datetime"),
        ({"datetime": "2021-03-01T25:00:00Z"}, "datetime"),
        ({"datetime": 1614556800}, "datetime"),
        ({"limit": 0}, "limit"),
        ({"limit": "0"}, "limit"),
        ({"limit": -5}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"limit": 1.5}, "limit"),
        ({"limit": "1.5"}, "limit"),
        ({"limit": True}, "limit"),
        ({"limit": None}, "limit"),
        ({"intersects": "{not json"}, "intersects"),
        ({"intersects": '{"type": "Feature", "geometry": null}'}, "intersects"),
        ({"intersects": {"type": "Circle", "coordinates": [0, 0]}}, "intersects"),
        ({"intersects": {}}, "intersects"),
        ({"intersects": [1, 2]}, "intersects"),
        ({"intersects": {"type": "Polygon", "coordinates": "x"}}, "intersects"),
        ({"intersects": {"type": "Point", "coordinates": [200, 0]}}, "intersects"),
        (
            {
                "intersects": {
                    "type": "Polygon",
                    "coordinates": [[[0, 0], [10, 0], [5, 95], [0, 0]]],
                }
            },
            "intersects",
        ),
        ({"intersects": {"type": "Point", "coordinates": [0, 0, 0, 0]}}, "intersects"),
        ({"intersects": {"type": "Point", "coordinates": [0, True]}}, "intersects"),
        (
            {
                "intersects": {
                    "type": "GeometryCollection",
                    "geometries": [{"type": "GeometryCollection", "geometries": []}],
                }
            },
            "intersects",
        ),
        ({"bbox": "0,50,10,40"}, "bbox"),
        ({"datetime": "2021-03-02T00:00:00Z/2021-03-01T00:00:00Z"}, "datetime"),
        ({"bbox": [0, 0, 0, 0, 0, False]}, "bbox"),
        ({"bbox": [0, 0, True, 1]}, "bbox"),
        ({"bbox": []}, "bbox"),
        ({"bbox": "1e1,0,20,1"}, "bbox"),
        ({"bbox": "1, 0,20,1"}, "bbox"),
        ({"datetime": "2021-03-01T00:00Z"}, "datetime"),
        ({"datetime": "2021-03-01 00:00:00Z"}, "datetime"),
        ({"datetime": "2021-03-01T00:00:00Z\n"}, "datetime"),
        ({"datetime": "0000-03-01"}, "datetime"),
        ({"limit": False}, "limit"),
        ({"limit": "+5"}, "limit"),
        ({"ids": "a\x00b"}, "ids"),
        ({"bbox": "0,0,1,1", "intersects": TRIANGLE}, "intersects"),
        ({"collections": [1, 2]}, "collections"),
        ({"collections": "a,,b"}, "collections"),
        ({"ids": [""]}, "ids"),
        ({"ids": {"a": 1}}, "ids"),
        ({"token": 5}, "token"),
        ({"bbox": "0,0,1,1", "sortby": "geometry"}, "sortby"),
        ({"filter": "cloud_cover <"}, "filter"),
        ({"sortby": [{"field": "id", "direction": "up"}]}, "sortby"),
        ({"filter-lang": "cql2-text"}, "filter-lang"),
        ({"filter": "platform = 'x'", "filter-crs": "EPSG:4326"}, "filter-crs"),
        ({"query": {"platform": {"eq": "x"}}}, "query"),
    ],
    ids=lambda value: value if isinstance(value, str) else str(value)[:60],
)
def test_bad_values_are_refused_by_name(query: dict[str, Any], parameter: str) -> None:
    with pytest.raises(SearchError) as refused:
        parse(query)
    assert parameter in str(refused.value)
    assert isinstance(refused.value, InvalidRequest)
    assert refused.value.status == 400


@pytest.mark.parametrize(
    ("query", "start"),
    [
        ({"bbox": "1,2,3"}, "bbox: expected 4 numbers"),
        ({"bbox": "200,0,210,10"}, "bbox: expected 4 numbers"),
        ({"datetime": "yesterday"}, "datetime: 'yesterday' is not an RFC 3339 date-time"),
        ({"datetime": "2021-03-01T00:00:00"}, "datetime: '2021-03-01T00:00:00' is not an RFC"),
        ({"limit": "many"}, "limit: expected a whole number of at least 1"),
    ],
)
def test_refusals_say_what_was_expected(query: dict[str, Any], start: str) -> None:
    with pytest.raises(SearchError) as refused:
        parse(query)
    assert str(refused.value).startswith(start)


@pytest.mark.parametrize(
    ("body", "parameter"),
    [
        ({"ids": "x,y"}, "ids"),
        ({"collections": "a"}, "collections"),
        ({"bbox": "0,0,1,1"}, "bbox"),
        ({"bbox": ""}, "bbox"),
        ({"intersects": '{"type": "Point", "coordinates": [0, 0]}'}, "intersects"),
        ({"limit": "5"}, "limit"),
    ],
)
def test_a_json_body_gives_json_values_not_query_text(body: dict[str, Any], parameter: str) -> None:
    """POST's body is held to its schema: text where an array, object or number belongs is
    refused (GET's text goes through query_values first)."""
    with pytest.raises(SearchError, match=parameter):
        parse_search(body, viewer=None)


@pytest.mark.parametrize(
    ("value", "start", "end"),
    [
        ("2021-03-01", MARCH_1, MARCH_1 + LAST_MOMENT),
        ("2021-03-01/2021-03-03", MARCH_1, MARCH_1 + 2 * timedelta(days=1) + LAST_MOMENT),
        ("2021-03-01/..", MARCH_1, None),
        ("../2021-03-01", None, MARCH_1 + LAST_MOMENT),
        ("9999-12-31", datetime(9999, 12, 31, tzinfo=UTC), datetime.max.replace(tzinfo=UTC)),
    ],
)
def test_orders_and_subscriptions_take_a_date_as_its_whole_day(
    value: str, start: datetime | None, end: datetime | None
) -> None:
    search = parse_search({"datetime": value}, viewer=None, dates=True)
    assert (search.start, search.end) == (start, end)
