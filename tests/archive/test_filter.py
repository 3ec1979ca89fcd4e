"""The Filter extension's parsing and SQL, and the Sort extension's keys, on a SQLite
catalogue: each filter is checked against the items it must find, and the SQL that runs is
held to never reading an item into Python to be filtered."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nearline.archive import (
    Collection,
    Item,
    SQLiteCatalogue,
    open_catalogue,
    parse_filter,
    parse_search,
)
from nearline.archive._filter_sql import SQLITE, filter_sql, glob
from nearline.errors import SearchError

START = datetime(2020, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> SQLiteCatalogue:
    found = SQLiteCatalogue(tmp_path_factory.mktemp("filter") / "catalogue.db")
    found.put_collection(Collection(id="a"))
    found.add_items(
        Item(
            id=f"g{n:02d}",
            collection="a",
            start=START + timedelta(hours=n),
            end=START + timedelta(hours=n, minutes=5),
            geometry=None,
            bbox=None,
            properties={
                "platform": ["noaa_19", "noaa%19", "metop-a"][n % 3],
                "eo:cloud_cover": float(n),
                **({"rare": True} if n == 4 else {}),
            },
        )
        for n in range(12)
    )
    return found


def ids(catalogue: SQLiteCatalogue, **query: Any) -> list[str]:
    search = parse_search({"limit": 100, **query}, viewer=None)
    return [item.id for item in catalogue.search(search).items]


@pytest.mark.parametrize(
    ("text", "wanted"),
    [
        ("eo:cloud_cover < 3", ["g00", "g01", "g02"]),
        ("eo:cloud_cover BETWEEN 9 AND 10", ["g09", "g10"]),
        ("NOT eo:cloud_cover >= 2", ["g00", "g01"]),
        ("platform = 'metop-a' AND eo:cloud_cover > 6", ["g08", "g11"]),
        ("platform LIKE 'noaa\\%%' ", ["g01", "g04", "g07", "g10"]),  # an escaped %
        ("platform LIKE 'NOAA%'", []),  # case counts, on SQLite as on PostgreSQL
        ("platform LIKE 'noaa_19'", ["g00", "g01", "g03", "g04", "g06", "g07", "g09", "g10"]),
        ("rare IS NULL AND eo:cloud_cover < 6", ["g00", "g01", "g02", "g03", "g05"]),
        ("rare = true", ["g04"]),
        ("id IN ('g03', 'g05', 'nope')", ["g03", "g05"]),
        (
            "eo:cloud_cover IN (1, 2.0, 5) AND platform IN ('noaa%19', 'metop-a')",
            ["g01", "g02", "g05"],
        ),
        (" AND ".join(["eo:cloud_cover < 2"] * 250), ["g00", "g01"]),  # SQLite takes 250
        ("datetime > TIMESTAMP('2020-01-01T09:30:00Z')", ["g10", "g11"]),
        ("end_datetime <= '2020-01-01T01:05:00Z'", ["g00", "g01"]),  # RFC 3339 text, as GDAL's
        ("collection = 'a' AND eo:cloud_cover = 0", ["g00"]),
        ('geometry IS NULL AND "properties.eo:cloud_cover" < 1', ["g00"]),
    ],
)
def test_each_filter_finds_its_items(catalogue, text, wanted):
    assert ids(catalogue, filter=text) == wanted
    as_json = parse_filter(text)
    assert ids(catalogue, filter=as_json, **{"filter-lang": "cql2-json"}) == wanted


def test_the_drafts_between_is_read_as_cql2s():
    drafted = {"op": "between", "args": [{"property": "x"}, [0, 50]]}
    assert parse_filter(drafted) == {"op": "between", "args": [{"property": "x"}, 0.0, 50.0]}


def test_a_filter_is_one_sql_condition_with_its_values_as_parameters():
    sql, parameters = filter_sql(
        parse_filter("platform = 'x''; DROP TABLE items' AND eo:cloud_cover < 5"),
        SQLITE,
        {"platform": {"string"}, "eo:cloud_cover": {"number"}},
    )
    assert "DROP" not in sql
    assert parameters == [
        '$.properties."platform"',
        "x'; DROP TABLE items",
        '$.properties."eo:cloud_cover"',
        5.0,
    ]


def test_like_patterns_become_globs():
    assert glob("a%b_c") == "a*b?c"
    assert glob("a*b?[c") == "a[*]b[?][[]c"
    assert glob("100\\%") == "100%"


def test_sorted_pages_follow_one_another(catalogue):
    search = parse_search({"sortby": "-platform,eo:cloud_cover", "limit": 5}, viewer=None)
    seen: list[str] = []
    while True:
        page = catalogue.search(search)
        seen += [item.id for item in page.items]
        if page.next_token is None:
            break
        search = parse_search(
            {"sortby": "-platform,eo:cloud_cover", "limit": 5, "token": page.next_token},
            viewer=None,
        )
    noaa_19, noaa_percent, metop = (
        ["g00", "g03", "g06", "g09"],
        ["g01", "g04", "g07", "g10"],
        [
            "g02",
            "g05",
            "g08",
            "g11",
        ],
    )
    assert seen == [*noaa_19, *noaa_percent, *metop]  # '_' sorts after '%'; ties by cover


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"filter": "cloud < 3"}, "filter: unknown queryable 'cloud'"),
        ({"filter": "platform > 3"}, "filter: platform is a string"),
        ({"filter": "rare = 'yes'"}, "filter: rare is a boolean"),
        ({"filter": "eo:cloud_cover = platform"}, "compare a property with a value"),
        ({"filter": "datetime > 3"}, "filter: datetime is a time"),
        ({"filter": "geometry = 'x'"}, "geometry is compared with S_INTERSECTS only"),
        ({"sortby": "rare,-nothing"}, "sortby: unknown queryable 'nothing'"),
        ({"sortby": "properties"}, "sortby: 'properties' is not sortable"),
        ({"filter": " AND ".join(["platform = 'x'"] * 252)}, "filter: 251 ANDs and ORs"),
        ({"filter": "eo:cloud_cover = ---1"}, "filter: three or more signs in a row"),
        ({"filter": "(" * 65 + "rare = true" + ")" * 65}, "filter: parentheses 65 deep"),
    ],
)
def test_what_cannot_be_answered_is_refused_by_name(catalogue, query, said):
    with pytest.raises(SearchError) as refused:
        ids(catalogue, **query)
    assert said in str(refused.value)


def orbit(index: int, collection: str = "a") -> Item:
    """A granule with a platform and a cloud cover, and no place."""
    start = START + timedelta(hours=index)
    properties = {"platform": "noaa19", "eo:cloud_cover": 5.0 * index}
    return Item(f"o{index}", collection, start, start, None, None, properties)


def test_a_catalogue_made_before_queryables_were_kept_learns_them_when_opened(tmp_path):
    with SQLiteCatalogue(tmp_path / "old.db") as catalogue:
        catalogue.put_collection(Collection(id="a"))
        catalogue.add_items([orbit(1), orbit(2)])
        catalogue.database.apply("DROP TABLE item_properties;")  # as it was made
    with SQLiteCatalogue(tmp_path / "old.db") as reopened:
        assert reopened.queryables("a") == {"platform": {"string"}, "eo:cloud_cover": {"number"}}
        assert ids(reopened, filter="eo:cloud_cover > 6") == ["o2"]


def test_on_postgresql_too(postgres_server, tmp_path):
    url = postgres_server.new_database("filter")
    with open_catalogue(url, tmp_path / "unused.db") as catalogue:
        catalogue.put_collection(Collection(id="a"))
        catalogue.add_items([orbit(n) for n in range(6)])
        with catalogue.connection() as connection:
            connection.execute("DROP TABLE item_properties")  # as it was made
    with open_catalogue(url, tmp_path / "unused.db") as reopened:
        assert reopened.queryables() == {"platform": {"string"}, "eo:cloud_cover": {"number"}}
        assert ids(reopened, filter="eo:cloud_cover BETWEEN 6 AND 20") == ["o2", "o3", "o4"]
        assert ids(reopened, sortby="-eo:cloud_cover", limit=2) == ["o5", "o4"]
        empty = {"type": "MultiPolygon", "coordinates": []}  # finds nothing, sorted or not
        assert ids(reopened, sortby="-eo:cloud_cover", intersects=empty) == []


def test_a_geometry_without_positions_finds_nothing_in_any_order(catalogue):
    empty = {"type": "MultiPolygon", "coordinates": []}
    assert ids(catalogue, sortby="-eo:cloud_cover", intersects=empty) == []
