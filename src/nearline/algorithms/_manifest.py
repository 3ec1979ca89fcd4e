"""Reading ``algorithm.yaml``: YAML (safe, no aliases), then its JSON Schema, then the checks
a schema cannot say (unique names, a valid parameters schema, PEP 508 requirements, test files
inside the package), into the frozen nouns of _base.py.

Every problem is a :class:`ManifestError` naming the field (``inputs[0].max``), what it expects
and what it got.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import yaml
from jsonschema.exceptions import ValidationError, best_match
from packaging.requirements import InvalidRequirement, Requirement

from nearline.algorithms._base import (
    MANIFEST,
    InputSpec,
    Manifest,
    OutputSpec,
    Resources,
    TestCase,
)
from nearline.algorithms._schema import (
    MANIFEST_SCHEMA,
    check_json_values,
    field_name,
    schema_error,
    shown,
)
from nearline.errors import ConfigError, ManifestError
from nearline.units import parse_size

MAX_MANIFEST_BYTES = 1024**2
MIN_MEMORY = 16 * 1024**2
_VALIDATOR = jsonschema.Draft202012Validator(MANIFEST_SCHEMA)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)?\s*$")
_SECONDS = {None: 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def read_manifest(package: Path) -> Manifest:
    """The checked manifest of a package folder.

    Parameters
    ----------
    package
        The folder holding ``algorithm.yaml``; the tests' files must exist in it.

    Returns
    -------
    Manifest
        Its fields as the package declares them, defaults filled in.

    Raises
    ------
    ManifestError
        No ``algorithm.yaml``, one over 1 MiB, or one that does not check; the message names
        the field and what it wants.
    """
    path = package / MANIFEST
    if not path.is_file():
        raise ManifestError(
            f"{MANIFEST} is missing: a package holds {MANIFEST} at its top (or in its single "
            "top folder), next to the program it describes"
        )
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise ManifestError(f"{MANIFEST} is larger than 1 MiB; it describes, it does not carry")
    return parse_manifest(path.read_bytes(), package=package)


def parse_manifest(text: str | bytes, *, package: Path | None = None) -> Manifest:
    """``algorithm.yaml``'s text, checked.

    Parameters
    ----------
    text
        The YAML (aliases are refused: values are written out in full).
    package
        The package folder, if there is one: the tests' files must then exist in it.

    Returns
    -------
    Manifest
        As [`read_manifest`][nearline.algorithms.read_manifest] gives it.

    Raises
    ------
    ManifestError
        Not YAML, or not a manifest; the message names the field and what it wants.
    """
    try:
        if any(isinstance(token, yaml.AliasToken) for token in yaml.scan(text)):
            raise ManifestError(f"{MANIFEST} uses a YAML alias (*name); write values out in full")
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(error, "problem", None) or str(error)
        raise ManifestError(f"{MANIFEST} is not valid YAML{at}: {problem}") from None
    return manifest_from_dict(data, package=package)


def manifest_from_dict(data: Any, *, package: Path | None = None) -> Manifest:
    """A manifest mapping (as YAML or JSON loads it), checked.

    Parameters
    ----------
    data
        The mapping.
    package
        As for [`parse_manifest`][nearline.algorithms.parse_manifest].

    Returns
    -------
    Manifest
        The same as from the mapping's YAML.

    Raises
    ------
    ManifestError
        Not a manifest (the message names the field).
    """
    if not isinstance(data, Mapping):
        raise ManifestError(
            f"expected a mapping of fields (id: ..., version: ...), got {shown(data)}",
            field="(top)",
        )
    check_json_values(data, [])
    error = best_match(_VALIDATOR.iter_errors(data))
    if error is not None:
        raise schema_error(error)
    inputs = tuple(_input(i, entry) for i, entry in enumerate(data["inputs"]))
    outputs = tuple(_output(entry) for entry in data["outputs"])
    _unique([spec.name for spec in inputs], "inputs")
    _unique([spec.name for spec in outputs], "outputs")
    parameters = _parameters(data.get("parameters", {"type": "object"}), inputs)
    manifest = Manifest(
        id=data["id"],
        version=data["version"],
        title=data["title"],
        description=data["description"],
        command=tuple(data["command"]),
        build=tuple(data["build"]) if "build" in data else None,
        requirements=_requirements(data.get("requirements", [])),
        inputs=inputs,
        outputs=outputs,
        parameters=parameters,
        resources=_resources(data.get("resources", {})),
        collection=data.get("collection"),
        tests=(),
    )
    tests = tuple(
        _test(i, entry, manifest, package) for i, entry in enumerate(data.get("tests", []))
    )
    return replace(manifest, tests=tests)


def parse_duration(value: Any, *, what: str = "timeout") -> float:
    """Seconds from a number or a string such as '90s', '30m', '2h', '1d'."""
    if isinstance(value, bool):
        raise ConfigError(f"{what}: expected seconds or a duration such as '30m', got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if match is None:
            raise ConfigError(
                f"{what}: expected seconds or a duration such as '90s', '30m', '2h', got {value!r}"
            )
        seconds = float(match.group(1)) * _SECONDS[match.group(2)]
    if seconds <= 0:
        raise ConfigError(f"{what}: a duration must be more than 0 seconds, got {value!r}")
    return seconds


# -- pieces ---------------------------------------------------------------------------------
def _input(index: int, entry: Mapping[str, Any]) -> InputSpec:
    spec = InputSpec(
        name=entry["name"],
        collection=entry["collection"],
        min_count=entry.get("min", 1),
        max_count=entry.get("max"),
        description=entry.get("description", ""),
    )
    if spec.max_count is not None and spec.max_count < spec.min_count:
        raise ManifestError(
            f"expected a maximum of at least min ({spec.min_count}), got {spec.max_count}",
            field=f"inputs[{index}].max",
        )
    return spec


def _output(entry: Mapping[str, Any]) -> OutputSpec:
    return OutputSpec(
        name=entry["name"],
        media_type=entry.get("media_type", "application/octet-stream"),
        pattern=entry.get("pattern", "*"),
        description=entry.get("description", ""),
    )


def _unique(names: list[str], field: str) -> None:
    for index, name in enumerate(names):
        if name in names[:index]:
            raise ManifestError(f"the name {name!r} is used twice", field=f"{field}[{index}].name")


def _parameters(schema: Mapping[str, Any], inputs: Sequence[InputSpec]) -> dict[str, Any]:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        where = field_name(["parameters", *error.absolute_path])
        raise ManifestError(f"not a valid JSON Schema: {error.message}", field=where) from None
    if schema.get("type") != "object":
        raise ManifestError(
            f"expected a JSON Schema of type object, got type {schema.get('type')!r}",
            field="parameters.type",
        )
    properties = schema.get("properties", {})
    taken = {spec.name for spec in inputs}
    for name, prop in properties.items():
        field = f"parameters.properties.{name}"
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$", name):
            raise ManifestError("a parameter name must be letters, digits, '_' or '-'", field=field)
        if name in taken:
            raise ManifestError(f"{name!r} is already the name of a data input", field=field)
        if isinstance(prop, Mapping) and "default" in prop:
            try:
                jsonschema.validate(prop["default"], prop, jsonschema.Draft202012Validator)
            except ValidationError as error:
                raise ManifestError(
                    f"the default does not fit its own schema: {error.message}",
                    field=f"{field}.default",
                ) from None
    return dict(schema)


def _requirements(lines: Sequence[str]) -> tuple[str, ...]:
    for index, line in enumerate(lines):
        try:
            requirement = Requirement(line)
        except InvalidRequirement as error:
            reason = str(error).splitlines()[0]
            raise ManifestError(
                f"expected a PEP 508 requirement such as 'pyhdf>=0.11', got {line!r} ({reason})",
                field=f"requirements[{index}]",
            ) from None
        if requirement.url:
            raise ManifestError(
                f"{line!r} names a URL; name a package on the index (wheels only are installed)",
                field=f"requirements[{index}]",
            )
    return tuple(lines)


def _resources(entry: Mapping[str, Any]) -> Resources:
    default = Resources()
    try:
        memory = parse_size(entry.get("memory", default.memory), what="resources.memory")
        disk = parse_size(entry.get("disk", default.disk), what="resources.disk")
        timeout = parse_duration(entry.get("timeout", default.timeout), what="resources.timeout")
    except ConfigError as error:
        field, _, message = str(error).partition(": ")
        raise ManifestError(message, field=field) from None
    if memory < MIN_MEMORY:
        raise ManifestError(
            f"expected at least 16MiB, got {entry['memory']!r}", field="resources.memory"
        )
    return Resources(cpus=float(entry.get("cpus", default.cpus)), memory=memory, disk=disk,
                     timeout=timeout)  # fmt: skip


def _test(
    index: int, entry: Mapping[str, Any], manifest: Manifest, package: Path | None
) -> TestCase:
    where = f"tests[{index}]"
    specs = {spec.name: spec for spec in manifest.inputs}
    inputs: dict[str, tuple[str, ...]] = {}
    for name, paths in entry["inputs"].items():
        if name not in specs:
            raise ManifestError(
                f"no data input is called {name!r}; the inputs are {', '.join(specs)}",
                field=f"{where}.inputs.{name}",
            )
        for i, path in enumerate(paths):
            _package_file(path, package, f"{where}.inputs.{name}[{i}]")
        inputs[name] = tuple(paths)
    for name, spec in specs.items():
        count = len(inputs.get(name, ()))
        if count < spec.min_count or (spec.max_count is not None and count > spec.max_count):
            most = "no maximum" if spec.max_count is None else f"at most {spec.max_count}"
            raise ManifestError(
                f"expected at least {spec.min_count} and {most} files, got {count}",
                field=f"{where}.inputs.{name}",
            )
    parameters = dict(entry.get("parameters", {}))
    _check_test_parameters(parameters, manifest, f"{where}.parameters")
    expect = {}
    for name, path in entry["expect"].items():
        field = f"{where}.expect.{name}"
        if not _relative(name):
            raise ManifestError("expected a file name inside the outputs folder", field=field)
        if not any(PurePosixPath(name).match(spec.pattern) for spec in manifest.outputs):
            patterns = ", ".join(spec.pattern for spec in manifest.outputs)
            raise ManifestError(f"no output's pattern ({patterns}) matches it", field=field)
        _package_file(path, package, field)
        expect[name] = path
    return TestCase(inputs=inputs, parameters=parameters, expect=expect)


def parameters_with_defaults(schema: Mapping[str, Any], given: Mapping[str, Any]) -> dict:
    """Parameters as a run receives them: the given ones, and defaults for the rest.

    Parameters
    ----------
    schema
        The manifest's JSON Schema of the parameters object.
    given
        The parameters the user gave.

    Returns
    -------
    dict
        ``given`` with every missing parameter that has a default filled in.
    """
    filled = {
        name: prop["default"]
        for name, prop in schema.get("properties", {}).items()
        if isinstance(prop, Mapping) and "default" in prop
    }
    return {**filled, **given}


def _check_test_parameters(parameters: dict, manifest: Manifest, field: str) -> None:
    schema = manifest.parameters
    try:
        jsonschema.validate(
            parameters_with_defaults(schema, parameters), schema, jsonschema.Draft202012Validator
        )
    except ValidationError as error:
        raise ManifestError(
            error.message, field=field_name([*field.split("."), *error.absolute_path])
        ) from None


def _relative(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return bool(parts) and not path.startswith("/") and ".." not in parts and "\\" not in path


def _package_file(path: str, package: Path | None, field: str) -> None:
    if not _relative(path):
        raise ManifestError(
            f"expected a relative path inside the package, got {path!r}", field=field
        )
    if package is not None and not (package / path).is_file():
        raise ManifestError(f"there is no file {path!r} in the package", field=field)
