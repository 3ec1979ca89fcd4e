"""Plug-ins by name, found one way for every kind: sinks, readers, executors, grids and
archive tiers each keep a :class:`Registry`.

A room registers its built-ins by name: the thing itself, or, when importing it is costly,
a string ``"module:attribute"`` (a string always names an import), imported when asked for.
Third parties add theirs through the kind's entry-point group (``nearline.sinks``,
``nearline.readers``, ...), which is read once, when a name is first looked up or listed,
never at import: a scan costs ~12 ms, more than opening a small granule (xarray finds its
engines the same way). A name nobody registered raises the kind's own error, naming what is
installed.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, TypeVar

from nearline.errors import ConfigError, NearlineError

T = TypeVar("T")


class Registry(Generic[T]):
    """The plug-ins of one kind: ``kind`` names it in errors ("no sink called 'x'"),
    ``group`` is its entry-point group, ``error`` the error an unknown name raises."""

    def __init__(
        self,
        kind: str,
        *,
        group: str,
        builtins: Mapping[str, T | str] | None = None,
        error: type[NearlineError] = ConfigError,
    ) -> None:
        self.kind = kind
        self.group = group
        self.error = error
        self._builtins: dict[str, T | str] = dict(builtins or {})
        self._points: dict[str, EntryPoint] | None = None

    def register(self, name: str, target: T | str) -> None:
        """Add a built-in: ``target`` itself, or ``"module:attribute"`` to import when asked."""
        self._builtins[name] = target

    def names(self) -> list[str]:
        """Every name: the built-ins in the order registered, then the plug-ins by name."""
        return [*self._builtins, *self.plugins()]

    def plugins(self) -> list[str]:
        """The names third parties installed (entry points a built-in does not shadow)."""
        return sorted(set(self._entry_points()) - set(self._builtins))

    def __contains__(self, name: object) -> bool:
        return name in self._builtins or name in self._entry_points()

    def get(self, name: str, *, hint: str = "") -> T:
        """The plug-in called ``name`` (a built-in wins over an entry point of its name),
        imported only now; ``hint`` ends the error's message with what else may be given."""
        if name in self._builtins:
            target = self._builtins[name]
            return _import(target) if isinstance(target, str) else target
        point = self._entry_points().get(name)
        if point is None:
            installed = ", ".join(self.names()) or "none"
            raise self.error(
                f"no {self.kind} called {name!r}; installed: {installed}"
                + (f"; {hint}" if hint else "")
            )
        return point.load()

    def forget(self) -> None:
        """Read the entry points again at the next look-up (after installing a plug-in)."""
        self._points = None

    def _entry_points(self) -> dict[str, EntryPoint]:
        if self._points is None:
            self._points = {point.name: point for point in entry_points(group=self.group)}
        return self._points


def _import(target: str) -> Any:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)
