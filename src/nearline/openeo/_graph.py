"""A process graph as a client sends it, checked before anything runs: its nodes, their
references to each other and to parameters, one result node, no cycle, and only the
processes nearline runs. openeo-pg-parser-networkx reads the graph afterwards; it assumes a
well-formed one (a cycle sends it into endless recursion, an unknown process surfaces as a
KeyError mid-run), so what a stranger may send is refused here with openEO's own codes."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from nearline.errors import OpenEOError
from nearline.openeo._processes import PROCESS_IDS, process_spec

MAX_NODES = 1_000  # nodes of one graph, callbacks included: a graph is a recipe, not a dataset
MAX_DEPTH = 16  # callbacks within callbacks: a reducer in an apply in a reducer is three


@dataclass(frozen=True)
class LoadCall:
    """What one ``load_collection`` node asks for, read before the graph runs: the service
    finds the collection's files (and a batch job stages them) from these alone."""

    node: str
    collection: str
    spatial_extent: Mapping[str, Any] | None
    temporal_extent: tuple[str | None, str | None] | None
    bands: tuple[str, ...] | None


def invalid(message: str, code: str = "ProcessGraphInvalid") -> OpenEOError:
    """A refused graph: openEO's ``code`` (400) and what to change."""
    return OpenEOError(message, status=400, openeo_code=code)


def process_graph_of(body: Any) -> dict[str, Any]:
    """The flat process graph of a ``/result`` or ``/jobs`` body (``{"process":
    {"process_graph": ...}}``), checked.

    Parameters
    ----------
    body
        The request's JSON body.

    Raises
    ------
    OpenEOError
        ``ProcessGraphMissing``, ``ProcessGraphInvalid`` or ``ProcessUnsupported`` (400).
    """
    process = body.get("process") if isinstance(body, dict) else None
    graph = process.get("process_graph") if isinstance(process, dict) else None
    if not isinstance(graph, dict) or not graph:
        raise invalid(
            'the body holds no process graph: send {"process": {"process_graph": {...}}}',
            "ProcessGraphMissing",
        )
    check_graph(graph)
    return graph


def check_graph(graph: Mapping[str, Any], *, parameters: frozenset[str] = frozenset(),
                where: str = "the process graph") -> None:  # fmt: skip
    """Refuse ``graph`` unless it is one nearline can run.

    Parameters
    ----------
    graph
        A flat process graph: node ids to ``{"process_id", "arguments", "result"}``.
    parameters
        The parameters a callback's nodes may reference (``{"from_parameter": ...}``).
    where
        How messages name this graph (a callback names its parent's argument).

    Raises
    ------
    OpenEOError
        A node that is not a process call, a reference to a node or parameter that does not
        exist, no or several result nodes, a cycle, too many nodes, or a process nearline
        does not run.
    """
    if sum(1 for _ in _all_nodes(graph)) > MAX_NODES:
        raise invalid(f"{where} has over {MAX_NODES} nodes; split the work into batch jobs",
                      "ProcessGraphComplexity")  # fmt: skip
    for node_id, node in graph.items():
        if not isinstance(node, dict) or not isinstance(node.get("process_id"), str):
            raise invalid(f"node {node_id!r} of {where} is not a process call: it needs a "
                          '"process_id" and "arguments"')  # fmt: skip
        if node["process_id"] not in PROCESS_IDS:
            raise invalid(
                f"process {node['process_id']!r} (node {node_id!r}) is not available on this "
                f"back-end; GET /processes lists the {len(PROCESS_IDS)} it runs",
                "ProcessUnsupported",
            )
        if not isinstance(node.get("arguments", {}), dict):
            raise invalid(f"node {node_id!r}: its arguments must be an object")
    results = [node_id for node_id, node in graph.items() if node.get("result") is True]
    if len(results) != 1:
        raise invalid(f"{where} has {len(results)} result nodes; mark exactly one with "
                      '"result": true')  # fmt: skip
    edges = {node_id: set() for node_id in graph}
    for node_id, node in graph.items():
        for argument, value in node.get("arguments", {}).items():
            for reference in _references(value):
                _check_reference(reference, graph, parameters, node_id, argument, where, edges)
    _refuse_cycles(edges, where)


def uses_process(graph: Mapping[str, Any], process_id: str) -> bool:
    """Whether ``graph`` (or a callback in it) calls ``process_id``.

    Parameters
    ----------
    graph
        A graph :func:`check_graph` accepted.
    process_id
        The process looked for (``run_udf``: the graph runs a stranger's code).
    """
    return any(node.get("process_id") == process_id for _, node in _all_nodes(graph))


def load_calls(graph: Mapping[str, Any]) -> list[LoadCall]:
    """Every ``load_collection`` of a checked graph, callbacks included, in node order.

    Parameters
    ----------
    graph
        A graph :func:`check_graph` accepted.
    """
    calls = []
    for node_id, node in _all_nodes(graph):
        if node["process_id"] != "load_collection":
            continue
        arguments = node.get("arguments", {})
        collection = arguments.get("id")
        if not isinstance(collection, str):
            raise invalid(f"load_collection (node {node_id!r}): its id must be a collection's "
                          "id, as a string", "ProcessParameterInvalid")  # fmt: skip
        extent = arguments.get("temporal_extent")
        bands = arguments.get("bands")
        calls.append(
            LoadCall(node_id, collection, arguments.get("spatial_extent"),
                     _temporal(extent, node_id), tuple(bands) if bands else None)
        )  # fmt: skip
    return calls


def _temporal(extent: Any, node_id: str) -> tuple[str | None, str | None] | None:
    if extent is None:
        return None
    ok = isinstance(extent, list) and len(extent) == 2
    if not ok or not all(bound is None or isinstance(bound, str) for bound in extent):
        raise invalid(
            f"load_collection (node {node_id!r}): temporal_extent must be [start, end], "
            'each a date, a date-time or null (e.g. ["2012-12-01", "2013-01-01"])',
            "ProcessParameterInvalid",
        )
    return extent[0], extent[1]


def _all_nodes(graph: Mapping[str, Any], depth: int = 0) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every node of ``graph`` and of the callbacks in its arguments."""
    if depth > MAX_DEPTH:
        raise invalid(f"the process graph nests callbacks over {MAX_DEPTH} deep",
                      "ProcessGraphComplexity")  # fmt: skip
    for node_id, node in graph.items():
        if not isinstance(node, dict):
            yield node_id, {"process_id": None}
            continue
        yield node_id, node
        arguments = node.get("arguments", {})
        for value in arguments.values() if isinstance(arguments, dict) else ():
            for reference in _references(value):
                if isinstance(reference.get("process_graph"), dict):
                    yield from _all_nodes(reference["process_graph"], depth + 1)


def _references(value: Any) -> Iterator[dict[str, Any]]:
    """Every object in an argument's value that is a reference or a callback, not
    descending into callbacks."""
    if isinstance(value, dict):
        if "from_node" in value or "from_parameter" in value or "process_graph" in value:
            yield value
            return
        for inner in value.values():
            yield from _references(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _references(inner)


def _check_reference(value: dict[str, Any], graph: Mapping[str, Any], parameters: frozenset[str],
                     node_id: str, argument: str, where: str,
                     edges: dict[str, set[str]]) -> None:  # fmt: skip
    """Refuse a reference to a node or parameter that is not there; check a callback."""
    if "from_node" in value:
        source = value["from_node"]
        if not isinstance(source, str) or source not in graph:
            raise invalid(f"node {node_id!r} of {where} uses the result of node {source!r}, "
                          "which is not in the graph")  # fmt: skip
        edges[node_id].add(source)
    elif "process_graph" in value:
        callback = value["process_graph"]
        if not isinstance(callback, dict) or not callback:
            raise invalid(f"node {node_id!r}: the callback of {argument!r} holds no process")
        names = frozenset(_callback_parameters(graph[node_id]["process_id"], argument))
        check_graph(callback, parameters=parameters | names,
                    where=f"the callback of {argument!r} in node {node_id!r}")  # fmt: skip
    elif "from_parameter" in value and value["from_parameter"] not in parameters:
        raise invalid(
            f"node {node_id!r} of {where} uses the parameter {value['from_parameter']!r}, "
            f"which is not defined there (defined: {', '.join(sorted(parameters)) or 'none'})",
            "ProcessParameterInvalid",
        )


def _callback_parameters(process_id: str, argument: str) -> list[str]:
    """The parameters a process passes to its callback ``argument`` (its specification's
    ``schema.parameters``)."""
    for parameter in process_spec(process_id).get("parameters", []):
        if parameter["name"] != argument:
            continue
        schemas = parameter["schema"] if isinstance(parameter["schema"], list) else [
            parameter["schema"]]  # fmt: skip
        return [p["name"] for s in schemas for p in s.get("parameters", [])]
    return []


def _refuse_cycles(edges: dict[str, set[str]], where: str) -> None:
    """Refuse a graph whose nodes use each other's results in a ring (depth-first, no
    recursion: a stranger's graph sets no stack depth)."""
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    for start in edges:
        if state.get(start):
            continue
        stack = [(start, iter(sorted(edges[start])))]
        state[start] = 1
        while stack:
            node, sources = stack[-1]
            source = next(sources, None)
            if source is None:
                state[node] = 2
                stack.pop()
            elif state.get(source) == 1:
                ring = [name for name, _ in stack][[n for n, _ in stack].index(source) :]
                raise invalid(f"{where} has a cycle: {' -> '.join([*ring, source])}; a node "
                              "may use only results computed before it")  # fmt: skip
            elif not state.get(source):
                state[source] = 1
                stack.append((source, iter(sorted(edges[source]))))
