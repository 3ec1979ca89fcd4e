"""algorithm.yaml: every mistake is a ManifestError naming its field and what it expects."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from nearline.algorithms import manifest_from_dict, manifest_to_process, parse_manifest
from nearline.algorithms._manifest import parse_duration, read_manifest
from nearline.errors import ConfigError, ManifestError

from .conftest import adder, adder_manifest

REQUIRED = ["id", "version", "title", "description", "command", "inputs", "outputs"]


def error_of(data, **kwargs) -> ManifestError:
    with pytest.raises(ManifestError) as caught:
        manifest_from_dict(data, **kwargs)
    return caught.value


def test_a_good_manifest_becomes_the_nouns_with_units_and_defaults():
    manifest = manifest_from_dict(adder_manifest(build=["make", "CC=gcc"]))
    assert (manifest.id, manifest.version, manifest.command) == (
        "adder",
        "1.0",
        ("python", "add.py"),
    )
    assert manifest.build == ("make", "CC=gcc")
    spec = manifest.inputs[0]
    assert (spec.name, spec.collection, spec.min_count, spec.max_count) == (
        "numbers",
        "numbers",
        1,
        5,
    )
    assert manifest.outputs[0].media_type == "text/plain"
    assert manifest.resources.memory == 1024**3
    assert manifest.resources.timeout == 120.0
    assert manifest.resources.disk == 10 * 1024**3  # the default
    assert manifest.tests[0].inputs == {"numbers": ("tests/a.txt", "tests/b.txt")}
    assert manifest.tests[0].expect == {"total.txt": "tests/total.txt"}
    assert manifest.output_collection == "adder"


@pytest.mark.parametrize("field", REQUIRED)
def test_each_required_field_missing_is_named(field):
    error = error_of(adder_manifest(**{field: None}))
    assert error.field == field
    assert "missing; expected" in str(error)
    assert str(error).startswith(f"algorithm.yaml: {field}: ")


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"version": 1.0}, "version", "quote it in YAML"),
        ({"id": "Has Spaces"}, "id", "lowercase letters"),
        ({"id": "x" * 65}, "id", "1 to 64"),
        ({"command": "python add.py"}, "command", "list of strings"),
        ({"command": []}, "command", "non-empty list"),
        ({"build": [""]}, "build[0]", "argv"),
        ({"title": 5}, "title", "a short title"),
        ({"inputs": [{"name": "n", "collection": "c", "max": "lots"}]}, "inputs[0].max", "or null"),
        ({"inputs": [{"name": "n", "collection": "c", "min": -1}]}, "inputs[0].min", "at least 0"),
        ({"inputs": [{"name": "n"}]}, "inputs[0].collection", "missing"),
        ({"inputs": []}, "inputs", "non-empty list"),
        (
            {"outputs": [{"name": "o", "media_type": "netcdf"}]},
            "outputs[0].media_type",
            "media type",
        ),
        ({"resources": {"cpus": 0}}, "resources.cpus", "greater than 0"),
        ({"resources": {"memory": "2 lots"}}, "resources.memory", "'512MiB'"),
        ({"resources": {"memory": "1KiB"}}, "resources.memory", "at least 16MiB"),
        ({"resources": {"timeout": "a fortnight"}}, "resources.timeout", "'30m'"),
        ({"resources": {"gpus": 1}}, "resources.gpus", "unknown field"),
        ({"colour": "blue"}, "colour", "unknown field; expected one of id, version"),
    ],
)
def test_wrong_values_name_the_field_and_what_it_expects(changes, field, words):
    error = error_of(adder_manifest(tests=None, **changes))
    assert error.field == field
    assert words in str(error)


def test_max_below_min_and_names_used_twice():
    error = error_of(
        adder_manifest(inputs=[{"name": "n", "collection": "c", "min": 3, "max": 2}], tests=None)
    )
    assert (error.field, "at least min (3)" in str(error)) == ("inputs[0].max", True)
    twice = [{"name": "o", "pattern": "*.a"}, {"name": "o", "pattern": "*.b"}]
    assert error_of(adder_manifest(outputs=twice, tests=None)).field == "outputs[1].name"


@pytest.mark.parametrize(
    ("parameters", "field", "words"),
    [
        (
            {"type": "object", "properties": {"x": {"type": "integer", "minimum": "zero"}}},
            "parameters.properties.x.minimum",
            "not a valid JSON Schema",
        ),
        ({"type": "array"}, "parameters.type", "of type object"),
        (
            {"type": "object", "properties": {"x": {"type": "wat"}}},
            "parameters.properties.x.type",
            "not a valid JSON Schema",
        ),
        (
            {"type": "object", "properties": {"x": {"type": "integer", "default": "ten"}}},
            "parameters.properties.x.default",
            "does not fit its own schema",
        ),
        (
            {"type": "object", "properties": {"numbers": {"type": "integer"}}},
            "parameters.properties.numbers",
            "already the name of a data input",
        ),
    ],
)
def test_a_bad_parameters_schema_is_named(parameters, field, words):
    error = error_of(adder_manifest(parameters=parameters, tests=None))
    assert error.field == field
    assert words in str(error)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("numpy>>1", "PEP 508"),
        ("not a requirement!", "PEP 508"),
        ("evil @ https://example.org/evil.whl", "names a URL"),
    ],
)
def test_bad_requirement_strings_are_refused(line, words):
    error = error_of(adder_manifest(requirements=["netCDF4>=1.6", line], tests=None))
    assert error.field == "requirements[1]"
    assert words in str(error)


def test_yaml_problems_are_manifest_errors_with_a_place():
    with pytest.raises(ManifestError, match="not valid YAML at line 2"):
        parse_manifest("id: x\n  version: [\n")
    with pytest.raises(ManifestError, match="YAML alias"):
        parse_manifest("a: &big [1, 2]\nb: *big\n")
    text = yaml.safe_dump(adder_manifest(tests=None))
    dated = text.replace("description: Sums the numbers", "description: 2012-01-01 #")
    with pytest.raises(ManifestError, match=r"description: YAML read 2012-01-01 as a date"):
        parse_manifest(dated)
    with pytest.raises(ManifestError, match=r"\(top\): expected a mapping"):
        parse_manifest("- just\n- a list\n")


def test_test_cases_must_name_known_inputs_in_range_and_files_of_the_package(tmp_path):
    package = adder(tmp_path / "p")
    assert read_manifest(package).tests[0].parameters == {"scale": 2}
    cases = {
        "tests[0].inputs.other": {"inputs": {"other": ["a"]}, "expect": {"total.txt": "x"}},
        "tests[0].inputs.numbers": {"inputs": {"numbers": []}, "expect": {"total.txt": "x"}},
        "tests[0].inputs.numbers[0]": {
            "inputs": {"numbers": ["../../etc/passwd"]},
            "expect": {"total.txt": "tests/a.txt"},
        },
        "tests[0].expect.total.csv": {
            "inputs": {"numbers": ["tests/a.txt"]},
            "expect": {"total.csv": "tests/a.txt"},
        },
        "tests[0].expect.total.txt": {
            "inputs": {"numbers": ["tests/a.txt"]},
            "expect": {"total.txt": "tests/nowhere"},
        },
        "tests[0].parameters.scale": {
            "inputs": {"numbers": ["tests/a.txt"]},
            "parameters": {"scale": "big"},
            "expect": {"total.txt": "tests/a.txt"},
        },
    }
    for field, case in cases.items():
        error = error_of(adder_manifest(tests=[case]), package=package)
        assert error.field == field, (field, str(error))


def test_a_missing_manifest_says_so(tmp_path):
    with pytest.raises(ManifestError, match=r"algorithm\.yaml is missing"):
        read_manifest(tmp_path)


def test_durations():
    assert parse_duration("90s") == 90
    assert parse_duration("30m") == 1800
    assert parse_duration("2h") == 7200
    assert parse_duration(12.5) == 12.5
    for bad in ("0", -1, "soon", True):
        with pytest.raises(ConfigError):
            parse_duration(bad)


def test_the_process_description_lists_data_inputs_and_each_parameter():
    parameters = {
        "type": "object",
        "required": ["scale", "label"],
        "properties": {"scale": {"type": "number", "default": 1}, "label": {"type": "string"}},
    }
    process = manifest_to_process(
        manifest_from_dict(adder_manifest(parameters=parameters, tests=None))
    )
    assert process["id"] == "adder"
    assert process["version"] == "1.0"
    assert process["jobControlOptions"] == ["sync-execute", "async-execute", "dismiss"]
    assert process["outputTransmission"] == ["reference"]
    assert list(process["inputs"]) == ["numbers", "scale", "label"]
    assert process["inputs"]["scale"]["minOccurs"] == 0  # it has a default
    assert process["inputs"]["label"]["minOccurs"] == 1
    assert process["inputs"]["label"]["schema"] == {"type": "string"}
    data = process["inputs"]["numbers"]
    assert data["nearline:granules"] == {"min": 1, "max": 5}
    validator = jsonschema.Draft202012Validator(data["schema"])
    good = [
        {"collections": ["numbers"], "bbox": [0, 0, 10, 10], "datetime": "2012-12-12/.."},
        {"ids": ["a", "b"]},
        {"bbox": [-10, -5, 10, 5]},
    ]
    bad = [
        {"ids": []},
        {"collections": ["other"]},
        {"bbox": [1, 2]},
        {"colour": "red"},
        {"ids": ["a"], "bbox": [0, 0, 1, 1]},
    ]
    assert [validator.is_valid(value) for value in good] == [True] * 3
    assert [validator.is_valid(value) for value in bad] == [False] * 5
    assert process["outputs"]["total"]["schema"]["contentMediaType"] == "text/plain"


def test_example_manifests_parse(tmp_path):
    from .example_data import EXAMPLES

    found = sorted(read_manifest(path.parent).id for path in EXAMPLES.glob("*/algorithm.yaml"))
    assert found == [
        "counts-histogram",
        "gac-quicklook",
        "modis-aerosol-geos5",
        "modis-cloud-geos5",
        "modis-lst-geos5",
        "modis-water-vapour-geos5",
    ]
    assert Path(EXAMPLES / "gac-quicklook" / "Makefile").is_file()
