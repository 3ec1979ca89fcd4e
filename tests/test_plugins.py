"""The plug-in registry every kind shares: entry points read once and only when asked,
built-ins by name, an unknown name answered with what is installed, and a third party's
plug-in found through a real entry point (a package's dist-info on sys.path)."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import nearline.plugins
from nearline.burst import available_sinks, get_sink
from nearline.burst.sinks import SINKS
from nearline.errors import ConfigError, GridError
from nearline.grid import available_grids, get_grid
from nearline.grid._registry import GRID_REGISTRY
from nearline.layout._tier_registry import TIERS, open_tier
from nearline.orders import available_executors, open_executor
from nearline.plugins import Registry

GROUP = "nearline.test-widgets"
HAMMER, OURS = ("a hammer",), ("our spanner",)  # built-ins (a string would name an import)


def install(folder: Path, *, module: str, source: str, points: dict[str, dict[str, str]]) -> None:
    """A package as pip leaves it: its module and a dist-info naming its entry points."""
    (folder / f"{module}.py").write_text(textwrap.dedent(source))
    info = folder / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    lines = [
        line
        for group, names in points.items()
        for line in (f"[{group}]", *(f"{name} = {target}" for name, target in names.items()))
    ]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The entry-point groups the registries scan, one entry a scan (the real scan runs)."""
    seen: list[str] = []
    real = importlib.metadata.entry_points

    def counted(**selection: str) -> importlib.metadata.EntryPoints:
        seen.append(selection.get("group", ""))
        return real(**selection)

    monkeypatch.setattr(nearline.plugins, "entry_points", counted)
    return seen


@pytest.fixture
def widgets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A third-party package with two widgets in the test group, importable from tmp_path."""
    install(
        tmp_path,
        module="acme_widgets",
        source="""
            SPANNER = "a spanner from acme"
            WRENCH = "a wrench from acme"
        """,
        points={GROUP: {"spanner": "acme_widgets:SPANNER", "wrench": "acme_widgets:WRENCH"}},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.fixture
def fresh_rooms() -> Iterator[None]:
    """The rooms' registries read the entry points again, before and after the test."""
    for registry in (SINKS, GRID_REGISTRY, TIERS):
        registry.forget()
    yield
    for registry in (SINKS, GRID_REGISTRY, TIERS):
        registry.forget()


def test_a_plugin_is_found_through_its_entry_point_and_imported_only_when_asked(widgets):
    registry: Registry[str] = Registry("widget", group=GROUP, builtins={"hammer": HAMMER})
    assert registry.names() == ["hammer", "spanner", "wrench"]
    assert "acme_widgets" not in sys.modules
    assert registry.get("spanner") == "a spanner from acme"
    assert "acme_widgets" in sys.modules
    assert registry.get("hammer") is HAMMER
    assert "wrench" in registry
    assert "saw" not in registry


def test_the_entry_points_are_read_once_and_only_when_first_asked(widgets, scans):
    registry: Registry[str] = Registry("widget", group=GROUP)
    assert scans == []  # making a registry reads nothing
    for _ in range(3):
        assert registry.get("wrench") == "a wrench from acme"
        assert registry.names() == ["spanner", "wrench"]
        with pytest.raises(ConfigError):
            registry.get("saw")
    assert scans == [GROUP]
    registry.forget()
    assert registry.names() == ["spanner", "wrench"]
    assert scans == [GROUP, GROUP]


def test_a_plugin_installed_after_the_first_read_is_seen_once_forgotten(widgets):
    registry: Registry[str] = Registry("widget", group=GROUP)
    assert registry.names() == ["spanner", "wrench"]
    later = widgets / "later"
    later.mkdir()
    install(
        later,
        module="later_widgets",
        source="SAW = 'a saw'",
        points={GROUP: {"saw": "later_widgets:SAW"}},
    )
    sys.path.insert(0, str(later))
    try:
        assert "saw" not in registry
        registry.forget()
        assert registry.get("saw") == "a saw"
    finally:
        sys.path.remove(str(later))


def test_an_unknown_name_raises_the_kinds_error_naming_what_is_installed(widgets):
    registry: Registry[str] = Registry(
        "widget", group=GROUP, builtins={"hammer": HAMMER}, error=GridError
    )
    with pytest.raises(
        GridError, match=r"^no widget called 'saw'; installed: hammer, spanner, wrench$"
    ):
        registry.get("saw")
    with pytest.raises(GridError, match=r"; or buy one$"):
        registry.get("saw", hint="or buy one")
    empty: Registry[str] = Registry("gadget", group="nearline.test-nothing-here")
    with pytest.raises(ConfigError, match="no gadget called 'x'; installed: none"):
        empty.get("x")


def test_a_built_in_wins_over_an_entry_point_of_its_name(widgets):
    registry: Registry[str] = Registry("widget", group=GROUP, builtins={"spanner": OURS})
    assert registry.get("spanner") is OURS
    assert registry.names() == ["spanner", "wrench"]
    assert registry.plugins() == ["wrench"]


def test_the_rooms_registries_name_what_is_installed():
    with pytest.raises(
        ConfigError, match="no sink called 'foo'; installed: netcdf, hdf5, zarr, raw; or pass a"
    ):
        get_sink("foo")
    with pytest.raises(
        ConfigError, match=r"no executor called 'slurm'; installed: dask; give local"
    ):
        open_executor("slurm://head:6817")
    assert available_executors() == ["dask", "local"]
    with pytest.raises(GridError, match="no grid called 'mars-1km'; installed: igh-8km, igh-1km"):
        get_grid("mars-1km")


def test_a_third_party_sink_grid_and_tier_plug_in_through_real_entry_points(
    tmp_path, monkeypatch, fresh_rooms
):
    install(
        tmp_path,
        module="acme_formats",
        source="""
            from nearline.burst.sinks.raw import RawSink
            from nearline.grid import latlon_grid
            from nearline.layout._tier_fsspec import FsspecTier


            class AcmeRawSink(RawSink):
                name = "acme-raw"


            COARSE = latlon_grid("acme-2deg", 2.0, 2.0)


            class AcmeTier(FsspecTier):
                # acme://NAME: a tape library, here fsspec's memory file system

                @classmethod
                def from_url(cls, url, *, storage_options=None):
                    tier = super().from_url(url.replace("acme://", "memory://acme-"))
                    tier.url = url
                    return tier
        """,
        points={
            "nearline.sinks": {"acme-raw": "acme_formats:AcmeRawSink"},
            "nearline.grids": {"acme-2deg": "acme_formats:COARSE"},
            "nearline.tiers": {"acme": "acme_formats:AcmeTier"},
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert available_sinks() == ["acme-raw", "hdf5", "netcdf", "raw", "zarr"]
    sink = get_sink("acme-raw")
    assert (type(sink).__name__, type(sink).__module__, sink.name) == (
        "AcmeRawSink",
        "acme_formats",
        "acme-raw",
    )
    assert available_grids()[-1] == "acme-2deg"
    grid = get_grid("acme-2deg")
    assert (grid.width, grid.height) == (180, 90)
    assert np.allclose(grid.cell_size, (2.0, 2.0))
    tier = open_tier("acme://vault/run1")
    assert (type(tier).__name__, tier.url) == ("AcmeTier", "acme://vault/run1")
    with tier.open_write("a/b.tmp") as stream:
        stream.write(b"kept")
    tier.publish("a/b.tmp", "a/b")
    assert open_tier("acme://vault/run1").read_bytes("a/b") == b"kept"
    assert type(open_tier("memory://vault/run1")).__name__ == "FsspecTier"
    assert type(open_tier(tmp_path / "archive")).__name__ == "LocalTier"


def test_importing_the_rooms_reads_no_entry_points():
    script = """
        import importlib.metadata as metadata
        real, groups = metadata.entry_points, []

        def counted(**selection):
            groups.append(selection.get("group", ""))
            return real(**selection)

        metadata.entry_points = counted
        import nearline.burst, nearline.grid, nearline.layout._tier_registry, nearline.orders
        import nearline.swath._registry
        print(sorted(g for g in groups if g.startswith("nearline.")))
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
