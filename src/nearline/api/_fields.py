"""The STAC API Fields extension: which parts of each item a search's answer carries.

GET gives ``fields=id,properties.datetime,-geometry`` (``-`` excludes, ``+`` or nothing
includes; an unescaped ``+`` arrives as a space and is read as one); POST gives
``{"include": [...], "exclude": [...]}``. Fields are dotted paths into the item. As the
extension asks: with an include, an item carries only what is included, less what is
excluded below it; with only excludes, everything but them; a POST whose ``include`` is
given but null or empty starts from the default set (:data:`DEFAULT`) instead; with no
fields at all, the whole item. A field both included and excluded is included. This shapes
the answer only: which items match is the search's alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nearline.errors import SearchError

WANTED = 'id,properties.datetime,-geometry, or {"include": [...], "exclude": [...]}'
DEFAULT = (  # the extension's recommended default set
    ("type",),
    ("stac_version",),
    ("id",),
    ("geometry",),
    ("bbox",),
    ("links",),
    ("assets",),
    ("properties", "datetime"),
)


@dataclass(frozen=True)
class Fields:
    """The paths to include and to exclude (each a tuple of keys)."""

    include: tuple[tuple[str, ...], ...] = ()
    exclude: tuple[tuple[str, ...], ...] = ()
    default: bool = False  # start from DEFAULT, not the whole item, where nothing is included

    def shape(self, item: dict[str, Any]) -> dict[str, Any]:
        """``item`` as these fields shape it."""
        if not self.include and not self.exclude and not self.default:
            return item
        start = self.include or (DEFAULT if self.default else ())
        shaped = _copy(item, start) if start else dict(item)
        for path in self.exclude:
            if not any(kept[: len(path)] == path for kept in self.include):
                _drop(shaped, path)
        return shaped


def parse_fields(value: Any) -> Fields:
    """``fields`` as GET's text or POST's object, checked.

    Parameters
    ----------
    value
        ``"id,-geometry"`` (GET) or ``{"include": [...], "exclude": [...]}`` (POST; either
        may be null or empty).

    Returns
    -------
    Fields
        What to include and exclude.

    Raises
    ------
    SearchError
        Neither form, or an empty field name.
    """
    if isinstance(value, str):
        include, exclude = [], []
        for part in value.split(","):
            text = part.strip(" ") if part.startswith(" ") else part  # '+' unescaped
            (exclude if text.startswith("-") else include).append(text.lstrip("+-"))
    elif isinstance(value, Mapping) and not set(value) - {"include", "exclude"}:
        include, exclude = _names(value.get("include")), _names(value.get("exclude"))
    else:
        raise SearchError(f"fields: expected {WANTED}; got {value!r}")
    if any(not name or "" in name.split(".") for name in (*include, *exclude)):
        raise SearchError(f"fields: a field is empty in {value!r}; expected {WANTED}")
    return Fields(
        include=tuple(tuple(name.split(".")) for name in include),
        exclude=tuple(
            tuple(name.split(".")) for name in exclude if name not in include
        ),  # both: included, as the extension asks
        default=isinstance(value, Mapping) and "include" in value and not include,
    )


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise SearchError(f"fields: include and exclude are lists of fields; expected {WANTED}")
    return value


def _copy(item: Mapping[str, Any], paths: tuple[tuple[str, ...], ...]) -> dict[str, Any]:
    """Only the parts of ``item`` at ``paths``."""
    shaped: dict[str, Any] = {}
    for path in paths:
        source: Any = item
        for key in path:
            if not isinstance(source, Mapping) or key not in source:
                break
            source = source[key]
        else:
            target = shaped
            for key in path[:-1]:
                target = target.setdefault(key, {})
            target[path[-1]] = source
    return shaped


def _drop(item: dict[str, Any], path: tuple[str, ...]) -> None:
    """``item`` without the part at ``path`` (copying what it changes below the top)."""
    parent = item
    for key in path[:-1]:
        child = parent.get(key)
        if not isinstance(child, Mapping):
            return
        parent[key] = dict(child)
        parent = parent[key]
    parent.pop(path[-1], None)
