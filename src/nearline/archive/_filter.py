"""A STAC API filter as users send it (CQL2 text or CQL2 JSON) turned into checked CQL2 JSON.

The grammar is the ``cql2`` package's (OGC's CQL2 1.0, parsed by a maintained parser, not by
hand here); what nearline can answer is checked as the filter is translated to SQL
(_filter_sql.py), where an operator or a property it does not offer is refused by name. A
syntax error is refused with its line and column.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import cql2
import orjson

from nearline.errors import SearchError

TEXT = "cql2-text"
JSON = "cql2-json"
DRAFT_TEXT = "cql-text"  # the drafts' name, which GDAL 3.6's OAPIF driver sends: read as CQL2
LANGUAGES = (TEXT, JSON, DRAFT_TEXT)
CRS84 = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
WHERE = re.compile(r"-->\s*(\d+):(\d+)")
EXPECTED = re.compile(r"=\s*(expected .*)$", re.MULTILINE)
# the parser (Rust) overflows its stack on deep nesting (2,000 parentheses, 4,000 signs, a
# chain of 20,000 ANDs), taking the server with it, and SQLite refuses an expression more
# than 1,000 deep, so a filter is measured before it is parsed; these bounds are far beyond
# any filter a person or a client writes
MOST_DEPTH = 64  # parentheses and NOTs (each nests), or objects and arrays in CQL2 JSON
MOST_TERMS = 250  # AND and OR, or CQL2 JSON's operators (SQLite's expressions: 1,000 deep)
MOST_CHARACTERS = 1_000_000
QUOTED = re.compile(r"'(?:[^']|'')*'|\"[^\"]*\"")
JOINS = re.compile(r"\b(?:AND|OR)\b", re.IGNORECASE)
NOTS = re.compile(r"\bNOT\b", re.IGNORECASE)
SIGNS = re.compile(r"[-+](?:\s*[-+]){2,}")


def parse_filter(value: Any, *, lang: Any = None, crs: Any = None) -> dict[str, Any] | bool:
    """A filter as CQL2 JSON, checked against CQL2's grammar.

    Parameters
    ----------
    value
        CQL2 text (a string) or CQL2 JSON (an object, or its JSON text in a query string).
    lang
        ``filter-lang``: ``cql2-text`` or ``cql2-json`` (None: text for a string, JSON for
        an object). With ``cql2-json``, a string is the JSON's text (as GET sends it). The
        drafts' ``cql-text`` (GDAL 3.6 sends it) is read as CQL2 text.
    crs
        ``filter-crs``: only CRS84 (longitude, latitude), as GeoJSON's, is offered.

    Returns
    -------
    dict or bool
        The filter as CQL2 JSON (a boolean literal is a filter too).

    Raises
    ------
    SearchError
        Not CQL2 (naming the line and column of a syntax error), or a language or CRS not
        offered.
    """
    if crs is not None and crs != CRS84:
        raise SearchError(f"filter-crs: only {CRS84} (longitude, latitude) is offered")
    if lang is None:
        lang = TEXT if isinstance(value, str) else JSON
    if lang not in LANGUAGES:
        raise SearchError(f"filter-lang: expected cql2-text or cql2-json, got {lang!r}")
    if lang in (TEXT, DRAFT_TEXT):
        if not isinstance(value, str):
            raise SearchError("filter: cql2-text is a string, such as platform = 'noaa19'")
        _measure_text(value)
        expression = _parsed(lambda: cql2.parse_text(value))
    else:
        if isinstance(value, str):
            try:
                value = orjson.loads(value)
            except orjson.JSONDecodeError:
                raise SearchError("filter: cql2-json given, but the filter is not JSON") from None
        if not isinstance(value, dict | bool):
            raise SearchError('filter: cql2-json is an object, such as {"op": "=", "args": ...}')
        _measure_json(value)
        try:
            text = orjson.dumps(_drafts_between(value)).decode()
        except orjson.JSONEncodeError:  # JSON may escape a lone surrogate; UTF-8 cannot hold it
            raise SearchError(
                "filter: a string or name holds a lone UTF-16 surrogate (such as \\ud800), "
                "which is not text; send each character whole"
            ) from None
        expression = _parsed(lambda: cql2.parse_json(text))
    # not cql2's validate(): its schema check takes minutes over a few hundred NOTs; what
    # nearline can answer is checked, operator by operator, as it is translated to SQL
    return expression.to_json()


def _too_large(what: str) -> SearchError:
    return SearchError(
        f"filter: {what}; a filter may nest {MOST_DEPTH} deep (parentheses and NOTs) and "
        f"hold {MOST_TERMS} ANDs and ORs at most"
    )


def _measure_text(text: str) -> None:
    """SearchError for CQL2 text nested or long beyond what the parser is trusted with."""
    if len(text) > MOST_CHARACTERS:
        raise _too_large(f"{len(text)} characters")
    bare = QUOTED.sub("''", text)
    depth = deepest = 0
    for character in bare:
        depth += (character == "(") - (character == ")")
        deepest = max(deepest, depth)
    nots = len(NOTS.findall(bare))
    if deepest + nots > MOST_DEPTH:
        raise _too_large(f"parentheses {deepest} deep and {nots} NOTs")
    if len(JOINS.findall(bare)) > MOST_TERMS:
        raise _too_large(f"{len(JOINS.findall(bare))} ANDs and ORs")
    if SIGNS.search(bare):
        raise SearchError("filter: three or more signs in a row (such as ---1)")


def _measure_json(value: Any) -> None:
    """SearchError for CQL2 JSON nested or large beyond what the parser is trusted with."""
    stack, operators = [(value, 1)], 0
    while stack:
        node, depth = stack.pop()
        if depth > MOST_DEPTH:
            raise _too_large(f"objects and arrays {depth} deep")
        if isinstance(node, dict):
            operators += "op" in node
            stack.extend((part, depth + 1) for part in node.values())
        elif isinstance(node, list):
            stack.extend((part, depth + 1) for part in node)
    if operators > 2 * MOST_TERMS:  # a comparison, and the AND or OR that holds it
        raise _too_large(f"{operators} operators (of {2 * MOST_TERMS} at most)")


def _parsed(parse: Any) -> Any:
    try:
        return parse()
    except cql2.ParseError as error:
        message = str(error)
        where = WHERE.search(message)
        expected = EXPECTED.search(message)
        at = f" at line {where[1]}, column {where[2]}" if where else ""
        said = f": {expected[1]}" if expected else f": {_first_line(message)}"
        raise SearchError(f"filter: CQL2 syntax error{at}{said}") from None
    except (ValueError, cql2.ValidationError) as error:
        raise SearchError(f"filter: not CQL2: {_first_line(str(error))}") from None


def _drafts_between(node: Any) -> Any:
    """``node`` with the CQL2 drafts' BETWEEN (``[x, [low, high]]``, which clients such as
    stac-api-validator still send) as CQL2 1.0's (``[x, low, high]``)."""
    if isinstance(node, list):
        return [_drafts_between(part) for part in node]
    if not isinstance(node, dict):
        return node
    args = node.get("args")
    if (
        str(node.get("op", "")).lower() == "between"
        and isinstance(args, list)
        and len(args) == 2
        and isinstance(args[1], list)
        and len(args[1]) == 2
    ):
        return {**node, "args": [_drafts_between(args[0]), *args[1]]}
    return {key: _drafts_between(value) for key, value in node.items()}


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0][:300] if message.strip() else "unreadable"


def filter_properties(expression: Any) -> Iterator[str]:
    """Every property name a CQL2 JSON expression names, in order (repeats included).

    Parameters
    ----------
    expression
        CQL2 JSON, or any part of it.
    """
    if isinstance(expression, Mapping):
        if set(expression) == {"property"}:
            yield str(expression["property"])
            return
        for value in expression.values():
            yield from filter_properties(value)
    elif isinstance(expression, list):
        for value in expression:
            yield from filter_properties(value)
