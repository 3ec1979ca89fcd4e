"""Imports point one way: no module of nearline imports one that imports it back, each
room uses only the rooms docs/architecture.md allows it, and enters them through their
``__init__``.

The rules are read from that page's three tables (the rooms and what each may import, the
shared helpers at the package root, and the few modules one room may reach into past
another's ``__init__``), so the plan and this test cannot disagree. Every import counts, the
ones inside functions too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
PACKAGE = PROJECT / "src" / "nearline"
PLAN = PROJECT / "docs" / "architecture.md"
EVERY_ROOM = "every room"  # in the plan: every room but the ones that may import them all


def plan_rows(table: str) -> list[list[str]]:
    """The cells of the plan's table between its ``<!-- table:begin/end -->`` markers."""
    text = PLAN.read_text()
    block = text.split(f"<!-- {table}:begin -->")[1].split(f"<!-- {table}:end -->")[0]
    lines = block.strip().splitlines()[2:]  # past the header and its rule
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines]


def names_in(cell: str) -> set[str]:
    return set(re.findall(r"`([a-z_]+)`", cell))


def house_plan() -> tuple[dict[str, set[str]], set[str]]:
    """({room: the rooms it may import}, the shared helpers), as docs/architecture.md says."""
    rows = {next(iter(names_in(room))): allowed for room, allowed, _ in plan_rows("rooms")}
    everyone = {room for room, allowed in rows.items() if EVERY_ROOM not in allowed}
    allowed = {
        room: everyone if EVERY_ROOM in text else names_in(text) for room, text in rows.items()
    }
    shared = {next(iter(names_in(helper))) for helper, _ in plan_rows("shared")}
    return allowed, shared


def face_exceptions() -> set[tuple[str, str]]:
    """(importer room, module) pairs the plan lets reach past a room's ``__init__``."""
    return {
        (room, module)
        for rooms, modules, _ in plan_rows("faces")
        for room in names_in(rooms)
        for module in re.findall(r"`(nearline(?:\.[a-z_0-9]+)+)`", modules)
    }


ALLOWED, SHARED = house_plan()
FACE_EXCEPTIONS = face_exceptions()
ROOMS = set(ALLOWED)
# the rooms that may use the test support: itself, and those the plan lets import it
USE_TESTING = {room for room, allowed in ALLOWED.items() if "testing" in allowed} | {"testing"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def exported(package: str) -> set[str]:
    """The names a package's ``__init__`` lists in ``__all__``: its face."""
    init = PACKAGE.parent.joinpath(*package.split("."), "__init__.py")
    if not init.is_file():
        return set()
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return {ast.literal_eval(element) for element in node.value.elts}
    return set()


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The nearline modules ``path`` imports, anywhere in its body."""
    found = set()
    package = module_name(path) if path.name == "__init__.py" else module_name(path.parent)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            # ``from package import module`` depends on the module; any other name, on the
            # module (or package ``__init__``) that defines it, which is the package when its
            # ``__all__`` exports a function named as its module (``archive.ingest``)
            face = exported(base)
            names = [
                f"{base}.{alias.name}"
                if f"{base}.{alias.name}" in modules and alias.name not in face
                else base
                for alias in node.names
            ]
        else:
            continue
        found.update(name for name in names if name in modules)
    return found


@cache
def import_graph() -> dict[str, set[str]]:
    """Each module's imports of nearline's modules, parsed once for all the tests here (a
    parse of every module takes 1 to 4 s; no test changes the graph)."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    return {name: imports_of(path, modules) - {name} for name, path in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_graph_sees_lazy_imports() -> None:
    graph = import_graph()
    # base imports wire at the top, tiers its implementations: both must count
    assert len(graph) > 90
    assert "nearline.swath._wire" in graph["nearline.swath._base"]
    assert "nearline.layout._tier_local" in graph["nearline.layout._tier_registry"]


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("room", sorted(ALLOWED))
def test_rooms_import_only_what_the_house_plan_allows(room: str) -> None:
    graph = import_graph()
    allowed = ALLOWED[room] | SHARED | {room, ""}
    broken = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if room_of(module) == room
        for target in targets
        if room_of(target) not in allowed
    )
    assert broken == []


def test_only_the_cli_reaches_every_room() -> None:
    graph = import_graph()
    for helper in graph:
        if room_of(helper) in SHARED:
            assert {room_of(t) for t in graph[helper]} <= SHARED | {""}, helper


def test_nothing_but_the_doctor_uses_the_test_support() -> None:
    graph = import_graph()
    users = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if room_of(module) not in USE_TESTING
        for target in targets
        if room_of(target) == "testing"
    )
    assert users == []


def past_the_faces(graph: dict[str, set[str]]) -> set[tuple[str, str, str]]:
    """(importer room, module, target) for each import of another room's module other than its
    ``__init__``: the room's face is ``nearline.<room>``."""
    return {
        (room_of(module), module, target)
        for module, targets in graph.items()
        for target in targets
        if room_of(target) in ROOMS
        and room_of(target) != room_of(module)
        and target != f"nearline.{room_of(target)}"
    }


def test_rooms_are_entered_through_their_public_face() -> None:
    broken = sorted(
        f"{module} imports {target}"
        for room, module, target in past_the_faces(import_graph())
        if (room, target) not in FACE_EXCEPTIONS
    )
    assert broken == []


def test_every_exception_to_the_faces_is_still_needed() -> None:
    used = {(room, target) for room, _, target in past_the_faces(import_graph())}
    assert sorted(FACE_EXCEPTIONS - used) == []


def test_the_plan_names_every_room_and_root_module_there_is() -> None:
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert packages | modules == ROOMS | SHARED


def test_the_plan_reader_finds_the_rules() -> None:
    assert ALLOWED["composite"] == {"swath", "grid", "burst"}
    assert ALLOWED["layout"] == set()
    assert ALLOWED["cli"] == ROOMS - {"cli", "testing"}
    assert {"errors", "db", "plugins"} <= SHARED
    assert {"testing", "doctor"} == USE_TESTING
    assert ("composite", "nearline.swath.shm") in FACE_EXCEPTIONS
    assert ("doctor", "nearline.burst.native") in FACE_EXCEPTIONS
