"""Hypothesis strategies: random catalogue searches and GeoJSON geometries. Needs hypothesis
(the ``dev`` extra)."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

import shapely
from hypothesis import strategies as st

from nearline.archive import Search
from nearline.testing.items import DAY, T0, VIEWERS, Filled, square


@st.composite
def searches(draw: st.DrawFn, filled: Filled) -> Search:
    """Random searches over ``filled``: any mix of collections, ids, a bbox (crossing the
    antimeridian or not) or an intersects geometry, an instant or interval, a limit and a
    viewer."""
    moment = st.one_of(
        st.builds(
            lambda t, nudge: t + timedelta(microseconds=nudge),
            st.sampled_from(filled.moments),
            st.sampled_from([-1, 0, 1]),
        ),
        st.datetimes(
            min_value=(T0 - 3 * DAY).replace(tzinfo=None),
            max_value=(T0 + 6 * DAY).replace(tzinfo=None),
            timezones=st.just(UTC),
        ),
    )
    when = draw(st.sampled_from(["any", "instant", "closed", "from", "until"]))
    start = end = None
    if when == "instant":
        start = end = draw(moment)
    elif when == "closed":
        start, end = sorted([draw(moment), draw(moment)])
    elif when == "from":
        start = draw(moment)
    elif when == "until":
        end = draw(moment)
    bbox = intersects = None
    where = draw(st.sampled_from(["anywhere", "bbox", "small bbox", "intersects"]))
    if where == "bbox":
        south, north = sorted(draw(st.lists(st.floats(-90, 90), min_size=2, max_size=2)))
        bbox = (draw(st.floats(-180, 180)), south, draw(st.floats(-180, 180)), north)
    elif where == "small bbox":
        west, south = draw(st.floats(-180, 179)), draw(st.floats(-90, 89))
        bbox = (west, south, west + draw(st.floats(0, 1)), south + draw(st.floats(0, 1)))
    elif where == "intersects":
        intersects = draw(geometries())
    collections = draw(
        st.none()
        | st.lists(
            st.sampled_from(["terra", "aqua", "alice-runs", "empty", "nosuch"]),
            min_size=1,
            unique=True,
        ).map(tuple)
    )
    named = [item.id for item in filled.reference.items.values()]
    ids = draw(
        st.none()
        | st.lists(st.sampled_from([*named[:200], "nosuch"]), min_size=1, max_size=5).map(tuple)
    )
    return Search(
        collections=collections,
        ids=ids,
        bbox=bbox,
        intersects=intersects,
        start=start,
        end=end,
        limit=draw(st.integers(1, 20)),
        viewer=draw(st.sampled_from(VIEWERS)),
    )


@st.composite
def geometries(draw: st.DrawFn) -> dict[str, Any]:
    """A point, a line, a convex polygon or two squares either side of the antimeridian."""
    lon, lat = draw(st.floats(-170, 170)), draw(st.floats(-80, 80))
    kind = draw(st.sampled_from(["Point", "LineString", "Polygon", "MultiPolygon"]))
    if kind == "Point":
        return {"type": "Point", "coordinates": [lon, lat]}
    if kind == "LineString":
        return {"type": "LineString", "coordinates": [[lon, lat], [lon + 10, lat + 10]]}
    if kind == "Polygon":
        radius, corners = draw(st.floats(0.01, 10)), draw(st.integers(3, 8))
        ring = shapely.Point(lon, lat).buffer(radius, quad_segs=corners).exterior.coords
        return {"type": "Polygon", "coordinates": [[list(point) for point in ring]]}
    width = draw(st.floats(0.1, 10))
    return {
        "type": "MultiPolygon",
        "coordinates": [
            square(180 - width, lat - 5, 180, lat + 5)["coordinates"],
            square(-180, lat - 5, -180 + width, lat + 5)["coordinates"],
        ],
    }
